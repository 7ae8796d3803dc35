// Accuracy at CI size of the private iterative filter and PRIME-ht (card §6 statistical items).
// Seeded; thresholds come from DP Mean's bias 1.5·α·√d (shift) / α·t (same-norm), which a filter
// that does not remove the corrupted rows cannot beat, with a wide margin below it for the
// measured floors (printed). A broken filter (no removal, a wrong direction, scores on the wrong
// centre) lands at DP Mean's error and fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

#include "dpstats/data/synthetic.hpp"
#include "dpstats/mean/dp_mean.hpp"
#include "dpstats/mean/prime_ht.hpp"
#include "dpstats/mean/private_filter.hpp"

using namespace dpstats;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

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

// Student-t (ν = 3) scaled to unit variance, ⌊αn⌋ rows shifted by `shift` in every coordinate.
RowMatrix heavy(std::int64_t n, std::int64_t d, double alpha, double shift, Rng& g) {
  RowMatrix X(n, d);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < d; ++j) {
      double chi = 0;
      for (int k = 0; k < 3; ++k) {
        const double z = standard_normal(g);
        chi += z * z;
      }
      X(i, j) = standard_normal(g) / std::sqrt(chi / 3) / std::sqrt(3.0);
    }
  X.topRows(static_cast<std::int64_t>(alpha * n)).array() += shift;
  return X;
}

double dp_mean_error(const RowMatrix& X, Rng& g) {
  DpMeanOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 10;
  o.privacy.delta = 0.01;
  return dp_mean(X, o, g).estimate.norm();
}

}  // namespace

TEST(PrivateFilterStat, BeatsDpMeanUnderBothAttacks) {
  const std::int64_t n = 50000, d = 10;
  const double alpha = 0.05;
  for (int attack = 0; attack < 2; ++attack) {
    std::vector<double> f, m;
    for (int s = 0; s < 5; ++s) {
      SeededRng g(1000 * attack + s);
      const RowMatrix X = attack == 0 ? shifted_cluster(n, d, alpha, 1.5, g) : same_norm(n, d, alpha, g);
      PrivateFilterOptions o;
      o.scale = std::vector<double>{1.0};
      o.clip_check_share = 0;
      o.privacy.epsilon = 10;
      o.privacy.delta = 0.01;
      o.alpha = alpha;
      const auto r = private_filter(X, o, g);
      ASSERT_EQ(r.status, Status::ok);
      f.push_back(r.estimate.norm());
      m.push_back(dp_mean_error(X, g));
    }
    std::cout << "  attack " << attack << ": filter median " << median(f) << ", DP Mean median "
              << median(m) << "\n";
    // DP Mean's bias: 0.237 (shift), α·t = 0.35 (same-norm).
    EXPECT_GT(median(m), 0.2);
    EXPECT_LT(median(f), 0.1);
  }
}

TEST(PrimeHtStat, BeatsDpMeanOnHeavyTails) {
  const std::int64_t n = 50000, d = 5;
  std::vector<double> p, m;
  for (int s = 0; s < 5; ++s) {
    SeededRng g(77 + s);
    const RowMatrix X = heavy(n, d, 0.05, 3.0, g);
    PrimeOptions o;
    o.scale = std::vector<double>{1.0};
    o.clip_check_share = 0;
    o.privacy.epsilon = 10;
    o.privacy.delta = 0.01;
    o.alpha = 0.05;
    o.fallback = false;
    const auto r = prime_ht(X, o, g);
    ASSERT_EQ(r.status, Status::ok);
    p.push_back(r.estimate.norm());
    m.push_back(dp_mean_error(X, g));
  }
  std::cout << "  PRIME-ht median " << median(p) << ", DP Mean median " << median(m) << "\n";
  // DP Mean's bias 0.05·3·√5 = 0.34; PRIME-ht's target scale is √α = 0.22, measured far below.
  EXPECT_GT(median(m), 0.25);
  EXPECT_LT(median(p), 0.12);
}
