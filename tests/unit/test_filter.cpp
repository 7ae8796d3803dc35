// Private iterative filter (card §2.5, Alg 7 + 8) and the d = 1 exponential-time reference
// (card §2.9, Alg 2): budgets, golden paper values, determinism, permutation invariance, replay,
// filter contraction with the single-direction rounds, exact resilience against brute force.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "dpstats/data/synthetic.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/exp_time_mean.hpp"
#include "dpstats/mean/private_filter.hpp"

using namespace dpstats;

namespace {

std::size_t d_delta(std::vector<std::uint32_t> a, std::vector<std::uint32_t> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<std::uint32_t> ab, ba;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(ab));
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(ba));
  return std::max(ab.size(), ba.size());
}

}  // namespace

TEST(PrivateFilter, ChargedLedgerNeverExceedsTheTarget) {
  for (auto profile : {Profile::practical, Profile::paper})
    for (std::int64_t d : {1, 4})
      for (int T : {3, 12}) {
        SeededRng g(d * 10 + T);
        const RowMatrix X = shifted_cluster(4000, d, 0.05, 1.5, g);
        PrivateFilterOptions o;
        o.scale = std::vector<double>{1.0};
        o.clip_check_share = 0;
        o.privacy.epsilon = 2;
        o.privacy.delta = 1e-5;
        o.profile = profile;
        o.T = T;
        const auto r = private_filter(X, o, g);
        EXPECT_LE(r.privacy.epsilon, o.privacy.epsilon * (1 + 1e-12));
        EXPECT_LE(r.privacy.delta, o.privacy.delta * (1 + 1e-12));
        EXPECT_TRUE(r.privacy.certified);
        int releases = 0;
        for (const auto& e : r.ledger) releases += e.count;
        // Practical: range + d medians + 3T + final; paper: range + one folded 4T composition.
        EXPECT_EQ(releases, profile == Profile::practical ? 1 + static_cast<int>(d) + 3 * T + 1
                                                               : 2);
      }
}

TEST(PrivateFilter, PaperBudgetsAreAlg8sGoldenValues) {
  // ε = 1, δ = 1e-5, T = 5: DPfilter gets 0.99(ε, δ); ε₁ = min(ε, 0.9)/(4√(2T ln(2/δ))),
  // δ₁ = δ/(8T) (Alg 8 line 1); the n-check (4/ε₁) ln(1/(2δ₁)) fails at n = 2000: abstain.
  SeededRng g(1);
  const RowMatrix X = shifted_cluster(2000, 2, 0.05, 1.5, g);
  PrivateFilterOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 1;
  o.privacy.delta = 1e-5;
  o.profile = Profile::paper;
  o.T = 5;
  const auto r = private_filter(X, o, g);
  const double eps_f = 0.99, delta_f = 0.99e-5;
  const double eps1 = 0.9 / (4 * std::sqrt(10 * std::log(2 / delta_f)));
  EXPECT_NEAR(r.diagnostics["eps1"].get<double>(), eps1, 1e-12 * eps_f);
  EXPECT_NEAR(r.diagnostics["delta1"].get<double>(), delta_f / 40, 1e-20);
  EXPECT_EQ(r.status, Status::abstained);
  EXPECT_NE(r.diagnostics["abstained"].get<std::string>().find("Alg 8 line 2"), std::string::npos);
}

TEST(PrivateFilter, RowPermutationGivesTheSameRelease) {
  SeededRng g(5);
  RowMatrix X = shifted_cluster(6000, 4, 0.1, 3.0, g);
  for (int i = 0; i < 600; ++i) X.row(i) = X.row(3000);  // duplicates
  RowMatrix P(X.rows(), X.cols());
  for (Eigen::Index i = 0; i < X.rows(); ++i) P.row(i) = X.row((i * 7919) % X.rows());
  for (auto profile : {Profile::practical, Profile::paper}) {
    PrivateFilterOptions o;
    o.scale = std::vector<double>{1.0};
    o.clip_check_share = 0;
    o.privacy.epsilon = 50;
    o.privacy.delta = 1e-3;
    o.alpha = 0.1;
    o.profile = profile;
    o.T = 10;
    SeededRng a(9), b(9);
    const auto r1 = private_filter(X, o, a);
    const auto r2 = private_filter(P, o, b);
    ASSERT_EQ(r1.status, r2.status);
    EXPECT_EQ(r1.estimate, r2.estimate);
  }
}

TEST(PrivateFilter, ReplayReproducesTheRunAndNeighboursStayNeighbours) {
  SeededRng g(3);
  const RowMatrix X = shifted_cluster(20000, 5, 0.05, 2.0, g);
  PrivateFilterOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 20;
  o.privacy.delta = 1e-3;
  o.T = 30;
  PrimeTrace trace;
  SeededRng rng(4);
  const auto r = private_filter(X, o, rng, nullptr, &trace);
  ASSERT_EQ(r.status, Status::ok);
  ASSERT_GE(trace.rounds.size(), 2u);
  EXPECT_EQ(replay_filter(trace.rounds, trace.processed), trace.final_set);
  // The recorded single-direction rounds (U = v vᵀ, ρ = D², shared Z) keep a neighbour of the
  // processed data within d_Δ <= 1 at every round (P6 contraction).
  RowMatrix Y = trace.processed;
  Y.row(17) = trace.processed.row(0) * 0;  // replace one row by the centre
  Y.row(17)[0] = trace.clip_radius * 0.9;  // ... pushed out along the first axis
  std::vector<std::uint32_t> S(X.rows()), T(X.rows());
  std::iota(S.begin(), S.end(), 0u);
  std::iota(T.begin(), T.end(), 0u);
  for (const auto& round : trace.rounds) {
    S = filter_step(round, trace.processed, S);
    T = filter_step(round, Y, T);
    ASSERT_LE(d_delta(S, T), 1u);
  }
}

