// PRIME accuracy at CI size (docs/proofs/mean.md). Seeded;
// thresholds are set from the measured floor of the algorithm (k = 2αn removal bias, practical
// profile) with a wide margin, and from DP Mean's bias 1.5·α·√d that PRIME must beat — a broken
// filter (no removal, a wrong sign in the scores, half the noise on Σ in the wrong place) lands at
// DP Mean's error and fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "dpstats/synthetic/shifted_cluster.hpp"
#include "dpstats/mean/dp_mean.hpp"
#include "dpstats/mean/prime.hpp"

using namespace dpstats;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Same-norm attack (card A2 with the norm matched): bad rows at t·v plus an orthogonal Gaussian
// part rescaled so that ‖x‖ has the clean distribution; v a fixed random unit vector.
RowMatrix same_norm(std::int64_t n, std::int64_t d, double alpha, Rng& g) {
  RowMatrix X(n, d);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < d; ++j) X(i, j) = standard_normal(g);
  Vector v(d);
  for (std::int64_t j = 0; j < d; ++j) v[j] = standard_normal(g);
  v.normalize();
  const double t = 4 * std::sqrt(std::log(1 / alpha));
  const auto bad = static_cast<std::int64_t>(alpha * n);
  for (std::int64_t i = 0; i < bad; ++i) {
    Vector z = X.row(i).transpose();
    const double norm2 = std::max(z.squaredNorm(), t * t + 1);
    Vector w = z - z.dot(v) * v;
    X.row(i) = (t * v + w.normalized() * std::sqrt(norm2 - t * t)).transpose();
  }
  return X;
}

}  // namespace

TEST(PrimeStat, BeatsDpMeanUnderBothAttacks) {
  for (int attack = 0; attack < 2; ++attack) {
    std::vector<double> prime_err, dpm_err;
    for (int seed = 0; seed < 5; ++seed) {
      SeededRng g(100 * attack + seed);
      const std::int64_t n = 50000, d = 10;
      const RowMatrix X =
          attack == 0 ? shifted_cluster(n, d, 0.05, 1.5, g) : same_norm(n, d, 0.05, g);
      PrimeOptions o;
      o.scale = std::vector<double>{1.0};
      o.clip_check_share = 0;
      o.privacy.epsilon = 10;
      o.privacy.delta = 0.01;
      o.alpha = 0.05;
      const auto r = prime(X, o, g);
      ASSERT_EQ(r.status, Status::ok);
      ASSERT_FALSE(r.diagnostics.contains("fallback"));
      prime_err.push_back(r.estimate.norm());
      DpMeanOptions m;
      m.scale = std::vector<double>{1.0};
      m.clip_check_share = 0;
      m.privacy.epsilon = 10;
      m.privacy.delta = 0.01;
      dpm_err.push_back(dp_mean(X, m, g).estimate.norm());
    }
    // DP Mean's bias: 1.5α√d = 0.237 (shift); the same-norm attack moves it by α·t ≈ 0.35.
    EXPECT_GT(median(dpm_err), 0.2) << "attack " << attack;
    // PRIME: the k = 2αn floor is ≈ 0.06 at this size; half of DP Mean's error is the bar.
    EXPECT_LT(median(prime_err), 0.1) << "attack " << attack;
    EXPECT_LT(median(prime_err), median(dpm_err) / 2) << "attack " << attack;
  }
}

