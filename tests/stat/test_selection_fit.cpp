// Goodness of fit of the selection mechanisms (design.md §6): seeded, with acceptance regions set
// from the known distributions so that a correct implementation fails with probability < 1e-6, and
// each test also checks (from the same formulas) that the broken variants named beside it — a
// factor 2 in ε, the wrong sensitivity factor, half the noise — would be rejected almost surely.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "dpstats/mechanisms/above_threshold.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "dpstats/mechanisms/histogram.hpp"
#include "dpstats/mechanisms/quantile.hpp"
#include "dpstats/mechanisms/range.hpp"

namespace dpstats {
namespace {

// Upper 1e-6 quantiles of chi-square with df degrees of freedom (scipy.stats.chi2.isf(1e-6, df)).
double chi2_critical(int df) {
  static const double table[] = {0,       23.9281, 27.6310, 30.6648, 33.3768, 35.8882, 38.2583,
                                 40.5218, 42.7009, 44.8109, 46.8630, 48.8656, 50.8228};
  return table[df];
}
// Two-sided 1e-6 normal quantile (scipy.stats.norm.isf(0.5e-6)).
constexpr double kZ = 4.8916;

double chi_square(const std::vector<long>& observed, const std::vector<double>& p) {
  const double n = static_cast<double>(std::accumulate(observed.begin(), observed.end(), 0L));
  double stat = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double e = n * p[i];
    stat += (observed[i] - e) * (observed[i] - e) / e;
  }
  return stat;
}

// The expected chi-square statistic when samples come from `actual` but are tested against `model`
// (the non-centrality N Σ (a - m)^2 / m): how surely a broken variant is caught.
double noncentrality(double n, const std::vector<double>& actual, const std::vector<double>& model) {
  double s = 0;
  for (std::size_t i = 0; i < model.size(); ++i) s += (actual[i] - model[i]) * (actual[i] - model[i]) / model[i];
  return n * s;
}

// Exact output distribution of permute-and-flip: average over all visiting orders of
// p_i · Π_{j before i} (1 - p_j), with p_i = exp(-ε (q* - q_i) / (c Δ)).
std::vector<double> permute_and_flip_distribution(const std::vector<double>& q, double eps, double c) {
  const double q_star = *std::max_element(q.begin(), q.end());
  std::vector<double> p(q.size()), out(q.size(), 0);
  for (std::size_t i = 0; i < q.size(); ++i) p[i] = std::exp(-eps * (q_star - q[i]) / c);
  std::vector<std::size_t> order(q.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  double orders = 0;
  do {
    double none_yet = 1;
    for (const std::size_t j : order) {
      out[j] += none_yet * p[j];
      none_yet *= 1 - p[j];
    }
    orders += 1;
  } while (std::next_permutation(order.begin(), order.end()));
  for (double& x : out) x /= orders;
  return out;
}

std::vector<double> softmax(const std::vector<double>& q, double eps, double c) {
  std::vector<double> w(q.size());
  const double m = *std::max_element(q.begin(), q.end());
  for (std::size_t i = 0; i < q.size(); ++i) w[i] = std::exp(eps * (q[i] - m) / c);
  const double s = std::accumulate(w.begin(), w.end(), 0.0);
  for (double& x : w) x /= s;
  return w;
}

const std::vector<double> kQuality{0, -0.5, -1, -2, -3.5};

ExponentialMechanismOptions em(double epsilon, bool monotone) {
  ExponentialMechanismOptions o;
  o.epsilon = epsilon;
  o.sensitivity = 1;
  o.monotone = monotone;
  return o;
}

TEST(SelectionFit, PermuteAndFlipMatchesItsExactDistribution) {
  constexpr long kDraws = 200'000;
  const double eps = 1.5;
  for (const bool monotone : {false, true}) {
    const double c = monotone ? 1 : 2;
    const auto model = permute_and_flip_distribution(kQuality, eps, c);
    // Broken variants: the exponential mechanism's weights, a factor 2 in ε, the wrong factor c.
    EXPECT_GT(noncentrality(kDraws, softmax(kQuality, eps, c), model), 5 * chi2_critical(4));
    EXPECT_GT(noncentrality(kDraws, permute_and_flip_distribution(kQuality, 2 * eps, c), model),
              5 * chi2_critical(4));
    EXPECT_GT(noncentrality(kDraws, permute_and_flip_distribution(kQuality, eps, 3 - c), model),
              5 * chi2_critical(4));
    SeededRng rng(monotone ? 101 : 100);
    std::vector<long> counts(kQuality.size(), 0);
    for (long i = 0; i < kDraws; ++i) ++counts[permute_and_flip(kQuality, em(eps, monotone), rng)];
    EXPECT_LT(chi_square(counts, model), chi2_critical(4)) << "monotone = " << monotone;
  }
}

// Gumbel-max is the exponential mechanism: P(i) ∝ exp(ε q_i / (c Δ)).
TEST(SelectionFit, GumbelMaxMatchesExponentialMechanismWeights) {
  constexpr long kDraws = 200'000;
  const double eps = 1.5;
  for (const bool monotone : {false, true}) {
    const double c = monotone ? 1 : 2;
    const auto model = softmax(kQuality, eps, c);
    EXPECT_GT(noncentrality(kDraws, softmax(kQuality, 2 * eps, c), model), 5 * chi2_critical(4));
    SeededRng rng(monotone ? 103 : 102);
    std::vector<long> counts(kQuality.size(), 0);
    for (long i = 0; i < kDraws; ++i) ++counts[gumbel_max(kQuality, em(eps, monotone), rng)];
    EXPECT_LT(chi_square(counts, model), chi2_critical(4)) << "monotone = " << monotone;
  }
}

// P[above] for one query at threshold + a: P[ν - ρ >= -a] with ρ ~ Lap(b1), ν ~ Lap(b2).
// For b1 != b2, P[ν - ρ > a] = (b1² e^{-a/b1} - b2² e^{-a/b2}) / (2 (b1² - b2²)), a >= 0;
// for b1 = b2 = b it is e^{-a/b} (2 + a/b) / 4. The lattice makes these exact up to ~2^-20.
double above_probability(double a, double b1, double b2) {
  const double tail = b1 == b2 ? std::exp(-a / b1) * (2 + a / b1) / 4
                               : (b1 * b1 * std::exp(-a / b1) - b2 * b2 * std::exp(-a / b2)) /
                                     (2 * (b1 * b1 - b2 * b2));
  return 1 - tail;
}

// One query at threshold + a: P[above] = above_probability(a, 2Δ/ε, 4Δ/ε) (monotone: 2Δ/ε).
TEST(SelectionFit, AboveThresholdNoiseScales) {
  constexpr long kTrials = 100'000;
  const double delta_q = 1.5, eps = 0.8, threshold = 10, a = 3;
  for (const bool monotone : {false, true}) {
    const double b1 = 2 * delta_q / eps, b2 = (monotone ? 2 : 4) * delta_q / eps;
    const double p = above_probability(a, b1, b2);
    const double sd = std::sqrt(p * (1 - p) / kTrials);
    // Half the noise on either part moves p by > 10 sd.
    EXPECT_GT(std::fabs(above_probability(a, b1 / 2, b2) - p), 10 * sd);
    EXPECT_GT(std::fabs(above_probability(a, b1, b2 / 2) - p), 10 * sd);
    SeededRng rng(monotone ? 105 : 104);
    long above = 0;
    for (long i = 0; i < kTrials; ++i) {
      AboveThreshold at(threshold, delta_q, eps, rng, monotone);
      above += at.query(threshold + a);
    }
    EXPECT_LT(std::fabs(static_cast<double>(above) / kTrials - p), kZ * sd)
        << "monotone = " << monotone << ", expected " << p;
  }
}

// The threshold noise ρ is drawn once and shared by all queries: two queries at the threshold give
// "below, then above" with probability E[F(ρ)(1 - F(ρ))] = b2/(2(b1 + b2)) - b2/(4(b2 + 2 b1)),
// F the cdf of the query noise; a fresh ρ per query would give 1/4.
TEST(SelectionFit, AboveThresholdSharesTheThresholdNoise) {
  constexpr long kTrials = 100'000;
  const double delta_q = 1, eps = 1, threshold = -4;
  for (const bool monotone : {false, true}) {
    const double b1 = 2 * delta_q / eps, b2 = (monotone ? 2 : 4) * delta_q / eps;
    const double p = b2 / (2 * (b1 + b2)) - b2 / (4 * (b2 + 2 * b1));
    const double sd = std::sqrt(p * (1 - p) / kTrials);
    EXPECT_GT(std::fabs(0.25 - p), 10 * sd);
    SeededRng rng(monotone ? 107 : 106);
    long below_then_above = 0;
    for (long i = 0; i < kTrials; ++i) {
      AboveThreshold at(threshold, delta_q, eps, rng, monotone);
      if (!at.query(threshold)) below_then_above += at.query(threshold);
    }
    EXPECT_LT(std::fabs(static_cast<double>(below_then_above) / kTrials - p), kZ * sd)
        << "monotone = " << monotone << ", expected " << p;
  }
}

// P(Y = y) = (1 - r)/(1 + r) r^{|y|}, r = e^{-1/t}.
double dlap_pmf(double t, long y) {
  const double r = std::exp(-1 / t);
  return (1 - r) / (1 + r) * std::pow(r, std::labs(y));
}
// P(Y >= m), m >= 1.
double dlap_tail(double t, long m) {
  const double r = std::exp(-1 / t);
  return std::pow(r, m) / (1 + r);
}

// Singleton bins are released at the rate of the discrete-Laplace tail P[Y >= tau - 1] (docs/proofs/user-level.md); δ = 0.2 makes the rate measurable (≈ 0.084 at ε = 1).
TEST(SelectionFit, HistogramSingletonReleaseRate) {
  constexpr long kBins = 100'000;
  std::vector<std::int64_t> bins(kBins);
  std::iota(bins.begin(), bins.end(), std::int64_t{-50'000});
  for (const auto rel : {Neighbouring::replace_one, Neighbouring::add_remove}) {
    SeededRng rng(rel == Neighbouring::replace_one ? 108 : 109);
    const auto h = stability_histogram(bins, 1, 0.2, rel, rng);
    const long m = static_cast<long>(h.threshold) - 1;
    const double p = dlap_tail(h.laplace_scale, m);
    EXPECT_LE(p, 0.1 * (1 + 1e-12));
    const double sd = std::sqrt(kBins * p * (1 - p));
    // Half the noise (scale t/2, its own threshold) would release at a rate > 5 sd away.
    const double t_half = h.laplace_scale / 2;
    long m_half = 1;
    while (dlap_tail(t_half, m_half) > 0.1) ++m_half;
    EXPECT_GT(std::fabs(kBins * dlap_tail(t_half, m_half) - kBins * p), 5 * sd);
    EXPECT_LT(std::fabs(static_cast<double>(h.noisy_counts.size()) - kBins * p), kZ * sd)
        << "expected " << kBins * p;
  }
}

// Large bins are always released, and their noise Y = noisy - count follows DLap(t): chi-square
// over the cells y <= -6, -5..5, y >= 6 (t = 2 at ε = 1 under replace-one).
TEST(SelectionFit, HistogramNoiseOnLargeBinsIsDiscreteLaplace) {
  constexpr long kBins = 20'000, kCount = 100;
  std::vector<std::int64_t> bins;
  bins.reserve(kBins * kCount);
  for (long b = 0; b < kBins; ++b) bins.insert(bins.end(), kCount, 3 * b + 1'000'000'000'000);
  SeededRng rng(110);
  const auto h = stability_histogram(bins, 1, 1e-9, Neighbouring::replace_one, rng);
  ASSERT_EQ(h.noisy_counts.size(), static_cast<std::size_t>(kBins));  // P(drop) < kBins e^-30
  const double t = h.laplace_scale;
  std::vector<double> model(13);
  model[0] = dlap_tail(t, 6);  // y <= -6, by symmetry
  for (long y = -5; y <= 5; ++y) model[static_cast<std::size_t>(y + 6)] = dlap_pmf(t, y);
  model[12] = dlap_tail(t, 6);
  std::vector<long> counts(13, 0);
  for (const auto& [bin, noisy] : h.noisy_counts) {
    const long y = std::clamp(static_cast<long>(noisy) - kCount, -6L, 6L);
    ++counts[static_cast<std::size_t>(y + 6)];
  }
  // Half the noise (t/2) would be caught: expected statistic far above the critical value.
  std::vector<double> half(13);
  half[0] = half[12] = dlap_tail(t / 2, 6);
  for (long y = -5; y <= 5; ++y) half[static_cast<std::size_t>(y + 6)] = dlap_pmf(t / 2, y);
  EXPECT_GT(noncentrality(kBins, half, model), 5 * chi2_critical(12));
  EXPECT_LT(chi_square(counts, model), chi2_critical(12));
}

// Median and 0.9-quantile of N(0, 1), n = 10^4, ε = 1, 1024 candidates on [-10, 10] (step ≈ 0.02).
// P&F outputs a candidate whose quality gap is >= s with probability <= 1024 e^{-ε s / 2}: < 1e-10
// per run for s = 60 ranks. The best candidate is within half a step of the target (<= 39 ranks at
// the median, <= 17 at q = 0.9), so the output is within ~100 ranks of q n: ~0.025 at the median
// (density 0.40) and ~0.045 at q = 0.9 (density 0.18), against bounds of 0.05 and 0.1; a uniform
// choice on the grid would miss them almost always.
TEST(SelectionFit, PrivateQuantileLandsNearTheTruth) {
  std::mt19937_64 gen(111);
  std::normal_distribution<double> normal(0, 1);
  SeededRng rng(112);
  for (int run = 0; run < 20; ++run) {
    std::vector<double> x(10'000);
    for (double& v : x) v = normal(gen);
    std::vector<double> sorted = x;
    std::sort(sorted.begin(), sorted.end());
    for (const double q : {0.5, 0.9}) {
      QuantileOptions o;
      o.q = q;
      o.lower = -10;
      o.upper = 10;
      o.candidates = 1024;
      o.epsilon = 1;
      const double truth = sorted[static_cast<std::size_t>(q * 10'000)];
      const double estimate = private_quantile(x, o, rng);
      EXPECT_LT(std::fabs(estimate - truth), q == 0.5 ? 0.05 : 0.1) << "run " << run << " q " << q;
    }
  }
}

// Card §6 item 4 at CI size: N(μ, I_5), n = 10^4, (ε, δ) = (1, 1e-6): |x̄_j - μ_j| <= 4σ for all j
// and all clean points inside x̄ ± B, also with 5% of the points in an adjacent-bin spike. The
// centre misses only if a bin two or more away beats the mode's bin: impossible up to the noise
// (scale ~10 against count gaps in the thousands).
TEST(SelectionFit, QRangeCentresNearTheMean) {
  const Eigen::VectorXd mu = (Eigen::VectorXd(5) << 1e3, -1e5, 0, 0.99, -3.3).finished();
  std::mt19937_64 gen(113);
  std::normal_distribution<double> normal(0, 1);
  SeededRng rng(114);
  RangeOptions o;
  o.epsilon = 1;
  o.delta = 1e-6;
  for (const bool spike : {false, true}) {
    for (int run = 0; run < 10; ++run) {
      RowMatrix X(10'000, 5);
      for (Eigen::Index i = 0; i < X.rows(); ++i)
        for (Eigen::Index j = 0; j < 5; ++j) X(i, j) = mu(j) + normal(gen);
      if (spike) {
        for (Eigen::Index i = 0; i < 500; ++i) X.row(i) = (mu.array() + 2.0).transpose();
      }
      const auto r = q_range(X, o, rng);
      ASSERT_TRUE(r.has_value()) << "run " << run;
      for (Eigen::Index j = 0; j < 5; ++j) {
        EXPECT_LE(std::fabs(r->centre(j) - mu(j)), 4) << "run " << run << " coordinate " << j;
      }
      const Eigen::Index first_clean = spike ? 500 : 0;
      for (Eigen::Index i = first_clean; i < X.rows(); ++i) {
        ASSERT_LE(((X.row(i).transpose() - r->centre).array().abs()).maxCoeff(), r->side)
            << "run " << run << " row " << i;
      }
    }
  }
}

}  // namespace
}  // namespace dpstats