TEST(PrivateFilter, RejectsBadInputBeforeAnyNoise) {
  SeededRng g(1);
  RowMatrix X = shifted_cluster(500, 3, 0.05, 1.5, g);
  PrivateFilterOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  for (double a : {0.0, 0.3, std::nan("")}) {
    o.alpha = a;
    EXPECT_THROW(private_filter(X, o, g), InvalidArgument) << a;
  }
  o.alpha = 0.05;
  o.T = -1;
  EXPECT_THROW(private_filter(X, o, g), InvalidArgument);
  o.T = 0;
  X(3, 2) = std::nan("");
  EXPECT_THROW(private_filter(X, o, g), InvalidArgument);
}

// ---- exponential-time reference (d = 1) ----

namespace {
// R(S) by brute force over every S' and every T (card Def. 4.2), for tiny n.
double resilience_brute(const std::vector<double>& x, double alpha) {
  const std::size_t n = x.size();
  const auto removed = static_cast<std::size_t>(std::ceil(2 * alpha * n));
  const std::size_t keep = n - removed;
  const auto inner = std::min<std::size_t>(static_cast<std::size_t>(std::floor(alpha * keep)), keep - 1);
  double best = 1e300;
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    if (static_cast<std::size_t>(__builtin_popcount(mask)) != keep) continue;
    std::vector<double> s;
    for (std::size_t i = 0; i < n; ++i)
      if (mask >> i & 1) s.push_back(x[i]);
    const double mu = std::accumulate(s.begin(), s.end(), 0.0) / keep;
    double worst = 0;
    for (unsigned t = 0; t < (1u << keep); ++t) {
      if (static_cast<std::size_t>(__builtin_popcount(t)) != keep - inner) continue;
      double sum = 0;
      for (std::size_t i = 0; i < keep; ++i)
        if (t >> i & 1) sum += s[i];
      worst = std::max(worst, std::abs(sum / (keep - inner) - mu));
    }
    best = std::min(best, worst);
  }
  return best;
}
}  // namespace

TEST(ExpTimeMean, ExactResilienceMatchesBruteForceAndWindowIsAnUpperBound) {
  SeededRng g(7);
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<double> x(12);
    for (auto& v : x) v = standard_normal(g) * (trial % 2 ? 1.0 : 3.0);
    x[0] = 6;  // an outlier
    const double alpha = 0.1;
    const double exact = resilience_exact(x, alpha);
    EXPECT_NEAR(exact, resilience_brute(x, alpha), 1e-12) << trial;
    EXPECT_GE(resilience_window(x, alpha), exact - 1e-12);
  }
}

TEST(ExpTimeMean, ReleasesNearTheTrimmedMeanAndRefusesWhatItCannotDo) {
  SeededRng g(2);
  RowMatrix X(20, 1);
  for (int i = 0; i < 20; ++i) X(i, 0) = standard_normal(g);
  X(0, 0) = 5;
  X(1, 0) = 5;
  ExpTimeMeanOptions o;
  o.scale = std::vector<double>{1.0};
  o.privacy.epsilon = 300;  // Lemma H.11's n-check at n = 20 needs a large ε
  o.privacy.delta = 0.01;
  o.alpha = 0.1;
  const auto r = exp_time_mean(X, o, g);
  ASSERT_EQ(r.status, Status::ok);
  EXPECT_TRUE(r.privacy.certified);
  EXPECT_LE(r.privacy.epsilon, o.privacy.epsilon * (1 + 1e-12));
  std::vector<double> x(X.data(), X.data() + 20);
  EXPECT_NEAR(r.estimate[0], trimmed_mean_3alpha(x, 0.1), 0.1);
  // Too small n for the privacy budget: abstains (public check).
  o.privacy.epsilon = 1;
  EXPECT_EQ(exp_time_mean(X, o, g).status, Status::abstained);
  // d != 1 and exact R at large n are errors, not silent approximations.
  RowMatrix Y(50, 2);
  Y.setZero();
  EXPECT_THROW(exp_time_mean(Y, o, g), InvalidArgument);
  RowMatrix Z(20000, 1);
  for (int i = 0; i < 20000; ++i) Z(i, 0) = standard_normal(g);
  EXPECT_THROW(exp_time_mean(Z, o, g), InvalidArgument);
  o.window_resilience = true;
  const auto w = exp_time_mean(Z, o, g);
  EXPECT_FALSE(w.privacy.certified);
  ASSERT_EQ(w.status, Status::ok);
  EXPECT_LT(std::abs(w.estimate[0]), 0.1);
}
