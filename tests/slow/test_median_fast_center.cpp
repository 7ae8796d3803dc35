// The certified FastCenter at the large-n check of docs/proofs/median.md §6: n = 20000, d = 10, GaussianCluster, ε = 0.5. About
// 3·10^9 coordinate operations (k ≈ 14600 partners per row), hence the slow suite.
#include <gtest/gtest.h>

#include <cmath>

#include "dpstats/synthetic/gaussian_cluster.hpp"
#include "dpstats/median/fast_center.hpp"
#include "dpstats/median/weiszfeld.hpp"

using namespace dpstats;

TEST(SlowMedian, FastCenterAtLargeN) {
  // n = 20000, d = 10, GaussianCluster, ε = 0.5: succeeds and lands within
  // 3 r̂_c + 3σ sqrt(d ln(4/δ)) of x*.
  SeededRng rng(600);
  const RowMatrix X = gaussian_cluster(4, 20000, 10, 0.1, 0.9, rng);
  const auto w = weiszfeld(X);
  const double r_c = 4 * 2 * quantile_radius(X, w.x, 0.75);
  const auto r = fast_center(X, 4, r_c, 0.5, 1e-5, rng);
  ASSERT_FALSE(r.failed);
  EXPECT_LE((r.centre - w.x).norm(), 3 * r_c + 3 * r.sigma * std::sqrt(10 * std::log(4 / 1e-5)));
}
