// Selection mechanisms: permute-and-flip / Gumbel-max, AboveThreshold, the stability histogram,
// the private quantile and q_range — argument checks, ledger entries, and behaviour that holds with
// overwhelming probability (every probabilistic assertion below fails with probability < 1e-6 for a
// correct implementation; the bound is stated beside it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/above_threshold.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "dpstats/mechanisms/histogram.hpp"
#include "dpstats/mechanisms/quantile.hpp"
#include "dpstats/mechanisms/range.hpp"
#include "dpstats/privacy/composition.hpp"

namespace dpstats {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no exception thrown";
  return {};
}

#define EXPECT_MESSAGE_HAS(call, text)                              \
  do {                                                              \
    const std::string message_ = error_of([&] { call; });           \
    EXPECT_NE(message_.find(text), std::string::npos) << message_;  \
  } while (0)

ExponentialMechanismOptions em(double epsilon, double sensitivity = 1, bool monotone = false) {
  ExponentialMechanismOptions o;
  o.epsilon = epsilon;
  o.sensitivity = sensitivity;
  o.monotone = monotone;
  return o;
}

// ---------------------------------------------------------------- exponential mechanism

TEST(PermuteAndFlip, RejectsInvalidInputs) {
  SeededRng rng(1);
  const std::vector<double> q{0, 1, 2};
  const std::vector<double> empty;
  EXPECT_MESSAGE_HAS(permute_and_flip(empty, em(1), rng), "quality");
  const std::vector<double> with_nan{0, kNaN};
  EXPECT_MESSAGE_HAS(permute_and_flip(with_nan, em(1), rng), "quality[1]");
  const std::vector<double> with_inf{-kInf, 0};
  EXPECT_MESSAGE_HAS(permute_and_flip(with_inf, em(1), rng), "quality[0]");
  EXPECT_MESSAGE_HAS(permute_and_flip(q, em(0), rng), "epsilon");
  EXPECT_MESSAGE_HAS(permute_and_flip(q, em(-1), rng), "epsilon");
  EXPECT_MESSAGE_HAS(permute_and_flip(q, em(kNaN), rng), "epsilon");
  EXPECT_MESSAGE_HAS(permute_and_flip(q, em(1, 0), rng), "sensitivity");
  EXPECT_MESSAGE_HAS(permute_and_flip(q, em(1, kInf), rng), "sensitivity");
  EXPECT_MESSAGE_HAS(gumbel_max(empty, em(1), rng), "quality");
  EXPECT_MESSAGE_HAS(gumbel_max(with_nan, em(1), rng), "quality[1]");
  EXPECT_MESSAGE_HAS(gumbel_max(q, em(0), rng), "epsilon");
  EXPECT_MESSAGE_HAS(exponential_mechanism_entry(em(1, -2), "x"), "sensitivity");
}

TEST(PermuteAndFlip, SingleCandidateIsReturned) {
  SeededRng rng(2);
  const std::vector<double> q{-5};
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(permute_and_flip(q, em(1e-3), rng), 0u);
    EXPECT_EQ(gumbel_max(q, em(1e-3), rng), 0u);
  }
}

// P(pick i != argmax) <= p_i = exp(-ε gap / 2); with gap >= 0.2 and ε = 400: exp(-40) per draw.
TEST(PermuteAndFlip, PicksTheMaximumAsEpsilonGrows) {
  SeededRng rng(3);
  const std::vector<double> q{0, 1, 0.5, 1.2, -3};
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(permute_and_flip(q, em(400), rng), 3u);
    ASSERT_EQ(gumbel_max(q, em(400), rng), 3u);
  }
  // Frequency of the maximiser rises with ε. Exact P&F probabilities (enumerating the 120 orders):
  // 0.2016 at ε = 0.01, 0.3292 at ε = 1, 0.9319 at ε = 20. 4000 draws: sd <= 0.0075; every window
  // is >= 5 sd wide on each side.
  auto frequency = [&](double eps) {
    int hits = 0;
    for (int i = 0; i < 4000; ++i) hits += permute_and_flip(q, em(eps), rng) == 3u;
    return hits / 4000.0;
  };
  const double low = frequency(0.01), mid = frequency(1), high = frequency(20);
  EXPECT_GT(low, 0.168);
  EXPECT_LT(low, 0.235);
  EXPECT_GT(mid, 0.29);
  EXPECT_LT(mid, 0.37);
  EXPECT_GT(high, 0.91);
}

