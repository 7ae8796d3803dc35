// Alg 2 for d = 1 (docs/proofs/mean.md); see include/dpstats/mean/exp_time_mean.hpp.
#include "dpstats/mean/exp_time_mean.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/mechanisms/range.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/seam.hpp"
#include "robust_mean_core.hpp"

namespace dpstats {
namespace {

struct Sizes {
  std::size_t keep, removed, inner;  // |S'|, |S| − |S'|, α|S'| (points T drops)
};
Sizes sizes(std::size_t n, double alpha) {
  const auto removed = static_cast<std::size_t>(std::ceil(2 * alpha * static_cast<double>(n)));
  require(removed < n, fmt::format("alpha = {} leaves no points for n = {}", alpha, n));
  const std::size_t keep = n - removed;
  const auto inner = static_cast<std::size_t>(std::floor(alpha * static_cast<double>(keep)));
  return {keep, removed, std::min(inner, keep - 1)};
}

// max_{T ⊂ S', |T| = |S'| − k} |μ(T) − μ(S')| for sorted S' given its sum and tail sums.
double spread(double sum, double bottom, double top, std::size_t m, std::size_t k) {
  if (k == 0) return 0;
  const double mu = sum / static_cast<double>(m);
  const double kk = static_cast<double>(k);
  return kk / static_cast<double>(m - k) * std::max(mu - bottom / kk, top / kk - mu);
}

double log_binomial(double n, double k) {
  return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1);
}

}  // namespace

double resilience_exact(std::span<const double> x, double alpha, double max_subsets) {
  require(alpha > 0 && alpha < 0.5, fmt::format("alpha must be in (0, 0.5), got {}", alpha));
  const std::size_t n = x.size();
  require(n >= 2, "resilience_exact needs at least 2 points");
  const Sizes z = sizes(n, alpha);
  const double count = std::exp(log_binomial(double(n), double(z.removed)));
  require(count <= max_subsets,
          fmt::format("exact R(S) enumerates C({}, {}) = {:.3g} subsets, more than {:.3g}: "
                      "exp-time is a reference for tiny n only (docs/errata.md)",
                      n, z.removed, count, max_subsets));
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  std::vector<std::size_t> drop(z.removed);
  std::iota(drop.begin(), drop.end(), std::size_t{0});
  std::vector<double> kept(z.keep);
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    std::size_t di = 0, ki = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (di < drop.size() && drop[di] == i) {
        ++di;
      } else {
        kept[ki++] = s[i];
      }
    }
    const double sum = std::accumulate(kept.begin(), kept.end(), 0.0);
    const double bottom = std::accumulate(kept.begin(), kept.begin() + z.inner, 0.0);
    const double top = std::accumulate(kept.end() - z.inner, kept.end(), 0.0);
    best = std::min(best, spread(sum, bottom, top, z.keep, z.inner));
    // Next combination of `removed` indices out of n (lexicographic).
    std::size_t r = z.removed;
    while (r > 0 && drop[r - 1] == n - z.removed + r - 1) --r;
    if (r == 0) break;
    ++drop[r - 1];
    for (std::size_t j = r; j < z.removed; ++j) drop[j] = drop[j - 1] + 1;
  }
  return best;
}

double resilience_window(std::span<const double> x, double alpha) {
  require(alpha > 0 && alpha < 0.5, fmt::format("alpha must be in (0, 0.5), got {}", alpha));
  const std::size_t n = x.size();
  require(n >= 2, "resilience_window needs at least 2 points");
  const Sizes z = sizes(n, alpha);
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  std::vector<double> pre(n + 1, 0.0);
  for (std::size_t i = 0; i < n; ++i) pre[i + 1] = pre[i] + s[i];
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i + z.keep <= n; ++i) {
    const double sum = pre[i + z.keep] - pre[i];
    const double bottom = pre[i + z.inner] - pre[i];
    const double top = pre[i + z.keep] - pre[i + z.keep - z.inner];
    best = std::min(best, spread(sum, bottom, top, z.keep, z.inner));
  }
  return best;
}

double trimmed_mean_3alpha(std::span<const double> x, double alpha) {
  const std::size_t n = x.size();
  const auto c = static_cast<std::size_t>(std::ceil(3 * alpha * static_cast<double>(n)));
  require(2 * c < n, fmt::format("the 3alpha-trimmed mean needs n > 2 ceil(3 alpha n); n = {}", n));
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  return std::accumulate(s.begin() + c, s.end() - c, 0.0) / static_cast<double>(n - 2 * c);
}