// The shift attack at the paper's ε = 10, α = 0.05 (n = 10^5, d = 20): every seed near the
// sampling floor √(d/n) = 0.014. With the paper's shared uniform Z, a round whose cut ρZ fell
// into the clean tail removed all k = 2αn candidates (≈ αn clean rows on one side) and the run
// ended at ≈ 0.07 on about half the seeds (docs/results/prime.md, per-seed traces). The
// practical profile's Z = 1 (docs/proofs/mean.md §2) removes that mode.
TEST(PrimeStat, ShiftAttackHasNoBadSeeds) {
  std::vector<double> err;
  for (int seed = 0; seed < 8; ++seed) {
    SeededRng g(700 + seed);
    const RowMatrix X = shifted_cluster(100000, 20, 0.05, 1.5, g);
    PrimeOptions o;
    o.scale = std::vector<double>{1.0};
    o.clip_check_share = 0;
    o.privacy.epsilon = 10;
    o.privacy.delta = 0.01;
    o.alpha = 0.05;
    PrimeTrace trace;
    const auto r = prime(X, o, g, nullptr, &trace);
    ASSERT_EQ(r.status, Status::ok);
    for (const auto& round : trace.rounds) EXPECT_EQ(round.Z, 1.0);
    err.push_back(r.estimate.norm());
  }
  EXPECT_LT(*std::max_element(err.begin(), err.end()), 0.04);
  EXPECT_LT(median(err), 0.025);
}

TEST(PrimeStat, PrivateRunIsCloseToTheNoiselessRun) {
  // n = 2e5, d = 10 (the smallest target size): the private run is within 10% of the same
  // run with the filter noise switched off (same Z, same range), median over 3 seeds.
  std::vector<double> ratio;
  for (int seed = 0; seed < 3; ++seed) {
    SeededRng g(seed);
    const RowMatrix X = shifted_cluster(200000, 10, 0.05, 1.5, g);
    PrimeOptions o;
    o.scale = std::vector<double>{1.0};
    o.clip_check_share = 0;
    o.privacy.epsilon = 10;
    o.privacy.delta = 0.01;
    o.alpha = 0.05;
    o.run.threads = 2;
    SeededRng a(50 + seed), b(50 + seed);
    const auto r = prime(X, o, a);
    PrimeTrace off;
    off.noiseless = true;
    const auto q = prime(X, o, b, nullptr, &off);
    EXPECT_FALSE(q.privacy.certified);
    ratio.push_back(std::abs(r.estimate.norm() - q.estimate.norm()) / q.estimate.norm());
  }
  EXPECT_LT(median(ratio), 0.10);
}

TEST(PrimeStat, FallbackIsExactlyDpMean) {
  SeededRng g(3);
  const RowMatrix X = shifted_cluster(5000, 20, 0.05, 1.5, g);
  PrimeOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 2;
  o.privacy.delta = 1e-5;
  o.alpha = 0.05;
  SeededRng a(8), b(8);
  const auto r = prime(X, o, a);
  ASSERT_EQ(r.diagnostics.value("fallback", ""), "dp-mean");
  DpMeanOptions m;
  m.scale = std::vector<double>{1.0};
  m.clip_check_share = 0;
  m.privacy.epsilon = 2;
  m.privacy.delta = 1e-5;
  const auto q = dp_mean(X, m, b);
  EXPECT_EQ(r.estimate, q.estimate);
}

TEST(PrimeStat, CleanDataErrorShrinksLikeOneOverRootN) {
  // No corruption, ε large: error ≈ c√(d/n). Median over 7 runs at n = 1e4 and 1e5 (d = 5);
  // the ratio should be ≈ √10 = 3.16.
  std::vector<double> small, large;
  for (int seed = 0; seed < 7; ++seed) {
    for (std::int64_t n : {10000, 100000}) {
      SeededRng g(1000 + seed);
      const RowMatrix X = shifted_cluster(n, 5, 0.0, 0.0, g);
      PrimeOptions o;
      o.scale = std::vector<double>{1.0};
      o.clip_check_share = 0;
      o.privacy.epsilon = 100;
      o.privacy.delta = 1e-3;
      o.alpha = 0.02;
      const auto r = prime(X, o, g);
      (n == 10000 ? small : large).push_back(r.estimate.norm());
    }
  }
  const double ratio = median(small) / median(large);
  EXPECT_GT(ratio, 2.0);
  EXPECT_LT(ratio, 5.0);
}