// A gap that overflows a double has acceptance probability exp(-inf) = 0.
TEST(PermuteAndFlip, OverflowingGapIsNeverAccepted) {
  SeededRng rng(4);
  const std::vector<double> q{-1e308, 1e308};
  for (int i = 0; i < 200; ++i) EXPECT_EQ(permute_and_flip(q, em(1e-6), rng), 1u);
}

TEST(PermuteAndFlip, SeededRunsRepeat) {
  const std::vector<double> q{0, 0.1, 0.2, 0.3, 0.2, 0.1};
  SeededRng a(77), b(77);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(permute_and_flip(q, em(1), a), permute_and_flip(q, em(1), b));
}

TEST(ExponentialMechanism, LedgerEntry) {
  const LedgerEntry general = exponential_mechanism_entry(em(0.5, 3), "pick");
  EXPECT_EQ(general.mechanism, "exponential");
  EXPECT_EQ(general.purpose, "pick");
  EXPECT_EQ(general.sensitivity, 3);
  EXPECT_DOUBLE_EQ(general.noise_scale, 2 * 3 / 0.5);
  EXPECT_EQ(general.loss.kind, LossKind::pure);
  EXPECT_EQ(general.loss.epsilon, 0.5);
  const LedgerEntry monotone = exponential_mechanism_entry(em(0.5, 3, true), "pick");
  EXPECT_DOUBLE_EQ(monotone.noise_scale, 3 / 0.5);
}

// ---------------------------------------------------------------- AboveThreshold

TEST(AboveThreshold, RejectsInvalidInputs) {
  SeededRng rng(5);
  EXPECT_MESSAGE_HAS(AboveThreshold(0, 0, 1, rng), "sensitivity");
  EXPECT_MESSAGE_HAS(AboveThreshold(0, 1, 0, rng), "epsilon");
  EXPECT_MESSAGE_HAS(AboveThreshold(0, 1, kInf, rng), "epsilon");
  EXPECT_MESSAGE_HAS(AboveThreshold(kNaN, 1, 1, rng), "threshold");
  AboveThreshold at(0, 1, 1, rng);
  EXPECT_MESSAGE_HAS(at.query(kNaN), "value");
  EXPECT_FALSE(at.halted());
}

// Noise scales 2 and 4: P(query(-1e6) is above) < exp(-1e5), P(query(1e6) is below) likewise.
TEST(AboveThreshold, HaltsAtTheFirstAboveAndRefusesFurtherQueries) {
  SeededRng rng(6);
  for (const bool monotone : {false, true}) {
    AboveThreshold at(10, 1, 1, rng, monotone);
    for (int i = 0; i < 50; ++i) ASSERT_FALSE(at.query(-1e6));
    EXPECT_FALSE(at.halted());
    EXPECT_TRUE(at.query(1e6));
    EXPECT_TRUE(at.halted());
    EXPECT_MESSAGE_HAS(at.query(-1e6), "halted");
    EXPECT_MESSAGE_HAS(at.query(1e6), "halted");
  }
}

TEST(AboveThreshold, LedgerEntryStatesTheLossAndQueryNoise) {
  SeededRng rng(7);
  const AboveThreshold general(0, 2, 0.5, rng);
  const LedgerEntry e = general.ledger_entry("first above");
  EXPECT_EQ(e.mechanism, "above_threshold");
  EXPECT_EQ(e.sensitivity, 2);
  EXPECT_EQ(e.loss.kind, LossKind::pure);
  EXPECT_EQ(e.loss.epsilon, 0.5);
  EXPECT_EQ(general.loss().epsilon, 0.5);
  // Query noise 4Δ/ε = 16, up to the lattice's rounding allowance (2^-20 relative, laplace.hpp).
  EXPECT_GE(e.noise_scale, 16);
  EXPECT_LE(e.noise_scale, 16 * (1 + 1e-5));
  const AboveThreshold monotone(0, 2, 0.5, rng, true);
  EXPECT_GE(monotone.ledger_entry("x").noise_scale, 8);
  EXPECT_LE(monotone.ledger_entry("x").noise_scale, 8 * (1 + 1e-5));
}

// ---------------------------------------------------------------- stability histogram