namespace {

void validate(const ExpTimeMeanOptions& o, Eigen::Index d) {
  validate(o.privacy, DeltaRule::positive);
  validate(o.run);
  require(o.alpha > 0 && o.alpha < 1.0 / 6,
          fmt::format("alpha must be in (0, 1/6) for the 3alpha trimming, got {}", o.alpha));
  require(o.failure_probability > 0 && o.failure_probability < 1,
          fmt::format("failure_probability must be in (0, 1), got {}", o.failure_probability));
  require(o.resilience_threshold > 0,
          fmt::format("resilience_threshold must be > 0, got {}", o.resilience_threshold));
  require(o.grid >= 2 && o.grid <= (1 << 22),
          fmt::format("grid must be in [2, 2^22], got {}", o.grid));
  require(d == 1, fmt::format("exp-time is implemented for d = 1 only (the exponential "
                              "mechanism over R^d is exponential in d), got d = {}",
                              d));
  mean_detail::check_units_options(o.scale, o.scale_share, 0, d);
}

// Every mechanism from public values (scale units): the units' share of ε (scale absent), then
// q_range, the PTR test and the exponential mechanism at a third of the rest each.
struct ExpTimePlan {
  mean_detail::AuxPlan aux;
  RangeOptions range;
  double B = 0;  // q_range's side for d = 1
  std::optional<LaplaceMechanism> test;
  ExponentialMechanismOptions em;
  Ledger ledger(double delta) const {
    Ledger all = aux.entries;
    all.push_back(q_range_entry(range, 1, "q_range (eps/3, delta/3)"));
    // PTR: the test's epsilon and the selection's, and when R(S) > 3α√ln(1/α) the test passes
    // with probability <= δ/3 (Lemma H.6 with the n-check): the remaining third of δ.
    const LedgerEntry t = test->ledger_entry("R(S) + Laplace (propose-test-release)");
    const LedgerEntry e = exponential_mechanism_entry(em, "exponential mechanism on n d(mu, S)");
    all.push_back(proved_entry(PrivacyLoss::approximate(t.loss.epsilon + e.loss.epsilon, delta / 3),
                               "Lemma H.6, docs/proofs/mean.md §6",
                               "propose-test-release: the resilience test and the selection",
                               {t, e}));
    return all;
  }
};

ExpTimePlan plan_exp_time(std::int64_t n, const ExpTimeMeanOptions& o) {
  ExpTimePlan p;
  p.aux = mean_detail::plan_aux(mean_detail::aux_share(o.scale.has_value(), o.scale_share, 0),
                                 false, o.privacy.epsilon, 1, o.alpha, o.run.noise);
  const double epsilon = p.aux.remaining;
  const double nd = static_cast<double>(n), la = std::sqrt(std::log(1 / o.alpha));
  p.range.epsilon = epsilon / 3;
  p.range.delta = o.privacy.delta / 3;
  p.range.sigma = 1;
  p.range.zeta = o.failure_probability;
  p.B = 8 * std::sqrt(std::log(nd / o.failure_probability));
  p.test.emplace(p.B / nd, epsilon / 3, 1, o.run.noise);  // R has sensitivity B/n
  p.em.epsilon = epsilon / 3;                               // D17
  p.em.sensitivity = 12 * la;  // of n·d(μ̂, S), Lemma H.12 (scale units)
  p.em.monotone = false;
  return p;
}

// Steps 3-4 on the clipped data x (scale units): PTR, then the exponential mechanism on a grid.
std::optional<double> ptr_and_select(const std::vector<double>& x, double lo, double hi,
                                     const ExpTimePlan& p, const ExpTimeMeanOptions& o, Rng& rng,
                                     nlohmann::json& diag, std::string& why) {
  const double nd = static_cast<double>(x.size()), la = std::sqrt(std::log(1 / o.alpha));
  const double R = o.window_resilience ? resilience_window(x, o.alpha)
                                       : resilience_exact(x, o.alpha, o.max_subsets);
  const double R_noisy = p.test->apply(R, rng);
  diag["R_noisy"] = R_noisy;
  if (R_noisy > o.resilience_threshold * o.alpha * la) {
    why = "noisy resilience R above the threshold (propose-test-release)";
    return std::nullopt;
  }
  const double m = trimmed_mean_3alpha(x, o.alpha);
  std::vector<double> quality(static_cast<std::size_t>(o.grid));
  const double step = (hi - lo) / (o.grid - 1);
  for (int k = 0; k < o.grid; ++k)
    quality[static_cast<std::size_t>(k)] = -nd * std::abs(m - (lo + k * step));
  const std::size_t pick = permute_and_flip(quality, p.em, rng);
  diag["grid_step_scale_units"] = step;
  return lo + static_cast<double>(pick) * step;
}

}  // namespace

