// Boosting by disjoint parts and median-of-means selection (mean/boosted.hpp; docs/proofs/mean.md
// "Boosting").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "dpstats/error.hpp"
#include "dpstats/mean/boosted.hpp"
#include "dpstats/seam.hpp"

namespace dpstats {

double boost_failure_bound(int m, double p) {
  require(m >= 1, "boosting: parts must be >= 1, got {}", m);
  require(p > 0 && p < 1, "boosting: the part success probability must be in (0, 1), got {}", p);
  double total = 0;
  for (int i = 0; 2 * i <= m - 1; ++i) {
    const double log_term = std::lgamma(m + 1.0) - std::lgamma(i + 1.0) - std::lgamma(m - i + 1.0) +
                            i * std::log(p) + (m - i) * std::log1p(-p);
    total += std::exp(log_term);
  }
  return std::min(1.0, total);
}

int boost_parts(double zeta, double part_success) {
  require(zeta > 0 && zeta < 1, "boost_zeta must be in (0, 1), got {}", zeta);
  require(part_success > 0.5 && part_success < 1,
          "boosting: the part success probability must be in (1/2, 1), got {}", part_success);
  for (int m = 1; m <= 999; m += 2)
    if (boost_failure_bound(m, part_success) <= zeta) return m;
  throw InvalidArgument(fmt::format(
      "boost_zeta = {} needs more than 999 parts at part success probability {}", zeta,
      part_success));
}

std::optional<std::size_t> boost_select(const std::vector<std::optional<Vector>>& est,
                                        double* radius) {
  const std::size_t m = est.size();
  const std::size_t need = m / 2 + 1;  // a strict majority of the m parts
  std::optional<std::size_t> best;
  double best_r = INFINITY;
  std::vector<double> dist;
  for (std::size_t j = 0; j < m; ++j) {
    if (!est[j]) continue;
    dist.clear();
    for (std::size_t l = 0; l < m; ++l)
      if (est[l]) dist.push_back((*est[j] - *est[l]).norm());
    if (dist.size() < need) return std::nullopt;  // the same count for every j
    std::nth_element(dist.begin(), dist.begin() + static_cast<std::ptrdiff_t>(need - 1), dist.end());
    const double r = dist[need - 1];
    if (r < best_r) best_r = r, best = j;
  }
  if (best && radius) *radius = best_r;
  return best;
}

Release<Vector> boosted_release(const ConstMatrixRef& X, const PrivacyTarget& target, int parts,
                                const std::string& base_method, const BoostPartRunner& run_part,
                                NoiseMode noise, Rng& rng, Budget* caller) {
  validate(target);
  check_data(X);
  const Eigen::Index n = X.rows(), d = X.cols();
  require(parts >= 1 && n >= 2 * static_cast<Eigen::Index>(parts),
          "boosting needs n >= 2 x parts = {} rows ({} parts), got n = {}", 2 * parts, parts, n);
  ReleaseBudget account(target.loss(), Accountant::basic, caller);
  LedgerEntry e;
  e.mechanism = "parallel_composition";
  e.purpose = fmt::format(
      "boosting: {} on {} disjoint random parts, each at the target (parallel composition; the "
      "selection is post-processing)", base_method, parts);
  e.loss = target.loss();
  account.charge(e);
  // A uniformly random partition (data-independent): Fisher–Yates, then contiguous slices.
  std::vector<Eigen::Index> perm(static_cast<std::size_t>(n));
  std::iota(perm.begin(), perm.end(), Eigen::Index{0});
  for (Eigen::Index i = n - 1; i > 0; --i)
    std::swap(perm[i], perm[rng.uniform_below(static_cast<std::uint64_t>(i) + 1)]);
  std::vector<std::optional<Vector>> estimates;
  SealFacts facts;
  facts.noise = noise;
  int abstained = 0;
  RowMatrix Y;
  for (int l = 0; l < parts; ++l) {
    const Eigen::Index b = n * l / parts, end = n * (l + 1) / parts;
    Y.resize(end - b, d);
    for (Eigen::Index r = b; r < end; ++r) Y.row(r - b) = X.row(perm[static_cast<std::size_t>(r)]);
    const Release<Vector> part = run_part(Y, rng);
    // Each part must itself be within the target, or parallel composition does not give it.
    if (part.privacy.epsilon > target.epsilon || part.privacy.delta > target.delta)
      throw std::logic_error("boosting: a part's release exceeds the target");
    facts.certified = facts.certified && part.privacy.certified;
    if (part.status == Status::ok) estimates.emplace_back(part.estimate);
    else estimates.emplace_back(std::nullopt), ++abstained;
  }
  double radius = 0;
  const auto j = boost_select(estimates, &radius);
  nlohmann::json diag = {{"boost_parts", parts},
                         {"boost_part_rows", n / parts},
                         {"boost_parts_abstained", abstained},
                         {"boost_part_success_assumed", kBoostPartSuccess},
                         {"boost_failure_bound", boost_failure_bound(parts, kBoostPartSuccess)}};
  if (!j) {
    facts.abstained = fmt::format(
        "boosting: only {} of the {} parts returned an estimate, no strict majority",
        parts - abstained, parts);
    return seal(Vector{}, account, facts, rng, std::move(diag));
  }
  diag["boost_selected_part"] = *j;
  diag["boost_selection_radius"] = radius;
  return seal(Vector(*estimates[*j]), account, facts, rng, std::move(diag));
}

}  // namespace dpstats