// P[Y >= m] for Y ~ DLap(t): r^m / (1 + r), r = exp(-1/t), m >= 1.
long double dlap_upper_tail(long double t, std::int64_t m) {
  const long double r = std::exp(-1.0L / t);
  if (m <= 0) return 1 - std::pow(r, static_cast<long double>(1 - m)) / (1 + r);
  return std::pow(r, static_cast<long double>(m)) / (1 + r);
}

TEST(StabilityHistogram, RejectsInvalidInputs) {
  SeededRng rng(8);
  const std::vector<std::int64_t> bins{1, 2, 2};
  const std::vector<std::int64_t> none;
  EXPECT_MESSAGE_HAS(stability_histogram(none, 1, 1e-6, Neighbouring::replace_one, rng), "bins");
  EXPECT_MESSAGE_HAS(stability_histogram(bins, 0, 1e-6, Neighbouring::replace_one, rng), "epsilon");
  EXPECT_MESSAGE_HAS(stability_histogram(bins, 1, 0, Neighbouring::replace_one, rng), "delta");
  EXPECT_MESSAGE_HAS(stability_histogram(bins, 1, 1, Neighbouring::replace_one, rng), "delta");
  EXPECT_MESSAGE_HAS(stability_histogram(bins, 1e-20, 1e-6, Neighbouring::replace_one, rng),
                     "epsilon");
  EXPECT_MESSAGE_HAS(stability_histogram_entry(1, -1, Neighbouring::add_remove, "x"), "delta");
}

TEST(StabilityHistogram, ScaleIsARationalJustAboveTheRequiredOne) {
  SeededRng rng(9);
  const std::vector<std::int64_t> bins{0};
  for (const double eps : {1e-9, 0.013, 0.3, 1.0, 7.0, 1e6}) {
    const auto r = stability_histogram(bins, eps, 1e-6, Neighbouring::replace_one, rng);
    EXPECT_GE(r.laplace_scale, 2 / eps) << eps;
    EXPECT_LE(r.laplace_scale, 2 / eps * (1 + 1e-12)) << eps;
    const auto a = stability_histogram(bins, eps, 1e-6, Neighbouring::add_remove, rng);
    EXPECT_GE(a.laplace_scale, 1 / eps) << eps;
    EXPECT_LE(a.laplace_scale, 1 / eps * (1 + 1e-12)) << eps;
  }
}

// tau is the smallest integer with P[1 + Y >= tau] <= δ/2 (independent long-double computation).
TEST(StabilityHistogram, ThresholdIsTheSmallestMeetingTheTailBound) {
  SeededRng rng(10);
  const std::vector<std::int64_t> bins{0};
  for (const double eps : {0.05, 0.5, 1.0, 3.0}) {
    for (const double delta : {1e-12, 1e-6, 0.01, 0.5}) {
      for (const auto rel : {Neighbouring::replace_one, Neighbouring::add_remove}) {
        const auto h = stability_histogram(bins, eps, delta, rel, rng);
        const auto tau = static_cast<std::int64_t>(h.threshold);
        ASSERT_EQ(static_cast<double>(tau), h.threshold);
        EXPECT_LE(dlap_upper_tail(h.laplace_scale, tau - 1), delta / 2.0L * (1 + 1e-12L))
            << eps << " " << delta;
        EXPECT_GT(dlap_upper_tail(h.laplace_scale, tau - 2), delta / 2.0L) << eps << " " << delta;
      }
    }
  }
}

// 1000 singleton bins at δ = 1e-10: P(any released) <= 1000 · δ/2 = 5e-8.
TEST(StabilityHistogram, SuppressesSingletons) {
  SeededRng rng(11);
  std::vector<std::int64_t> bins(1000);
  for (std::size_t i = 0; i < bins.size(); ++i) bins[i] = static_cast<std::int64_t>(i) * 7919 - 3'000'000;
  const auto h = stability_histogram(bins, 1, 1e-10, Neighbouring::replace_one, rng);
  EXPECT_TRUE(h.noisy_counts.empty());
}

