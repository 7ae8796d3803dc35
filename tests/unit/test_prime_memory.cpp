// PRIME's memory (issue 21): the robust filters read the data in scale units through a view
// (AffineRows) and recompute each clipped, quantised row (ClippedRows) instead of storing n x d
// copies. Both must give bit for bit the values of the former copies (to_units, then the in-place
// clip and quantisation), and the kernels over them the same exact Gram matrix, the same scores
// and the same drops as over the materialised matrix: that is what keeps every seeded release.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "../../src/mean/robust_mean_core.hpp"
#include "../../src/mean/prime_kernels.hpp"
#include "dpstats/mean/units.hpp"
#include "dpstats/random/float_normal.hpp"

using namespace dpstats;
using namespace dpstats::mean_detail;

namespace {

// n rows in odd units (scales 1e-2 .. 1e2, shifted), a tenth far out (clipped), 41 copies of
// one far row (tied scores).
RowMatrix odd_rows(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  SeededRng rng(seed);
  RowMatrix X(n, d);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < d; ++j) {
      const double scale = std::pow(10.0, static_cast<double>(j % 5) - 2);
      X(i, j) = scale * (standard_normal(rng) + (i % 10 == 0 ? 6.0 : 0.0)) + 1e3 * j;
    }
  for (std::int64_t i = 1; i <= 40; ++i) X.row(n - i) = X.row(n - 50);
  return X;
}

ColumnUnits odd_units(std::int64_t d) {
  ColumnUnits u;
  u.location = Vector::LinSpaced(d, 0.5, 1e3 * static_cast<double>(d));
  u.scale = Vector::LinSpaced(d, 0.003, 7.0);
  return u;
}

// The former pipeline, written out: z = clamp((x − loc)·(1/scale)), then v = z − centre, clipped
// onto the ball (factor r/‖v‖) or box and quantised; the ball's factors are returned.
RowMatrix former_processed(const ConstMatrixRef& X, const ColumnUnits& u, const Vector& centre,
                           bool ball, double r, double q, std::vector<double>& factor) {
  const Vector inv = u.scale.cwiseInverse();
  RowMatrix Z(X.rows(), X.cols());
  factor.assign(ball ? static_cast<std::size_t>(X.rows()) : 0, 1.0);
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    double ss = 0, amax = 0;
    for (Eigen::Index j = 0; j < X.cols(); ++j) {
      Z(i, j) = std::clamp((X(i, j) - u.location[j]) * inv[j], -1e150, 1e150) - centre[j];
      ss += Z(i, j) * Z(i, j);
      amax = std::max(amax, std::abs(Z(i, j)));
    }
    if (ball && std::sqrt(ss) > r) {
      factor[static_cast<std::size_t>(i)] = r / std::sqrt(ss);
      Z.row(i) *= factor[static_cast<std::size_t>(i)];
    } else if (!ball && amax > r) {
      Z.row(i) = Z.row(i).cwiseMax(-r).cwiseMin(r);
    }
    for (Eigen::Index j = 0; j < X.cols(); ++j) Z(i, j) = exact::nearest(Z(i, j) * (1 / q)) * q;
  }
  return Z;
}

void expect_bitwise(const RowMatrix& a, const RowMatrix& b) {
  ASSERT_EQ(a.rows(), b.rows());
  ASSERT_EQ(a.cols(), b.cols());
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index j = 0; j < a.cols(); ++j)
      ASSERT_EQ(std::bit_cast<std::uint64_t>(a(i, j)), std::bit_cast<std::uint64_t>(b(i, j)))
          << "cell (" << i << ", " << j << ")";
}

TEST(PrimeMemory, UnitsViewIsTheFormerCopy) {
  const RowMatrix X = odd_rows(3000, 6, 1);
  const ColumnUnits u = odd_units(6);
  const Vector inv = u.scale.cwiseInverse();
  RowMatrix former(X.rows(), X.cols());
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = 0; j < X.cols(); ++j)
      former(i, j) = std::clamp((X(i, j) - u.location[j]) * inv[j], -1e150, 1e150);
  const AffineRows view = units_view(X, u);
  expect_bitwise(view.materialise(), former);
  expect_bitwise(to_units(X, u), former);
  std::vector<double> row(6);
  view.row(17, row.data());
  for (Eigen::Index j = 0; j < 6; ++j) EXPECT_EQ(row[j], former(17, j));
  EXPECT_EQ(view.at(2999, 5), former(2999, 5));
  // A huge outlier stays finite, as before.
  RowMatrix Y = X;
  Y(3, 2) = 1e308;
  EXPECT_EQ(units_view(Y, u).at(3, 2), 1e150);
}

