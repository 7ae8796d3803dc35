// The one exact sum (exact/exact_sum.hpp): exactness, order and thread-count independence,
// the overflow refusal, and equality with the four separate implementations it replaced (copied
// below, as they were, as references: the mean's fused box kernel, the statistics' loop, the
// median's unit-gradient kernel and the solvers' ClippedVectorSum), on seeded data.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include "dpstats/error.hpp"
#include "dpstats/mean/clipped_sum.hpp"
#include "dpstats/exact/exact_sum.hpp"
#include "dpstats/median/boosting.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/random/float_normal.hpp"
#include "dpstats/solvers/exact_sum.hpp"

namespace {

using namespace dpstats;

RowMatrix heavy_data(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  SeededRng rng(seed);
  RowMatrix X(n, d);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < d; ++j) {
      const double z = standard_normal(rng);
      X(i, j) = (j + 1) * z * z * z + 0.25 * j;  // heavy-ish tails, different scales per column
    }
  return X;
}

// --- The old paths, as they were before the one exact sum ---------------------------------------

Vector old_mean_box(const ConstMatrixRef& X, const Vector& lo, double width) {
  const double Q = sum_quantum(X.rows()), scale = Q / width;
  const std::uint64_t magic = std::bit_cast<std::uint64_t>(0x1p52);
  std::vector<std::uint64_t> acc(static_cast<std::size_t>(X.cols()), 0);
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = 0; j < X.cols(); ++j) {
      const double v = std::min(std::max(X(i, j) - lo[j], 0.0), width);
      acc[j] += std::bit_cast<std::uint64_t>(v * scale + 0x1p52);
    }
  Vector s(X.cols());
  for (Eigen::Index j = 0; j < X.cols(); ++j)
    s[j] = static_cast<double>(acc[j] - static_cast<std::uint64_t>(X.rows()) * magic);
  return s;
}

Vector old_stats_first(const ConstMatrixRef& X, double lower, double upper, double Q) {
  Vector s = Vector::Zero(X.cols());
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = 0; j < X.cols(); ++j) {
      const double c = std::clamp(X(i, j), lower, upper), w = upper - lower;
      s[j] += std::nearbyint(std::clamp((c - lower) / w, 0.0, 1.0) * Q);
    }
  return s;
}

Vector old_median_gradient_sum(const ConstMatrixRef& X, const Vector& z, int b) {
  const double scale = std::ldexp(1.0, b);
  Vector acc = Vector::Zero(X.cols());
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    Vector df(X.cols());
    double s = 0;
    for (Eigen::Index j = 0; j < X.cols(); ++j) {
      df[j] = z[j] - X(i, j);
      s += df[j] * df[j];
    }
    if (s == 0) continue;
    const double inv = scale / std::sqrt(s);
    for (Eigen::Index j = 0; j < X.cols(); ++j) acc[j] += (df[j] * inv + 0x1.8p52) - 0x1.8p52;
  }
  return acc;
}

Vector old_clipped_vector_sum(const ConstMatrixRef& X, double clip, int b) {
  Vector acc = Vector::Zero(X.cols());
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const Vector v = X.row(i).transpose();
    const double scale = std::ldexp(1.0, b) / std::max(clip, v.norm());
    for (Eigen::Index j = 0; j < X.cols(); ++j) acc[j] += (v[j] * scale + 0x1.8p52) - 0x1.8p52;
  }
  return acc;
}

}  // namespace

TEST(ExactSum, AddAndTotalAreExactIntegerSumsOfRoundedTerms) {
  std::uint64_t w = 0;
  const double terms[] = {0.5, 1.5, -2.5, 0x1p51, -0x1p51, 3.49, -7.51, 0.0, -0.0};
  std::int64_t expect = 0;
  for (double t : terms) {
    exact::add(w, t);
    expect += static_cast<std::int64_t>(std::nearbyint(t));
  }
  EXPECT_EQ(exact::total(w, std::size(terms)), expect);
  for (double t : terms) EXPECT_EQ(exact::nearest(t), std::nearbyint(t)) << t;
}

TEST(ExactSum, ConventionsKeepSumsBelowTwoToThe53) {
  for (std::int64_t n : {1LL, 2LL, 3LL, 1000LL, 1LL << 20, (1LL << 20) + 1, 123456789LL}) {
    EXPECT_EQ(exact::box_quantum(n), sum_quantum(n));
    EXPECT_LT(static_cast<double>(n) * exact::box_quantum(n), 0x1p53) << n;
    const int b = exact::ball_bits(n);
    EXPECT_LE(static_cast<double>(n) * std::ldexp(2.0, b), 0x1p53) << n;
  }
  EXPECT_THROW(exact::box_quantum(0), InvalidArgument);
  EXPECT_THROW(exact::ball_bits(0), InvalidArgument);
}

TEST(ExactSum, RefusesTermsOrSumsBeyondTheExactRange) {
  auto none = [](int, std::int64_t, std::int64_t, std::uint64_t*) { FAIL() << "read a row"; };
  EXPECT_THROW(exact::row_sums(10, 1, 0x1p52, 1, none), InvalidArgument);
  EXPECT_THROW(exact::row_sums(1 << 20, 1, 0x1p33, 1, none), InvalidArgument);  // 2^53
  EXPECT_THROW(exact::row_sums(10, 0, 1.0, 1, none), InvalidArgument);
  EXPECT_THROW(exact::BallSum(3, 1.0, std::int64_t{1} << 40), InvalidArgument);
  exact::BallSum full(2, 1.0, 1);
  full.add(Vector::Ones(2));
  EXPECT_THROW(full.add(Vector::Ones(2)), InvalidArgument);  // beyond its capacity
}