// Counts 5000 and 3000 against tau ≈ 47 and noise scale 2: P(|Y| > 200) < e^-100 per bin.
TEST(StabilityHistogram, ReleasesLargeBinsOnlyAndHandlesUnboundedIndices) {
  SeededRng rng(12);
  constexpr std::int64_t kFar = -1'000'000'000'000'000'000;
  std::vector<std::int64_t> bins;
  bins.insert(bins.end(), 5000, 7);
  bins.insert(bins.end(), 3000, kFar);
  bins.insert(bins.end(), 3000, std::numeric_limits<std::int64_t>::max());
  bins.push_back(42);
  const auto h = stability_histogram(bins, 1, 1e-10, Neighbouring::replace_one, rng);
  ASSERT_EQ(h.noisy_counts.size(), 3u);
  EXPECT_NEAR(h.noisy_counts.at(7), 5000, 200);
  EXPECT_NEAR(h.noisy_counts.at(kFar), 3000, 200);
  EXPECT_NEAR(h.noisy_counts.at(std::numeric_limits<std::int64_t>::max()), 3000, 200);
  EXPECT_EQ(h.noisy_counts.count(42), 0u);
  for (const auto& [bin, noisy] : h.noisy_counts) {
    EXPECT_GE(noisy, h.threshold);
    EXPECT_EQ(noisy, std::floor(noisy));  // integer counts plus integer noise
  }
}

TEST(StabilityHistogram, SeededRunsRepeatAndEntryMatches) {
  std::vector<std::int64_t> bins;
  for (int i = 0; i < 3000; ++i) bins.push_back(i % 7);
  SeededRng a(13), b(13);
  const auto ha = stability_histogram(bins, 0.7, 1e-6, Neighbouring::add_remove, a);
  const auto hb = stability_histogram(bins, 0.7, 1e-6, Neighbouring::add_remove, b);
  EXPECT_EQ(ha.noisy_counts, hb.noisy_counts);
  const LedgerEntry e = stability_histogram_entry(0.7, 1e-6, Neighbouring::add_remove, "bins");
  EXPECT_EQ(e.mechanism, "stability_histogram");
  EXPECT_EQ(e.sensitivity, 1);
  EXPECT_EQ(e.noise_scale, ha.laplace_scale);
  EXPECT_EQ(e.loss.kind, LossKind::approximate);
  EXPECT_EQ(e.loss.epsilon, 0.7);
  EXPECT_EQ(e.loss.delta, 1e-6);
  EXPECT_EQ(stability_histogram_entry(0.7, 1e-6, Neighbouring::replace_one, "b").sensitivity, 2);
}

// ---------------------------------------------------------------- private quantile

QuantileOptions quantile_options(double q, double lower, double upper, std::size_t m, double eps) {
  QuantileOptions o;
  o.q = q;
  o.lower = lower;
  o.upper = upper;
  o.candidates = m;
  o.epsilon = eps;
  return o;
}

TEST(PrivateQuantile, RejectsInvalidInputs) {
  SeededRng rng(14);
  const std::vector<double> v{1, 2, 3};
  const std::vector<double> empty;
  EXPECT_MESSAGE_HAS(private_quantile(v, quantile_options(-0.1, 0, 1, 8, 1), rng), "q must");
  EXPECT_MESSAGE_HAS(private_quantile(v, quantile_options(1.5, 0, 1, 8, 1), rng), "q must");
  EXPECT_MESSAGE_HAS(private_quantile(v, quantile_options(kNaN, 0, 1, 8, 1), rng), "q must");
  EXPECT_MESSAGE_HAS(private_quantile(v, quantile_options(0.5, 1, 1, 8, 1), rng), "lower");
  EXPECT_MESSAGE_HAS(private_quantile(v, quantile_options(0.5, -kInf, 1, 8, 1), rng), "lower");
  EXPECT_MESSAGE_HAS(private_quantile(v, quantile_options(0.5, -1e308, 1e308, 8, 1), rng),
                     "upper - lower");
  EXPECT_MESSAGE_HAS(private_quantile(v, quantile_options(0.5, 0, 1, 1, 1), rng), "candidates");
  EXPECT_MESSAGE_HAS(private_quantile(v, quantile_options(0.5, 0, 1, 8, 0), rng), "epsilon");
  EXPECT_MESSAGE_HAS(private_quantile(empty, quantile_options(0.5, 0, 1, 8, 1), rng), "values");
  const std::vector<double> bad{1, kInf};
  EXPECT_MESSAGE_HAS(private_quantile(bad, quantile_options(0.5, 0, 1, 8, 1), rng), "index 1");
}

TEST(PrivateQuantile, ReturnsAGridPointInsideTheRange) {
  SeededRng rng(15);
  const std::vector<double> v{-1e300, 3, 4, 1e300, 5.5};
  const auto o = quantile_options(0.3, -2, 6, 9, 0.5);  // grid step 1
  for (int i = 0; i < 200; ++i) {
    const double x = private_quantile(v, o, rng);
    EXPECT_GE(x, -2);
    EXPECT_LE(x, 6);
    EXPECT_EQ(x, std::round(x)) << x;
  }
}

