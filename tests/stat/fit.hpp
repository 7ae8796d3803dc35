// Goodness-of-fit helpers for the sampler tests: chi-square on binned counts with the exact
// chi-square tail, Kolmogorov-Smirnov with the Dvoretzky-Kiefer-Wolfowitz-Massart bound, and a
// normal two-sided threshold for counts. Every threshold is set so that a correct sampler fails
// with probability below kAlpha.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <numeric>
#include <vector>

namespace dpstats::fit {

constexpr double kAlpha = 1e-6;

// Regularized upper incomplete gamma Q(a, x) (series below a + 1, continued fraction above;
// Numerical Recipes §6.2), accurate to ~1e-14 relative for the arguments used here.
inline double gamma_q(double a, double x) {
  if (x <= 0) return 1;
  const double log_prefix = a * std::log(x) - x - std::lgamma(a);
  if (x < a + 1) {
    double term = 1 / a, sum = term;
    for (int n = 1; n < 100000 && std::abs(term) > 1e-17 * std::abs(sum); ++n) {
      term *= x / (a + n);
      sum += term;
    }
    return 1 - sum * std::exp(log_prefix);
  }
  double b = x + 1 - a, c = 1 / 1e-300, d = 1 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::abs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < 1e-16) break;
  }
  return std::exp(log_prefix) * h;
}

inline double chi2_survival(double x, int df) { return gamma_q(df / 2.0, x / 2.0); }

// The x with P(chi2_df > x) = alpha, by bisection.
inline double chi2_critical(int df, double alpha = kAlpha) {
  double lo = 0, hi = df + 100.0 * std::sqrt(2.0 * df) + 100;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (chi2_survival(mid, df) > alpha ? lo : hi) = mid;
  }
  return hi;
}

inline double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// The z with P(|N(0,1)| > z) = alpha.
inline double normal_two_sided(double alpha = kAlpha) {
  double lo = 0, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (std::erfc(mid / std::sqrt(2.0)) > alpha ? lo : hi) = mid;
  }
  return hi;
}

// Pearson's statistic for counts against probabilities summing to 1.
inline double chi_square(const std::vector<long>& observed, const std::vector<double>& p) {
  const double n = static_cast<double>(std::accumulate(observed.begin(), observed.end(), 0L));
  double stat = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double e = n * p[i];
    stat += (observed[i] - e) * (observed[i] - e) / e;
  }
  return stat;
}

struct Verdict {
  double statistic;
  double threshold;
  bool passes() const { return statistic <= threshold; }
};

// Chi-square test of counts against bin probabilities (df = bins - 1). Bins should have expected
// counts of at least a few dozen for the chi-square tail to apply.
inline Verdict chi_square_test(const std::vector<long>& observed, const std::vector<double>& p) {
  return {chi_square(observed, p), chi2_critical(static_cast<int>(p.size()) - 1)};
}

// Counts of samples in bins delimited by `edges` (bin i is [edges[i-1], edges[i]), with
// (-inf, edges[0]) first and [edges.back(), inf) last).
inline std::vector<long> bin_counts(const std::vector<double>& samples,
                                    const std::vector<double>& edges) {
  std::vector<long> counts(edges.size() + 1, 0);
  for (const double x : samples) {
    ++counts[std::upper_bound(edges.begin(), edges.end(), x) - edges.begin()];
  }
  return counts;
}

// Kolmogorov-Smirnov distance sup |F_n - F| against a model CDF. The DKW inequality with
// Massart's constant, P(sup |F_n - F| > e) <= 2 exp(-2 n e^2), holds for every F (discrete
// included), so e = sqrt(log(2/alpha) / (2n)) is a rigorous threshold.
inline Verdict ks_test(std::vector<double> samples, const std::function<double(double)>& cdf,
                       double alpha = kAlpha) {
  std::sort(samples.begin(), samples.end());
  const double n = static_cast<double>(samples.size());
  double d = 0;
  std::size_t run_start = 0;  // first index of the current run of equal values
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (i > 0 && samples[i] != samples[i - 1]) run_start = i;
    // Ties: F_n jumps once per distinct value; compare just before and after the jump.
    if (i + 1 < samples.size() && samples[i + 1] == samples[i]) continue;
    const double f = cdf(samples[i]);
    d = std::max({d, std::abs((i + 1) / n - f), std::abs(run_start / n - f)});
  }
  return {d, std::sqrt(std::log(2 / alpha) / (2 * n))};
}

// Edges splitting a continuous model into `bins` equiprobable bins, from its quantile function.
inline std::vector<double> equiprobable_edges(int bins,
                                              const std::function<double(double)>& quantile) {
  std::vector<double> edges;
  for (int i = 1; i < bins; ++i) edges.push_back(quantile(static_cast<double>(i) / bins));
  return edges;
}

inline double laplace_cdf(double x, double mean, double b) {
  const double z = (x - mean) / b;
  return z < 0 ? 0.5 * std::exp(z) : 1 - 0.5 * std::exp(-z);
}
inline double laplace_quantile(double p, double mean, double b) {
  return p < 0.5 ? mean + b * std::log(2 * p) : mean - b * std::log(2 * (1 - p));
}
inline double normal_quantile(double p, double mean, double sigma) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return mean + sigma * (lo + hi) / 2;
}

}  // namespace dpstats::fit
