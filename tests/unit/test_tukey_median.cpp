// The private Tukey median (mean/tukey_median.hpp; docs/proofs/mean.md §9): the exact depth against
// a brute force over directions, its sensitivity 1 on neighbouring datasets, the release's ledger
// and robustness.
#include <gtest/gtest.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/mean/methods.hpp"
#include "dpstats/mean/tukey_median.hpp"
#include "dpstats/random/float_normal.hpp"

using namespace dpstats;

namespace {

// min over integer directions (a, b), |a|, |b| <= 30, of the closed half-plane count: exact for
// points whose differences to p have coordinates <= 10 (every angular cell holds such a direction).
std::int64_t brute_depth_2d(const std::vector<std::int64_t>& Q, const std::int64_t* p) {
  std::int64_t best = INT64_MAX;
  for (int a = -30; a <= 30; ++a)
    for (int b = -30; b <= 30; ++b) {
      if (a == 0 && b == 0) continue;
      std::int64_t c = 0;
      for (std::size_t i = 0; i < Q.size(); i += 2) c += a * (Q[i] - p[0]) + b * (Q[i + 1] - p[1]) >= 0;
      best = std::min(best, c);
    }
  return best;
}

std::vector<std::int64_t> random_points(int n, int d, Rng& rng) {
  std::vector<std::int64_t> Q(static_cast<std::size_t>(n * d));
  for (auto& q : Q) q = static_cast<std::int64_t>(rng.uniform_below(11)) - 5;
  return Q;
}

}  // namespace

TEST(TukeyDepth, ExactAgainstBruteForce) {
  SeededRng rng(51);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng.uniform_below(25));
    const auto Q = random_points(n, 2, rng);
    const std::int64_t p[2] = {static_cast<std::int64_t>(rng.uniform_below(11)) - 5,
                               static_cast<std::int64_t>(rng.uniform_below(11)) - 5};
    ASSERT_EQ(tukey_depth_count(Q, 2, p), brute_depth_2d(Q, p)) << "trial " << trial;
  }
  const std::vector<std::int64_t> line = {1, 2, 3, 3, 7};
  const std::int64_t at3 = 3, at7 = 7;
  EXPECT_EQ(tukey_depth_count(line, 1, &at3), 3);
  EXPECT_EQ(tukey_depth_count(line, 1, &at7), 1);
}

TEST(TukeyDepth, SensitivityOneOnNeighbours) {
  SeededRng rng(52);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(rng.uniform_below(20));
    auto Q = random_points(n, 2, rng);
    auto Qp = Q;
    const auto i = 2 * rng.uniform_below(static_cast<std::uint64_t>(n));
    Qp[i] = static_cast<std::int64_t>(rng.uniform_below(11)) - 5;
    Qp[i + 1] = static_cast<std::int64_t>(rng.uniform_below(11)) - 5;
    for (std::int64_t x = -5; x <= 5; ++x)
      for (std::int64_t y = -5; y <= 5; ++y) {
        const std::int64_t p[2] = {x, y};
        ASSERT_LE(std::abs(tukey_depth_count(Q, 2, p) - tukey_depth_count(Qp, 2, p)), 1);
      }
  }
}

TEST(TukeyMedian, RobustPureAndValidated) {
  SeededRng rng(53);
  RowMatrix X(400, 2);
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    X.row(i) << standard_normal(rng) + (i < 20 ? 6 : 0), standard_normal(rng) + (i < 20 ? 6 : 0);
  TukeyMedianOptions o;
  o.privacy = {2, 0};
  o.bounds = {-4, 4};
  o.grid = 65;
  const auto r = tukey_median(X, o, rng);
  ASSERT_EQ(r.status, Status::ok);
  EXPECT_EQ(r.privacy.delta, 0);
  EXPECT_DOUBLE_EQ(r.privacy.epsilon, 2);
  EXPECT_TRUE(r.privacy.certified);
  ASSERT_EQ(r.ledger.size(), 1u);
  EXPECT_LT(r.estimate.norm(), 0.6);  // the mean moved by 0.05·6·√2 ≈ 0.42 toward the outliers
  o.bounds = {};
  EXPECT_THROW(tukey_median(X, o, rng), InvalidArgument);
  o.bounds = {4, -4};
  EXPECT_THROW(tukey_median(X, o, rng), InvalidArgument);
  o.bounds = {-4, 4};
  o.grid = 2000;  // 4·10^6 candidates
  EXPECT_THROW(tukey_median(X, o, rng), InvalidArgument);
  EXPECT_THROW(tukey_median(RowMatrix::Zero(10, 3), o, rng), InvalidArgument);
  // d = 1 through the registry.
  MeanRequest req;
  req.method = "tukey-median";
  req.privacy = {1, 0};
  req.bounds = std::vector<double>{-10, 10};
  const RowMatrix X1 = X.col(0);
  const auto one = run_mean(X1, req, rng);
  EXPECT_LT(std::abs(one.estimate[0]), 0.5);
  req.bounds.reset();
  EXPECT_THROW(run_mean(X1, req, rng), InvalidArgument);
}
