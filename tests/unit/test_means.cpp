// Means: the exact clipped sum, the bounded mean and DP Mean (PRIME docs/proofs/mean.md).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "dpstats/synthetic/shifted_cluster.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/bounded_mean.hpp"
#include "dpstats/mean/clipped_sum.hpp"
#include "dpstats/mean/dp_mean.hpp"
#include "dpstats/mean/mean_method.hpp"
#include "dpstats/mean/methods.hpp"
#include "../guarantee.hpp"

using namespace dpstats;

namespace {

RowMatrix gaussian_data(std::int64_t n, std::int64_t d, double mean, std::uint64_t seed) {
  SeededRng rng(seed);
  RowMatrix X(n, d);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < d; ++j) X(i, j) = mean + standard_normal(rng);
  return X;
}

}  // namespace

// The registry's names are MeanMethod's, in order: run_mean parses a method once and dispatches
// on the enum, so a registry line without its enum value (or the reverse) would be unreachable.
TEST(MeanMethods, RegistryNamesAreTheEnumsNames) {
  EXPECT_EQ(method_names(mean_methods()), enum_names<MeanMethod>());
  EXPECT_EQ(default_mean_method(true), "robust");
  EXPECT_EQ(default_mean_method(false), "bounded");
  EXPECT_THROW(parse_enum<MeanMethod>("Prime"), InvalidArgument);
}

TEST(ClippedSum, QuantumKeepsSumsExactDoubles) {
  EXPECT_EQ(sum_quantum(1), std::ldexp(1.0, 40));
  EXPECT_EQ(sum_quantum(1000000), std::ldexp(1.0, 33));  // 2^20 > 10^6 > 2^19: 53 - 20 = 33
  for (std::int64_t n : {1LL, 7LL, 1000LL, 1LL << 20, (1LL << 20) + 1, 123456789LL}) {
    EXPECT_LE(static_cast<double>(n) * sum_quantum(n), std::ldexp(1.0, 53)) << n;
  }
  EXPECT_THROW(sum_quantum(0), InvalidArgument);
}

TEST(ClippedSum, MatchesTheClippedMean) {
  const RowMatrix X = gaussian_data(5000, 3, 0.0, 1);
  const QuantisedSum qs = quantised_clipped_sum(X, Vector::Constant(3, -1.0), 2.0);
  const Vector mean = qs.to_mean(qs.sums, X.rows());
  const Vector exact = X.array().max(-1.0).min(1.0).matrix().colwise().mean();
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(mean[j], exact[j], 2.0 / qs.quantum + 1e-15);
}

// Replacing one row by any other row moves every coordinate's sum by at most Q, exactly: the
// property the noise calibration relies on (floating-point sums do not have it).
TEST(ClippedSum, ReplacingOneRowMovesEachSumByAtMostTheQuantum) {
  RowMatrix X = gaussian_data(2001, 4, 0.3, 2);
  const Vector lower = Vector::Constant(4, -3.0);
  const QuantisedSum base = quantised_clipped_sum(X, lower, 6.0);
  const double extremes[] = {-1e300, -3.0, -2.9999999999, 0.0, 1e-300, 2.9999999, 3.0, 1e300};
  for (double v : extremes) {
    for (Eigen::Index i : {Eigen::Index{0}, Eigen::Index{1000}, Eigen::Index{2000}}) {
      RowMatrix Y = X;
      Y.row(i).setConstant(v);
      const QuantisedSum other = quantised_clipped_sum(Y, lower, 6.0);
      for (int j = 0; j < 4; ++j) {
        EXPECT_LE(std::abs(other.sums[j] - base.sums[j]), base.quantum);
        EXPECT_EQ(other.sums[j], std::floor(other.sums[j]));  // integers
      }
    }
  }
}

TEST(ClippedSum, ThreadsGiveTheSameExactSums) {
  const RowMatrix X = gaussian_data(300000, 5, 0.0, 3);
  const Vector lower = Vector::Constant(5, -2.0);
  const QuantisedSum one = quantised_clipped_sum(X, lower, 4.0, 1);
  const QuantisedSum two = quantised_clipped_sum(X, lower, 4.0, 2);
  EXPECT_EQ(one.sums, two.sums);
}

