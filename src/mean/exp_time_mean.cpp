// Alg 2 for d = 1 (card §2.9); see include/dpstats/mean/exp_time_mean.hpp.
#include "dpstats/mean/exp_time_mean.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/mechanisms/range.hpp"
#include "dpstats/privacy/budget.hpp"

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
                      "exp-time is a reference for tiny n only (card pitfall 4.14)",
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

Release<Vector> exp_time_mean(const ConstMatrixRef& X, const ExpTimeMeanOptions& o, Rng& rng) {
  check_epsilon(o.epsilon);
  check_delta_positive(o.delta);
  check_positive(o.sigma, "sigma");
  require(o.alpha > 0 && o.alpha < 1.0 / 6,
          fmt::format("alpha must be in (0, 1/6) for the 3alpha trimming, got {}", o.alpha));
  require(o.zeta > 0 && o.zeta < 1, fmt::format("zeta must be in (0, 1), got {}", o.zeta));
  require(o.resilience_threshold > 0,
          fmt::format("resilience_threshold must be > 0, got {}", o.resilience_threshold));
  require(o.grid >= 2 && o.grid <= (1 << 22),
          fmt::format("grid must be in [2, 2^22], got {}", o.grid));
  require(X.cols() == 1, fmt::format("exp-time is implemented for d = 1 only (the exponential "
                                     "mechanism over R^d is exponential in d), got d = {}",
                                     X.cols()));
  check_data(X);
  const std::int64_t n = X.rows();
  require(n >= 4, fmt::format("exp-time needs n >= 4 rows, got {}", n));
  const double nd = static_cast<double>(n);
  const double la = std::sqrt(std::log(1 / o.alpha));

  Release<Vector> r;
  r.seeded = rng.seeded();
  r.noise = o.noise;
  r.privacy.certified = o.noise == NoiseMode::secure && !o.window_resilience;
  r.diagnostics["reference_only"] = true;
  r.diagnostics["resilience"] = o.window_resilience ? "window (uncertified)" : "exact";

  RangeOptions ro;
  ro.epsilon = o.epsilon / 3;
  ro.delta = o.delta / 3;
  ro.sigma = o.sigma;
  ro.zeta = o.zeta;
  const double B = 8 * o.sigma * std::sqrt(std::log(nd / o.zeta));  // q_range's side for d = 1
  const LaplaceMechanism test(B / nd, o.epsilon / 3, 1, o.noise);     // R has sensitivity B/n
  ExponentialMechanismOptions em;
  em.epsilon = o.epsilon / 3;                       // D17
  em.sensitivity = 12 * la * o.sigma;               // of n·d(μ̂, S), Lemma H.12 (σ units)
  em.monotone = false;

  Budget budget(PrivacyLoss::approximate(o.epsilon, o.delta), Accountant::basic);
  budget.spend(q_range_entry(ro, 1, "q_range (eps/3, delta/3)"));
  budget.spend(test.ledger_entry("R(S) + Laplace (propose-test-release)"));
  LedgerEntry eme = exponential_mechanism_entry(em, "exponential mechanism on n d(mu, S)");
  // PTR: when R(S) > 3α√ln(1/α) the test passes with probability <= δ/3 (Lemma H.6 with the
  // n-check below), the remaining third of δ.
  eme.loss = PrivacyLoss::approximate(eme.loss.epsilon, o.delta / 3);
  budget.spend(eme);
  auto finish = [&](Release<Vector>& out) {
    const PrivacyLoss spent = budget.spent_epsilon_delta();
    out.privacy.epsilon = spent.epsilon;
    out.privacy.delta = spent.delta;
    out.ledger = budget.ledger();
  };
  auto abstain = [&](const std::string& why) {
    r.status = Status::abstained;
    r.diagnostics["reason"] = why;
    finish(r);
    return r;
  };
  // Lemma H.11's explicit sufficient n (public).
  const double n_min = 3 * B * std::log(3 / o.delta) / (o.epsilon * o.alpha * la);
  r.diagnostics["n_min"] = n_min;
  if (nd < n_min) return abstain(fmt::format("n = {} < 3B ln(3/delta)/(eps alpha sqrt(ln(1/alpha))) = {:.4g} (Lemma H.11)", n, n_min));
  const auto range = q_range(X, ro, rng);
  if (!range) return abstain("q_range found no populated bin");
  const double lo = range->centre[0] - B / 2, hi = range->centre[0] + B / 2;
  std::vector<double> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = std::clamp(X(i, 0), lo, hi);
  const double R = o.window_resilience ? resilience_window(x, o.alpha)
                                       : resilience_exact(x, o.alpha, o.max_subsets);
  const double R_noisy = test.apply(R, rng);
  r.diagnostics["R_noisy"] = R_noisy;
  if (R_noisy > o.resilience_threshold * o.alpha * la)
    return abstain("noisy resilience R above the threshold (propose-test-release)");
  const double m = trimmed_mean_3alpha(x, o.alpha);
  std::vector<double> quality(static_cast<std::size_t>(o.grid));
  const double step = (hi - lo) / (o.grid - 1);
  for (int k = 0; k < o.grid; ++k)
    quality[static_cast<std::size_t>(k)] = -nd * std::abs(m - (lo + k * step));
  const std::size_t pick = permute_and_flip(quality, em, rng);
  r.estimate = Vector::Constant(1, lo + static_cast<double>(pick) * step);
  r.diagnostics["grid_step"] = step;
  finish(r);
  return r;
}

}  // namespace dpstats
