// Seeded statistical checks of the certified FastCenter (docs/proofs/median.md §6.1): its centre
// noise has the calibrated σ (a χ² test on identical rows, where the weighted mean is the row
// itself), and on a GaussianCluster it lands where Lemma 7 and the boosting domain rad_1 put it.
#include <gtest/gtest.h>

#include <cmath>

#include "dpstats/median/fast_center.hpp"
#include "dpstats/median/weiszfeld.hpp"
#include "dpstats/synthetic/gaussian_cluster.hpp"

using namespace dpstats;

TEST(FastCenterStat, NoiseHasTheCalibratedSigma) {
  const std::int64_t n = 1000, d = 5;
  const RowMatrix X = RowMatrix::Constant(n, d, 3.0);
  SeededRng rng(31);
  const int reps = 40;
  double sum = 0, sum2 = 0, sigma = 0;
  for (int t = 0; t < reps; ++t) {
    const auto r = fast_center(X, 8, 0.5, 2, 1e-2, rng);
    ASSERT_FALSE(r.failed);
    sigma = r.sigma;
    for (std::int64_t c = 0; c < d; ++c) {
      const double e = r.centre[c] - 3.0;
      sum += e, sum2 += e * e;
    }
  }
  const double N = reps * d;
  // Σ e²/σ² ~ χ²_200 (the lattice Gaussian's variance is within 1e-5 of σ²): P(outside
  // [120, 300]) < 1e-6.
  EXPECT_GT(sum2 / (sigma * sigma), 120.0);
  EXPECT_LT(sum2 / (sigma * sigma), 300.0);
  EXPECT_LT(std::abs(sum / N), 5 * sigma / std::sqrt(N));
}

TEST(FastCenterStat, ClusterCentreWithinTheBoostingDomain) {
  // GaussianCluster(R = 4, n = 10^4, d = 5, σ = 0.1, 90% inliers) at (ε, δ) = (1, 1e-5): the gate
  // passes and the centre lies within rad_1 = 3 r_c + 3σ sqrt(d ln(16/δ)) of the median.
  SeededRng rng(32);
  const RowMatrix X = gaussian_cluster(4, 10000, 5, 0.1, 0.9, rng);
  const auto w = weiszfeld(X);
  const double r_c = 4 * quantile_radius(X, w.x, 0.75);
  for (int t = 0; t < 3; ++t) {
    const auto r = fast_center(X, 4, r_c, 1, 1e-5, rng);
    ASSERT_FALSE(r.failed);
    EXPECT_LE((r.centre - w.x).norm(), 3 * r_c + 3 * r.sigma * std::sqrt(5 * std::log(16 / 1e-5)));
    EXPECT_LE((r.centre - w.x).norm(), r_c);  // in practice much closer than the proof's domain
  }
}