TEST(ClippedSum, RejectsNaNAndInfInTheSamePass) {
  RowMatrix X = RowMatrix::Zero(200000, 3);
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), inf, -inf}) {
    X(123456, 2) = bad;
    for (int threads : {1, 2}) {
      try {
        quantised_clipped_sum(X, Vector::Constant(3, -1.0), 2.0, threads);
        FAIL() << "accepted " << bad;
      } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("row 123457, column 3"), std::string::npos) << e.what();
      }
    }
    X(123456, 2) = 0;
  }
}

TEST(BoundedMean, StatesItsPrivacyAndLedger) {
  const RowMatrix X = gaussian_data(10000, 3, 1.0, 4);
  SeededRng rng(5);
  const auto pure = bounded_mean(X, {.privacy = {1, 0}, .bounds = std::vector<double>{-5, 5}, .clip_check_share = 0}, rng);
  EXPECT_EQ(pure.privacy.epsilon, 1);
  EXPECT_EQ(pure.privacy.delta, 0);
  EXPECT_TRUE(pure.privacy.certified);
  EXPECT_TRUE(pure.seeded);
  ASSERT_EQ(pure.ledger.size(), 1u);
  EXPECT_EQ(pure.ledger[0].mechanism, "laplace");
  // Laplace scale on the mean: d (hi - lo) / (n eps) = 0.003, up to the lattice's 2^-20.
  EXPECT_NEAR(pure.diagnostics["noise_scale"][0].get<double>(), 0.003, 0.003 * 1e-5);
  const auto approx = bounded_mean(X, {.privacy = {1, 1e-6}, .bounds = std::vector<double>{-5, 5}, .clip_check_share = 0}, rng);
  EXPECT_EQ(approx.privacy.delta, 1e-6);
  EXPECT_EQ(approx.ledger[0].mechanism, "gaussian");
  dpstats::testing::expect_guarantee_from_ledger(pure);
  dpstats::testing::expect_guarantee_from_ledger(approx);
}

// The error of the bounded mean is the Laplace noise: |error_j| has mean b = d(hi-lo)/(n eps).
TEST(BoundedMean, ErrorHasTheCalibratedScale) {
  const RowMatrix X = gaussian_data(20000, 2, 0.0, 6);
  const Vector clipped = X.array().max(-4.0).min(4.0).matrix().colwise().mean();
  SeededRng rng(7);
  const int runs = 2000;
  double abs_err = 0;
  for (int k = 0; k < runs; ++k) {
    const auto r = bounded_mean(X, {.privacy = {0.5, 0}, .bounds = std::vector<double>{-4, 4}, .clip_check_share = 0}, rng);
    abs_err += (r.estimate - clipped).cwiseAbs().sum();
  }
  const double b = 2 * 8.0 / (20000 * 0.5);
  // mean of 4000 |Laplace(b)| draws: sd b/sqrt(4000) = 0.016 b; 6 sd.
  EXPECT_NEAR(abs_err / (2 * runs) / b, 1.0, 0.1);
}

// Bounds 1e-300 wide (a user's, or bounds estimated around an atom of zeros) give the same
// release as bounds scaled up by 2^1000, scaled back: once a mean of 1e-297 outside [0, 1e-300].
TEST(BoundedMean, NarrowBoundsReleaseTheScaledRelease) {
  const double k = 0x1p-1000;
  const RowMatrix X = gaussian_data(3000, 2, 0.5, 8).cwiseAbs();
  const RowMatrix narrow = X * k;
  for (const double delta : {0.0, 1e-6}) {
    SeededRng a(3), b(3);
    const auto wide = bounded_mean(X, {.privacy = {1, delta}, .bounds = std::vector<double>{0, 2}, .clip_check_share = 0}, a);
    const auto small = bounded_mean(narrow, {.privacy = {1, delta}, .bounds = std::vector<double>{0, 2 * k}, .clip_check_share = 0}, b);
    ASSERT_EQ(small.status, Status::ok);
    for (Eigen::Index j = 0; j < 2; ++j) {
      EXPECT_EQ(small.estimate[j], wide.estimate[j] * k) << delta;
      EXPECT_LE(std::fabs(small.estimate[j]), 4 * k);
    }
  }
}

