// Boosting by disjoint parts and median-of-means selection (mean/boosted.hpp; docs/proofs/mean.md
// "Boosting").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/boosted.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/random/partition.hpp"
#include "dpstats/seam.hpp"
#include "ranks_internal.hpp"

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
                                NoiseMode noise, Rng& rng, Budget* caller, Communicator* comm) {
  validate(target);
  Communicator& ranks = comm_or_single(comm);
  const Eigen::Index d = X.cols();
  const std::int64_t n = mean_detail::guarded_rows(
      X, ranks, fingerprint_of("boosting", BoostingFacts{base_method, parts, target, noise}, d),
      "boosting's options and column count", 1);
  require(parts >= 1 && n >= 2 * static_cast<std::int64_t>(parts),
          "boosting needs n >= 2 x parts = {} rows ({} parts), got n = {}", 2 * parts, parts, n);
  ReleaseBudget account(target.loss(), Accountant::basic, caller);
  const std::string purpose = fmt::format(
      "boosting: {} on {} disjoint random parts, each at the target (parallel composition; the "
      "selection is post-processing)", base_method, parts);
  // The composite's blocks are the parts' own ledgers, counted by the parts' accountant.
  std::optional<ParallelComposite> blocks;
  all_or_none(ranks, [&] {
    account.charge(ParallelComposite(target.loss(), Accountant::basic, purpose).planned());
  });
  // A uniformly random partition (data-independent), drawn on rank 0 for the global rows; each
  // part holds its rows in row order (rank order over ranks).
  const std::vector<int> part_of = on_root(ranks, [&] { return random_parts(n, parts, rng); });
  const std::int64_t offset = ranks.size() > 1 ? shard_rows(ranks, X.rows()).offset : 0;
  const auto rows = rows_of_parts(part_of, parts, offset, X.rows());
  std::vector<std::optional<Vector>> estimates;
  SealFacts facts(true);  // docs/proofs/mean.md §8; false when a part is not certified
  facts.noise = noise;
  int abstained = 0;
  RowMatrix Y;
  for (const auto& mine : rows) {
    Y.resize(static_cast<Eigen::Index>(mine.size()), d);
    for (std::size_t k = 0; k < mine.size(); ++k) Y.row(static_cast<Eigen::Index>(k)) = X.row(mine[k]);
    // Each part must itself be within the target, or parallel composition does not give it: its
    // plan is charged on a Budget of the target before it draws.
    Budget part_budget(target.loss(), Accountant::basic);
    Release<Vector> part;
    try {
      part = run_part(Y, rng, &part_budget);
    } catch (const BudgetExceeded&) {
      throw std::logic_error("boosting: a part's plan exceeds the target");
    }
    if (part.privacy.accountant) {
      if (!blocks) blocks.emplace(target.loss(), *part.privacy.accountant, purpose);
      blocks->add_block(part.ledger);
    }
    facts.certified = facts.certified && part.privacy.certified;
    if (part.status == Status::ok) estimates.emplace_back(part.estimate);
    else estimates.emplace_back(std::nullopt), ++abstained;
  }
  if (blocks) account.claim(blocks->entry());
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