// At ε = 1000 the selection is the best grid point with probability >= 1 - 64 e^-500.
TEST(PrivateQuantile, LargeEpsilonFindsTheExactQuantileOnTheGrid) {
  SeededRng rng(16);
  std::vector<double> v;
  for (int i = 0; i < 100; ++i) v.push_back(i + 0.5);  // 0.5, 1.5, ..., 99.5
  // #{x < c} = 25 exactly for c in (24.5, 25.5]: the grid point 25 (step 1 on [0, 100]).
  EXPECT_EQ(private_quantile(v, quantile_options(0.25, 0, 100, 101, 1000), rng), 25);
  EXPECT_EQ(private_quantile(v, quantile_options(1.0, 0, 100, 101, 1000), rng), 100);
  EXPECT_EQ(private_quantile(v, quantile_options(0.0, 0, 100, 101, 1000), rng), 0);
  // Clamping: values above the range count as `upper`, which is below no grid point.
  std::vector<double> high(50, 1e9);
  high.insert(high.end(), v.begin(), v.begin() + 50);  // 0.5 .. 49.5
  EXPECT_EQ(private_quantile(high, quantile_options(0.5, 0, 10, 11, 1000), rng), 10);
}

TEST(PrivateQuantile, LedgerEntry) {
  const LedgerEntry e = private_quantile_entry(quantile_options(0.5, 0, 1, 8, 0.25), "median");
  EXPECT_EQ(e.mechanism, "private_quantile");
  EXPECT_EQ(e.purpose, "median");
  EXPECT_EQ(e.sensitivity, 1);
  EXPECT_DOUBLE_EQ(e.noise_scale, 8);
  EXPECT_EQ(e.loss.kind, LossKind::pure);
  EXPECT_EQ(e.loss.epsilon, 0.25);
  EXPECT_MESSAGE_HAS(private_quantile_entry(quantile_options(0.5, 0, 1, 0, 1), "m"), "candidates");
}

// ---------------------------------------------------------------- q_range

RangeOptions range_options(double eps, double delta, bool paper = false) {
  RangeOptions o;
  o.epsilon = eps;
  o.delta = delta;
  o.paper_cap = paper;
  return o;
}

TEST(QRange, RejectsInvalidInputs) {
  SeededRng rng(17);
  RowMatrix X = RowMatrix::Zero(10, 2);
  EXPECT_MESSAGE_HAS(q_range(X, range_options(0, 1e-6), rng), "epsilon");
  EXPECT_MESSAGE_HAS(q_range(X, range_options(1, 0), rng), "delta");
  auto o = range_options(1, 1e-6);
  o.sigma = 0;
  EXPECT_MESSAGE_HAS(q_range(X, o, rng), "sigma");
  o = range_options(1, 1e-6);
  o.zeta = 1;
  EXPECT_MESSAGE_HAS(q_range(X, o, rng), "zeta");
  X(3, 1) = kNaN;
  EXPECT_MESSAGE_HAS(q_range(X, range_options(1, 1e-6), rng), "row 4, column 2");
  RowMatrix empty(0, 3);
  EXPECT_MESSAGE_HAS(q_range(empty, range_options(1, 1e-6), rng), "got 3 column(s) and no row");
  EXPECT_MESSAGE_HAS(q_range_coordinate_budget(range_options(1, 1e-6), 0), "d must");
}

// The one q_range (the robust means' front end calls it with a cached budget and threads): the
// same centres and draws whatever the thread count, and the same as the plain entry point.
TEST(QRange, ThreadsAndTheCachedBudgetGiveTheSameRelease) {
  RowMatrix X(40000, 3);
  SeededRng data(5);
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = 0; j < X.cols(); ++j)
      X(i, j) = 3.0 + ((j == 2 && i % 10 == 0) ? 1e7 : 1.0) * data.uniform01();  // j = 2: hashed
  const auto o = range_options(1, 1e-6);
  const EpsilonDelta per = q_range_coordinate_budget(o, 3);
  SeededRng a(9), b(9), c(9);
  const auto plain = q_range(X, o, a);
  const auto one = q_range(X, o, per, b, 1);
  const auto four = q_range(X, o, per, c, 4);
  ASSERT_TRUE(plain && one && four);
  EXPECT_EQ(plain->centre, one->centre);
  EXPECT_EQ(one->centre, four->centre);
  EXPECT_EQ(b.next_u64(), c.next_u64());  // the same number of draws
  EXPECT_EQ(plain->entry.mechanism, "composition");  // the d histograms' composed loss
  ASSERT_EQ(plain->entry.blocks.size(), 1u);
  EXPECT_EQ(plain->entry.blocks[0][0].mechanism, "stability_histogram");
}