TEST(BoundedMean, RejectsBadInput) {
  RowMatrix X = RowMatrix::Ones(5, 2);
  SeededRng rng(1);
  EXPECT_THROW(bounded_mean(X, {.privacy = {1, 0}, .bounds = std::vector<double>{1, 0}, .clip_check_share = 0}, rng), InvalidArgument);
  EXPECT_THROW(bounded_mean(X, {.privacy = {0, 0}, .bounds = std::vector<double>{0, 1}, .clip_check_share = 0}, rng), InvalidArgument);
  EXPECT_THROW(bounded_mean(X, {.privacy = {1, 1}, .bounds = std::vector<double>{0, 1}, .clip_check_share = 0}, rng),
               InvalidArgument);
  EXPECT_THROW(bounded_mean(X, {.privacy = {1, 0}, .bounds = std::vector<double>{0, INFINITY}, .clip_check_share = 0}, rng),
               InvalidArgument);
  X(3, 1) = std::numeric_limits<double>::quiet_NaN();
  try {
    bounded_mean(X, {.privacy = {1, 0}, .bounds = std::vector<double>{0, 1}, .clip_check_share = 0}, rng);
    FAIL() << "NaN accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("row 4, column 2"), std::string::npos) << e.what();
  }
}

TEST(DpMean, AccurateOnCleanGaussianData) {
  const RowMatrix X = gaussian_data(100000, 5, 2.0, 8);
  SeededRng rng(9);
  const auto r = dp_mean(X, {.privacy = {1, 1e-6}, .scale = std::vector<double>{1.0}, .clip_check_share = 0}, rng);
  ASSERT_EQ(r.status, Status::ok);
  EXPECT_LT((r.estimate.array() - 2.0).matrix().norm(), 0.05);
  EXPECT_LE(r.privacy.epsilon, 1.0);
  EXPECT_LE(r.privacy.delta, 1e-6);
  ASSERT_EQ(r.ledger.size(), 2u);
  EXPECT_EQ(r.ledger[0].purpose.rfind("q_range", 0), 0u) << r.ledger[0].purpose;
  EXPECT_EQ(r.ledger[1].mechanism, "gaussian");
}

TEST(DpMean, IsNotRobustToTheShiftedCluster) {
  // Card §2.11: under the oblivious shift its error is about alpha * 1.5 * sqrt(d).
  SeededRng data(10);
  const RowMatrix X = shifted_cluster(200000, 10, 0.05, 1.5, data);
  SeededRng rng(11);
  const auto r = dp_mean(X, {.privacy = {10, 0.01}, .scale = std::vector<double>{1.0}, .clip_check_share = 0}, rng);
  ASSERT_EQ(r.status, Status::ok);
  EXPECT_NEAR(r.estimate.norm(), 0.05 * 1.5 * std::sqrt(10.0), 0.03);
}

TEST(DpMean, AbstainsOnTinyDataAndStillChargesThePlan) {
  const RowMatrix X = gaussian_data(3, 2, 0.0, 12);
  SeededRng rng(13);
  const auto r = dp_mean(X, {.privacy = {0.1, 1e-9}, .scale = std::vector<double>{1.0}, .clip_check_share = 0}, rng);
  EXPECT_EQ(r.status, Status::abstained);
  EXPECT_EQ(r.estimate.size(), 0);
  EXPECT_TRUE(r.diagnostics.contains("abstained"));
  // The whole plan (range and mean) is charged before any noise is drawn.
  ASSERT_EQ(r.ledger.size(), 2u);
  EXPECT_GT(r.privacy.epsilon, 0);
  dpstats::testing::expect_guarantee_from_ledger(r);
}

