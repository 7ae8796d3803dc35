// PRIME-ht and q_range-ht (docs/proofs/mean.md): partitions, coverage on heavy-tailed data, the
// heavy-tail switches in the ledger, permutation invariance, replay, budgets.
#include <gtest/gtest.h>

#include <cmath>

#include "dpstats/synthetic/shifted_cluster.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/prime_ht.hpp"
#include "dpstats/mechanisms/range_ht.hpp"

using namespace dpstats;

namespace {

// Student-t with ν = 3 scaled to unit variance (Σ = I), plus ⌊αn⌋ rows shifted by `shift`.
RowMatrix heavy(std::int64_t n, std::int64_t d, double alpha, double shift, std::uint64_t seed) {
  SeededRng g(seed);
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
  const auto bad = static_cast<std::int64_t>(alpha * n);
  X.topRows(bad).array() += shift;
  return X;
}

}  // namespace

TEST(QRangeHt, PaperPartitionCountAndCoverage) {
  RangeHtOptions o;
  EXPECT_EQ(q_range_ht_partitions(o), static_cast<int>(std::ceil(200 * std::log(20.0))));
  o.partitions = 20;
  o.epsilon = 20;
  o.delta = 1e-3;
  o.parallel = true;
  int covered = 0;
  for (int s = 0; s < 20; ++s) {
    const RowMatrix X = heavy(20000, 3, 0.05, 4, 100 + s);
    SeededRng g(s);
    const auto r = q_range_ht(X, o, g);
    ASSERT_TRUE(r.has_value());
    EXPECT_NEAR(r->side, 50 / std::sqrt(0.05), 1e-9);
    // Bins of 80σ: the median of the part centres sits in the clean bin (−40, 40].
    covered += r->centre.cwiseAbs().maxCoeff() <= 40;
  }
  EXPECT_EQ(covered, 20);
  // The paper's split charges ε/m per part, m parts composed basically: the whole ε.
  o.parallel = false;
  const LedgerEntry e = q_range_ht_entry(o, 3);
  EXPECT_LE(e.loss.epsilon, o.epsilon * (1 + 1e-12));
  EXPECT_LE(e.loss.delta, o.delta * (1 + 1e-12));
  o.partitions = 5000;
  SeededRng g(1);
  EXPECT_THROW(q_range_ht(heavy(1000, 2, 0.05, 4, 1), o, g), InvalidArgument);
}

TEST(PrimeHt, LedgerStatesTheHeavyTailReleasesAndStaysWithinTheTarget) {
  for (auto profile : {Profile::practical, Profile::paper}) {
    const RowMatrix X = heavy(6000, 3, 0.05, 3, 7);
    PrimeOptions o;
    o.scale = std::vector<double>{1.0};
    o.clip_check_share = 0;
    o.privacy.epsilon = 4;
    o.privacy.delta = 1e-5;
    o.alpha = 0.05;
    o.profile = profile;
    o.fallback = false;
    o.T1 = 2;
    o.T2 = 2;
    SeededRng g(3);
    const auto r = prime_ht(X, o, g);
    EXPECT_LE(r.privacy.epsilon, o.privacy.epsilon * (1 + 1e-12));
    EXPECT_LE(r.privacy.delta, o.privacy.delta * (1 + 1e-12));
    EXPECT_TRUE(r.diagnostics["heavy_tailed"].get<bool>());
    bool mentions_M = false, mentions_ht_range = false;
    for (const auto& e : r.ledger) {
      mentions_M |= e.purpose.find("M - I") == std::string::npos &&
                    (e.purpose.find("lambda_max(M)") != std::string::npos ||
                     e.purpose.find("||M||") != std::string::npos);
      mentions_ht_range |= e.purpose.find("q_range-ht") != std::string::npos;
    }
    EXPECT_TRUE(mentions_M);
    EXPECT_EQ(mentions_ht_range, profile == Profile::paper);
  }
}

TEST(PrimeHt, RowPermutationGivesTheSameReleaseAndReplayMatches) {
  RowMatrix X = heavy(8000, 4, 0.1, 4, 9);
  for (int i = 0; i < 500; ++i) X.row(2000 + i) = X.row(5000);
  RowMatrix P(X.rows(), X.cols());
  for (Eigen::Index i = 0; i < X.rows(); ++i) P.row(i) = X.row((i * 7919) % X.rows());
  PrimeOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 50;
  o.privacy.delta = 1e-3;
  o.alpha = 0.1;
  o.fallback = false;
  SeededRng a(9), b(9);
  PrimeTrace trace;
  const auto r1 = prime_ht(X, o, a, nullptr, &trace);
  const auto r2 = prime_ht(P, o, b);
  ASSERT_EQ(r1.status, r2.status);
  EXPECT_EQ(r1.estimate, r2.estimate);
  if (!trace.rounds.empty())
    EXPECT_EQ(replay_filter(trace.rounds, trace.processed), trace.final_set);
}

TEST(PrimeHt, RejectsBadInput) {
  RowMatrix X = heavy(500, 2, 0.05, 3, 1);
  PrimeOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.alpha = 0.4;
  SeededRng g(1);
  EXPECT_THROW(prime_ht(X, o, g), InvalidArgument);
  o.alpha = 0.05;
  X(2, 1) = INFINITY;
  EXPECT_THROW(prime_ht(X, o, g), InvalidArgument);
}