// The bins (bin, count) of every coordinate, by the definition: ℓ = ceil(x / 2σ) - 1 clamped to
// ±2^62, counted in a map.
RangeBins brute_bins(const RowMatrix& X, double sigma) {
  RangeBins out(static_cast<std::size_t>(X.cols()));
  for (Eigen::Index j = 0; j < X.cols(); ++j) {
    std::map<std::int64_t, std::int64_t> m;
    for (Eigen::Index i = 0; i < X.rows(); ++i)
      ++m[static_cast<std::int64_t>(std::clamp(std::ceil(X(i, j) / (2 * sigma)) - 1, -0x1p62, 0x1p62))];
    out[static_cast<std::size_t>(j)].assign(m.begin(), m.end());
  }
  return out;
}

// q_range_bins counts the bins near zero by comparisons and the others apart, or (most values
// far from zero) in two passes: either way the exact bins of the definition, for any thread
// count, on a matrix and on a view. Column 0: scale units with values on the bins' edges (±2k,
// -0.0) and a few far ones (±1e9, ±1e300); column 1: near 1e9 (every value outside the window);
// column 2: a heavy tail (1 value in 20 far out).
TEST(QRange, BinsAreTheDefinitionsExactCounts) {
  RowMatrix X(30000, 3);
  SeededRng data(23);
  const double far[] = {1e9, -1e9, 1e300, -1e300};
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const double u = data.uniform01();
    X(i, 0) = i % 7 == 0 ? 2.0 * static_cast<double>(i % 9) - 8 : 16 * u - 8;
    if (i % 5000 == 1) X(i, 0) = far[(i / 5000) % 4];
    if (i == 3) X(i, 0) = -0.0;
    X(i, 1) = 1e9 + 50 * u;
    X(i, 2) = i % 20 == 0 ? 1e4 * u : u - 0.5;
  }
  const RowMatrix near = X.leftCols(1);  // column 0 alone: the window path
  for (double sigma : {1.0, 3.0, 0.3, 1e-3}) {
    for (int threads : {1, 3}) {
      EXPECT_EQ(q_range_bins(near, sigma, threads), brute_bins(near, sigma)) << sigma;
      EXPECT_EQ(q_range_bins(X, sigma, threads), brute_bins(X, sigma)) << sigma;
    }
  }
  const Vector shift = Vector::Constant(3, 0.5), mult = Vector::Constant(3, 2.0);
  const AffineRows view(X, shift, mult, 1e150);
  EXPECT_EQ(q_range_bins(view, 1.0, 3), brute_bins(view.materialise(), 1.0));
  const AffineRows near_view(near, shift.head(1), mult.head(1), 1e150);
  EXPECT_EQ(q_range_bins(near_view, 1.0, 3), brute_bins(near_view.materialise(), 1.0));
  RowMatrix bad = near;
  bad(20000, 0) = kInf;  // found by the window pass's check
  EXPECT_MESSAGE_HAS(q_range_bins(bad, 1.0, 3), "row 20001, column 1");
}

TEST(QRange, CoordinateBudgetPaperAndBestRule) {
  const auto paper = q_range_coordinate_budget(range_options(1, 1e-6, true), 5);
  EXPECT_DOUBLE_EQ(paper.epsilon, 0.9 / (2 * std::sqrt(2 * 5 * std::log(2 / 1e-6))));
  EXPECT_DOUBLE_EQ(paper.delta, 1e-6 / 10);
  const auto best = q_range_coordinate_budget(range_options(1, 1e-6), 5);
  EXPECT_DOUBLE_EQ(best.delta, 1e-6 / 10);
  EXPECT_GT(best.epsilon, paper.epsilon);
  // The best rule's d-fold composition meets the target.
  const auto composed = best_composition(best.epsilon, best.delta, 5, 1e-6 / 2);
  EXPECT_LE(composed.epsilon, 1 * (1 + 1e-9));
  EXPECT_LE(composed.delta, 1e-6 * (1 + 1e-9));
  // Pitfall 4.3: at ε = 20 the cap wastes most of the budget.
  const auto paper20 = q_range_coordinate_budget(range_options(20, 1e-6, true), 5);
  const auto best20 = q_range_coordinate_budget(range_options(20, 1e-6), 5);
  EXPECT_EQ(paper20.epsilon, paper.epsilon);
  EXPECT_GT(best20.epsilon, 10 * paper20.epsilon);
}