TEST(DpMean, RejectsBadParameters) {
  const RowMatrix X = RowMatrix::Ones(10, 2);
  SeededRng rng(1);
  EXPECT_THROW(dp_mean(X, {.privacy = {1, 0}, .scale = std::vector<double>{1.0}, .clip_check_share = 0}, rng), InvalidArgument);
  EXPECT_THROW(dp_mean(X, {.privacy = {1, 1e-6}, .scale = std::vector<double>{0.0}}, rng), InvalidArgument);
  EXPECT_THROW(dp_mean(X, {.privacy = {1, 1e-6}, .scale = std::vector<double>{1.0}, .failure_probability = 1}, rng), InvalidArgument);
  EXPECT_THROW(dp_mean(X, {.privacy = {-1, 1e-6}, .scale = std::vector<double>{1.0}, .clip_check_share = 0}, rng), InvalidArgument);
}

TEST(BoundedMean, PerColumnBoundsAndTheClippedRowWarning) {
  RowMatrix X = gaussian_data(20000, 2, 0.0, 14);
  X.col(1) = X.col(1) * 1000.0;
  SeededRng rng(15);
  const auto r = bounded_mean(X, {.privacy = {1, 0}, .bounds = std::vector<double>{-4, 4, -4000, 4000}}, rng);
  ASSERT_EQ(r.status, Status::ok);
  EXPECT_LT(std::abs(r.estimate[0]), 0.01);
  EXPECT_LT(std::abs(r.estimate[1]), 10);
  EXPECT_FALSE(r.diagnostics["clipped"].contains("warning")) << r.diagnostics.dump();
  dpstats::testing::expect_guarantee_from_ledger(r);
  // One pair for both columns clips almost every row of the second: the release says so.
  const auto tight = bounded_mean(X, {.privacy = {1, 0}, .bounds = std::vector<double>{-4, 4}}, rng);
  EXPECT_TRUE(tight.diagnostics["clipped"].contains("warning")) << tight.diagnostics.dump();
  EXPECT_GT(tight.diagnostics["clipped"]["fraction"].get<double>(), 0.9);
  dpstats::testing::expect_guarantee_from_ledger(tight);
  EXPECT_THROW(bounded_mean(X, {.privacy = {1, 0}, .bounds = std::vector<double>{0, 1, 2}}, rng),
               InvalidArgument);
}

TEST(BoundedMean, EstimatesAbsentBoundsPrivately) {
  RowMatrix X = gaussian_data(20000, 2, 3.0, 16);
  X.col(1) = X.col(1) * 1e4;
  SeededRng rng(17);
  const auto r = bounded_mean(X, {.privacy = {1, 0}}, rng);
  ASSERT_EQ(r.status, Status::ok) << r.diagnostics.dump();
  EXPECT_NEAR(r.estimate[0], 3.0, 0.05);
  EXPECT_NEAR(r.estimate[1], 3e4, 500);
  EXPECT_TRUE(r.diagnostics.contains("bounds_estimate"));
  EXPECT_EQ(r.privacy.delta, 0);  // the scale layer is pure: a pure release stays pure
  dpstats::testing::expect_guarantee_from_ledger(r);
}

TEST(DpMean, EstimatesTheScaleOfEachColumn) {
  RowMatrix X = gaussian_data(50000, 2, 0.0, 18);
  X.col(0) = X.col(0) * 15.0 + Vector::Constant(X.rows(), 40.0);
  X.col(1) = X.col(1) * 20000.0 + Vector::Constant(X.rows(), 65000.0);
  SeededRng rng(19);
  const auto r = dp_mean(X, {.privacy = {1, 1e-6}}, rng);
  ASSERT_EQ(r.status, Status::ok) << r.diagnostics.dump();
  EXPECT_NEAR(r.estimate[0], 40, 0.5);
  EXPECT_NEAR(r.estimate[1], 65000, 700);
  EXPECT_FALSE(r.diagnostics["robust"].get<bool>());
  dpstats::testing::expect_guarantee_from_ledger(r);
}