TEST(ExactSum, IndependentOfThreadCountAndRowOrder) {
  const RowMatrix X = heavy_data(200000, 3, 11);
  const Vector lower = Vector::Constant(3, -2.0);
  const double Q = exact::box_quantum(X.rows());
  const exact::BoxSum one = exact::box_sum(X, lower, 5.0, Q, 1);
  for (int threads : {2, 3, 8}) EXPECT_EQ(exact::box_sum(X, lower, 5.0, Q, threads).sums, one.sums);
  // Reversed rows: the same integers in another order.
  const RowMatrix R = X.colwise().reverse();
  EXPECT_EQ(exact::box_sum(R, lower, 5.0, Q, 2).sums, one.sums);
  EXPECT_TRUE(one.finite);
}

// A box too narrow for Q / width (bounds estimated around an atom of zeros, 1e-300 wide) sums the
// same integers as the same rows and box scaled up by an exact power of two: the quantised values
// stay in [0, Q] instead of overflowing.
TEST(ExactSum, ANarrowBoxSumsAsTheSameBoxScaledUp) {
  const RowMatrix X = heavy_data(5000, 2, 4);
  const double k = 0x1p-1000;  // the narrow box: [-1.5, 1.5] 2^-1000 wide (below 2^-984)
  const RowMatrix narrow = X * k;
  const double Q = exact::box_quantum(X.rows());
  const Vector lower = Vector::Constant(2, -1.5);
  const exact::BoxSum wide = exact::box_sum(X, lower, 3.0, Q, 2);
  const exact::BoxSum small = exact::box_sum(narrow, lower * k, 3.0 * k, Q, 2);
  EXPECT_EQ(small.sums, wide.sums);
  EXPECT_TRUE(small.finite);
  for (Eigen::Index j = 0; j < 2; ++j) EXPECT_LE(small.sums[j], Q * 5000);
}

TEST(ExactSum, FlagsNaNAndInfInTheSamePass) {
  RowMatrix X = RowMatrix::Zero(150000, 2);
  X(140000, 1) = std::numeric_limits<double>::quiet_NaN();
  const double Q = exact::box_quantum(X.rows());
  for (int threads : {1, 2}) EXPECT_FALSE(exact::box_sum(X, Vector::Zero(2), 1.0, Q, threads).finite);
}

TEST(ExactSum, EqualsTheOldMeanAndStatisticsPaths) {
  for (std::uint64_t seed : {1, 2, 3}) {
    const RowMatrix X = heavy_data(70001, 4, seed);
    const Vector lower = Vector::Constant(4, -1.5);
    const double Q = exact::box_quantum(X.rows());
    EXPECT_EQ(exact::box_sum(X, lower, 3.0, Q, 2).sums, old_mean_box(X, lower, 3.0));
    EXPECT_EQ(quantised_clipped_sum(X, lower, 3.0, 2).sums, old_mean_box(X, lower, 3.0));
    const Vector stats = exact::row_sums(
        X.rows(), X.cols(), Q, 2, [&](int, std::int64_t b, std::int64_t e, std::uint64_t* w) {
          for (std::int64_t i = b; i < e; ++i)
            for (Eigen::Index j = 0; j < X.cols(); ++j)
              exact::add(w[j], exact::unit_value((std::clamp(X(i, j), -1.5, 1.5) + 1.5) / 3.0, Q));
        });
    EXPECT_EQ(stats, old_stats_first(X, -1.5, 1.5, Q));
  }
}

TEST(ExactSum, EqualsTheOldMedianAndSolverPaths) {
  for (std::uint64_t seed : {4, 5, 6}) {
    RowMatrix X = heavy_data(5001, 6, seed);
    X.row(17).setConstant(0.5);  // a point coincident with z: u_i = 0
    const Vector z = Vector::Constant(6, 0.5);
    const int b = exact::ball_bits(X.rows());
    const MeanGradient g = mean_unit_gradient(X, z);
    const double denom = static_cast<double>(X.rows()) * std::ldexp(1.0, b);
    EXPECT_EQ(g.g, old_median_gradient_sum(X, z, b) / denom);

    optimize::ClippedVectorSum sum(6, 2.5, X.rows());
    exact::BallSum ball(6, 2.5, X.rows());
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
      sum.add(X.row(i).transpose());
      ball.add(X.row(i).transpose());
    }
    const Vector old = old_clipped_vector_sum(X, 2.5, b);
    EXPECT_EQ(ball.lattice_sum(), old);
    EXPECT_EQ(sum.sum(), old * (2.5 * std::ldexp(1.0, -b)));
  }
}

TEST(ExactSum, OneReplacedVectorMovesTheBallSumWithinItsSensitivity) {
  const RowMatrix X = heavy_data(1000, 5, 9);
  exact::BallSum a(5, 1.0, 1000), b(5, 1.0, 1000);
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    a.add(X.row(i).transpose());
    b.add(i == 500 ? Vector(Vector::Constant(5, -1e10)) : Vector(X.row(i).transpose()));
  }
  EXPECT_LE((a.lattice_sum() - b.lattice_sum()).norm(), exact::ball_lattice_sensitivity(5, a.bits()));
}