TEST(QRange, EntryFoldsTheHistogramsIntoTheComposedLoss) {
  // One composite (counted once, at the composed loss) of the 5 histograms' own entry (count 5):
  // the histograms' noise is the part's, so a recount of the draws finds it.
  const auto best = q_range_entry(range_options(1, 1e-6), 5);
  EXPECT_EQ(best.mechanism, "composition");
  EXPECT_EQ(best.count, 1);
  EXPECT_EQ(best.loss.kind, LossKind::approximate);
  EXPECT_EQ(best.loss.epsilon, 1);
  EXPECT_EQ(best.loss.delta, 1e-6);
  ASSERT_EQ(best.blocks.size(), 1u);
  ASSERT_EQ(best.blocks[0].size(), 1u);
  const LedgerEntry& h = best.blocks[0][0];
  EXPECT_EQ(h.mechanism, "stability_histogram");
  EXPECT_EQ(h.count, 5);
  EXPECT_EQ(h.sensitivity, 2);
  const double eps_per = q_range_coordinate_budget(range_options(1, 1e-6), 5).epsilon;
  EXPECT_GE(h.noise_scale, 2 / eps_per);
  EXPECT_LE(h.noise_scale, 2 / eps_per * (1 + 1e-12));
  EXPECT_NE(best.purpose.find("5 histograms"), std::string::npos) << best.purpose;
  const auto paper = q_range_entry(range_options(3, 1e-6, true), 5);
  EXPECT_EQ(paper.loss.epsilon, 0.9);  // Lemma G.13 with the cap
  EXPECT_NE(paper.purpose.find("G.13"), std::string::npos) << paper.purpose;
}

// n = 10 records per coordinate against a threshold above 100: P(release) < e^-40 per bin.
TEST(QRange, AbstainsOnTinyN) {
  SeededRng rng(18);
  RowMatrix X = RowMatrix::Zero(10, 3);
  for (int s = 0; s < 20; ++s) EXPECT_FALSE(q_range(X, range_options(1, 1e-6), rng).has_value());
}

// ε = 10^6 on one coordinate: the noise is 0 except with probability < 1e-100, so the two bins of
// 50 tie exactly and the smaller ℓ wins; the centre is the bin centre 2σ(ℓ + ½) (D13), not 2σℓ.
TEST(QRange, TiesGoToTheSmallerBinAndTheCentreIsTheBinCentre) {
  SeededRng rng(19);
  RowMatrix X(100, 1);
  for (int i = 0; i < 50; ++i) {
    X(i, 0) = 7.0;      // bin ℓ = 3: (6, 8]
    X(50 + i, 0) = 1.0;  // bin ℓ = 0: (0, 2]
  }
  auto o = range_options(1e6, 1e-6);
  o.zeta = 0.5;
  const auto r = q_range(X, o, rng);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->centre(0), 1.0);
  EXPECT_DOUBLE_EQ(r->side, 8 * std::sqrt(std::log(100 / 0.5)));
  // Bin edges belong to the left bin: 2.0 is in (0, 2], so ℓ = 0 still has the most records.
  X(0, 0) = 2.0;
  const auto edge = q_range(X, o, rng);
  ASSERT_TRUE(edge.has_value());
  EXPECT_EQ(edge->centre(0), 1.0);
  // With σ = 0.5 the bins are (ℓ, ℓ + 1]: 7.0 is in ℓ = 6, 1.0 in ℓ = 0, 2.0 in ℓ = 1.
  // 49 in ℓ = 6, 50 in ℓ = 0, 1 in ℓ = 1: the centre of (0, 1] is 0.5.
  o.sigma = 0.5;
  const auto narrow = q_range(X, o, rng);
  ASSERT_TRUE(narrow.has_value());
  EXPECT_EQ(narrow->centre(0), 0.5);
}

}  // namespace
}  // namespace dpstats