// The ball and the box: the recomputed rows equal the former ones, and the Gram matrix, scores
// and drops over them equal those over the materialised matrix (all rows, a subset, 1 and 2
// threads; the private filter's single direction too). d = 7 and 13: the Gram tiles' padding and
// their diagonal tiles at rows 4 mod 8.
void check_kernels(bool ball, std::int64_t d = 7) {
  const std::int64_t n = 9000;
  const RowMatrix X = odd_rows(n, d, ball ? 2 : 3);
  const ColumnUnits u = odd_units(d);
  Vector centre = Vector::LinSpaced(d, -0.3, 0.4);
  const double r = ball ? 4.0 : 2.5;
  const double q = quantum_for(r, n);
  std::vector<double> factor;
  const RowMatrix Z = former_processed(X, u, centre, ball, r, q, factor);
  const std::vector<double> f = ball ? factor : std::vector<double>{};
  const ClippedRows rows(units_view(X, u), centre, ball, r, q, f);
  if (ball) EXPECT_GT(std::count_if(factor.begin(), factor.end(), [](double f) { return f < 1; }), n / 20);
  expect_bitwise(rows.materialise(), Z);
  // Every mapped value is far inside ±1e150: the reads that skip the clamp give the same rows.
  expect_bitwise(ClippedRows(units_view(X, u), centre, ball, r, q, f, true).materialise(), Z);
  EXPECT_EQ(rows.at(4321, 3), Z(4321, 3));
  EXPECT_EQ(rows.row(n - 1), Z.row(n - 1).transpose());

  std::vector<std::uint32_t> S;
  for (std::uint32_t i = 0; i < n; ++i)
    if (i % 7 != 3) S.push_back(i);
  for (int threads : {1, 2}) {
    for (bool all : {true, false}) {
      std::vector<double> G1(d * d, 0.0), G2(d * d, 0.0), s1(d, 0.0), s2(d, 0.0);
      const std::span<const std::uint32_t> list = all ? std::span<const std::uint32_t>{} : S;
      gram_update(rows, list, all, 1.0, G1.data(), s1.data(), threads);
      gram_update(Z, list, all, 1.0, G2.data(), s2.data(), threads);
      EXPECT_EQ(G1, G2);
      EXPECT_EQ(s1, s2);
    }
    SeededRng rng(9);
    std::vector<double> P(d * d), mu(d);
    for (auto& p : P) p = standard_normal(rng);
    for (auto& m : mu) m = 0.1 * standard_normal(rng);
    for (int cols : {0, 1}) {
      std::vector<double> t1(S.size()), t2(S.size());
      scores(rows, S, P.data(), mu.data(), t1.data(), threads, cols);
      scores(Z, S, P.data(), mu.data(), t2.data(), threads, cols);
      EXPECT_EQ(t1, t2);
      // The copies of one far row tie; a cut at their score with k between the rows above it
      // and those plus the copies makes the value-based order (which reads the rows) split them.
      const auto dup = std::lower_bound(S.begin(), S.end(), static_cast<std::uint32_t>(n - 1)) - S.begin();
      const double cut = t1[static_cast<std::size_t>(dup)];
      const auto tied = std::count(t1.begin(), t1.end(), cut);
      const auto above = std::count_if(t1.begin(), t1.end(), [&](double t) { return t > cut; });
      EXPECT_GE(tied, 30);
      for (std::int64_t k : {std::int64_t{above + 5}, std::int64_t{10}, std::int64_t{100000}})
        EXPECT_EQ(filter_drops(t1, cut, rows, S, k), filter_drops(t2, cut, Z, S, k));
    }
  }
}

TEST(PrimeMemory, BallRowsAndKernelsMatchTheFormerCopy) { check_kernels(true); }
TEST(PrimeMemory, BoxRowsAndKernelsMatchTheFormerCopy) { check_kernels(false); }
TEST(PrimeMemory, WiderRowsAndKernelsMatchTheFormerCopy) { check_kernels(true, 13); }

}  // namespace