// validate -> plan -> charge -> n-check -> (units) -> range -> PTR -> selection -> seal.
Release<Vector> exp_time_mean(const ConstMatrixRef& X, const ExpTimeMeanOptions& given, Rng& rng,
                              Budget* budget) {
  validate(given, X.cols());
  ExpTimeMeanOptions o = given;
  check_data(X);
  const std::int64_t n = X.rows();
  require(n >= 4, fmt::format("exp-time needs n >= 4 rows, got {}", n));
  if (!o.window_resilience) {  // public (n, α): refused before anything is drawn
    const Sizes z = sizes(static_cast<std::size_t>(n), o.alpha);
    const double count = std::exp(log_binomial(double(n), double(z.removed)));
    require(count <= o.max_subsets,
            fmt::format("exact R(S) enumerates C({}, {}) = {:.3g} subsets, more than {:.3g}: "
                        "exp-time is a reference for tiny n only (docs/errata.md)",
                        n, z.removed, count, o.max_subsets));
  }
  nlohmann::json diag = {{"reference_only", true},
                         {"resilience", o.window_resilience ? "window (uncertified)" : "exact"}};
  if (!o.scale) {  // the units' share: given, or planned from n and the target
    const mean_detail::ShareChoice share = mean_detail::resolve_share(
        o, [&](const ExpTimeMeanOptions& at) {
          return mean_detail::robust_units_plan(n, 1, at, false);
        });
    diag["scale_share"] = share.stated;
    if (share.abstain)
      return mean_detail::abstain_before_charging(o.privacy, Accountant::basic, o.run.noise,
                                                   budget, rng, *share.abstain, diag);
  }
  const ExpTimePlan p = plan_exp_time(n, o);
  ReleaseBudget account(o.privacy.loss(), Accountant::basic, budget);
  account.charge(p.ledger(o.privacy.delta));
  SealFacts facts(!o.window_resilience);
  facts.noise = o.run.noise;
  auto abstain = [&](std::string why) {
    facts.abstained = std::move(why);
    return seal(Vector{}, account, facts, rng, diag);
  };
  // Lemma H.11's explicit sufficient n (public; scale units, so B is free of the scale).
  const double la = std::sqrt(std::log(1 / o.alpha));
  const double n_min = 3 * p.B * std::log(3 / o.privacy.delta) / (3 * p.em.epsilon * o.alpha * la);
  diag["n_min"] = n_min;
  if (static_cast<double>(n) < n_min)
    return abstain(fmt::format(
        "n = {} < 3B ln(3/delta)/(eps alpha sqrt(ln(1/alpha))) = {:.4g} (Lemma H.11)", n, n_min));
  const auto units = mean_detail::units_step(X, p.aux, o.scale, o.alpha, 4, 1, account, rng,
                                              diag, facts.abstained);
  if (!units) return seal(Vector{}, account, facts, rng, diag);
  if (auto why = mean_detail::tail_check(*units, mean_detail::CleanModel::sub_gaussian, o.alpha))
    return abstain(*why);
  const RowMatrix Z = to_units(X, *units);
  const auto range = q_range(Z, p.range, rng);
  if (!range) return abstain("q_range found no populated bin");
  if (auto why = range_beyond_reason(range->centre, 1.0)) return abstain(*why);
  const double lo = range->centre[0] - p.B / 2, hi = range->centre[0] + p.B / 2;
  std::vector<double> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = std::clamp(Z(i, 0), lo, hi);
  std::string why;
  const auto z = ptr_and_select(x, lo, hi, p, o, rng, diag, why);
  if (!z) return abstain(why);
  return seal(from_units(Vector::Constant(1, *z), *units), account, facts, rng, diag);
}

}  // namespace dpstats
