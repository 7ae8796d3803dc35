// PRIME primitives and invariants (docs/proofs/mean.md §6; addendum sensitivities).
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "dpstats/synthetic/shifted_cluster.hpp"
#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/private_filter.hpp"
#include "dpstats/mean/prime.hpp"
#include "dpstats/mean/prime_ht.hpp"

using namespace dpstats;

namespace {

Matrix random_symmetric(int d, double scale, std::uint64_t seed) {
  SeededRng g(seed);
  Matrix A(d, d);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j <= i; ++j) A(i, j) = A(j, i) = scale * standard_normal(g);
  return A;
}

// exp(A) by scaling and squaring with a 30-term Taylor series (reference for small d).
Matrix expm_reference(const Matrix& A) {
  const double norm = A.cwiseAbs().rowwise().sum().maxCoeff();
  int s = std::max(0, static_cast<int>(std::ceil(std::log2(norm + 1e-300))) + 1);
  const Matrix B = A / std::ldexp(1.0, s);
  Matrix term = Matrix::Identity(A.rows(), A.cols()), sum = term;
  for (int k = 1; k <= 30; ++k) {
    term = term * B / k;
    sum += term;
  }
  for (int i = 0; i < s; ++i) sum = sum * sum;
  return sum;
}

RowMatrix gaussian_rows(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  SeededRng g(seed);
  RowMatrix X(n, d);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < d; ++j) X(i, j) = standard_normal(g);
  return X;
}

// d_Δ between two index sets (docs/proofs/mean.md): max(|S \ S'|, |S' \ S|).
std::size_t d_delta(std::vector<std::uint32_t> a, std::vector<std::uint32_t> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<std::uint32_t> ab, ba;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(ab));
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(ba));
  return std::max(ab.size(), ba.size());
}

}  // namespace

// ---- MMW weights (docs/proofs/mean.md) ----
TEST(PrimeMmw, PsdTraceOneAndEqualsTheMatrixExponential) {
  for (int d : {1, 3, 8, 20}) {
    const Matrix A = random_symmetric(d, 1.0, 10 + d);
    const double eta = 0.7;
    const Matrix U = mmw_weights(A, eta);
    EXPECT_NEAR(U.trace(), 1.0, 1e-12);
    EXPECT_LE((U - U.transpose()).cwiseAbs().maxCoeff(), 1e-15);
    Eigen::SelfAdjointEigenSolver<Matrix> es(U);
    EXPECT_GE(es.eigenvalues().minCoeff(), -1e-15);
    const Matrix E = expm_reference(eta * A);
    const Matrix ref = E / E.trace();
    EXPECT_LE((U - ref).cwiseAbs().maxCoeff(), 1e-10) << "d=" << d;
  }
}

TEST(PrimeMmw, ShiftInvariantFiniteAndLimits) {
  const int d = 6;
  const Matrix A = random_symmetric(d, 1.0, 3);
  const Matrix U = mmw_weights(A, 1.3);
  const Matrix Us = mmw_weights(A + 5.0 * Matrix::Identity(d, d), 1.3);
  EXPECT_LE((U - Us).cwiseAbs().maxCoeff(), 1e-12);
  // Eigenvalues up to 1e6: the max-shift softmax never overflows.
  const Matrix big = mmw_weights(A * 1e6, 1.0);
  EXPECT_TRUE(big.allFinite());
  EXPECT_NEAR(big.trace(), 1.0, 1e-12);
  // η -> 0: I/d. η -> ∞: the top eigenprojector.
  EXPECT_LE((mmw_weights(A, 0.0) - Matrix::Identity(d, d) / d).cwiseAbs().maxCoeff(), 1e-12);
  Eigen::SelfAdjointEigenSolver<Matrix> es(A);
  const Vector v = es.eigenvectors().col(d - 1);
  EXPECT_LE((mmw_weights(A, 1e9) - v * v.transpose()).cwiseAbs().maxCoeff(), 1e-9);
  EXPECT_THROW(mmw_weights(A, -1.0), InvalidArgument);
}

// A wrong element-wise exp (the authors' code, pitfall 4.5) differs: the test can fail.
TEST(PrimeMmw, IsNotTheElementwiseExponential) {
  const Matrix A = random_symmetric(5, 1.0, 4);
  Matrix W = A.array().exp().matrix();
  W /= W.trace();
  EXPECT_GT((mmw_weights(A, 1.0) - W).cwiseAbs().maxCoeff(), 1e-3);
}

// ---- symmetric noise (docs/proofs/mean.md) ----
TEST(PrimeSymmetricNoise, ExactlySymmetricWithTheRightVariances) {
  const int d = 4, reps = 4000;
  const auto dim = static_cast<std::size_t>(d * (d + 1) / 2);
  for (bool goe : {true, false}) {
    const auto g = GaussianMechanism::from_sigma(1.0, 2.0, dim);
    const double s2 = g.sigma() * g.sigma();
    SeededRng rng(goe ? 1 : 2);
    double diag = 0, offd = 0;
    const Matrix M = random_symmetric(d, 1.0, 9);
    for (int r = 0; r < reps; ++r) {
      const Matrix N = symmetric_noise_release(M, g, goe, rng) - M;
      ASSERT_EQ(N, N.transpose());
      for (int a = 0; a < d; ++a) {
        diag += N(a, a) * N(a, a);
        for (int b = a + 1; b < d; ++b) offd += N(a, b) * N(a, b);
      }
    }
    diag /= reps * d;
    offd /= reps * d * (d - 1) / 2.0;
    // Variance estimates from 16000 / 24000 draws: relative s.e. <= 1.2%; 6 s.e. tolerance.
    EXPECT_NEAR(diag / s2, 1.0, 0.07) << "goe=" << goe;
    EXPECT_NEAR(offd / s2, goe ? 0.5 : 1.0, 0.06) << "goe=" << goe;
  }
}

// ---- top-k with value-based ties (docs/proofs/mean.md) ----
TEST(PrimeTopK, PermutationInvariantAndDeterministicOnTies) {
  RowMatrix X(8, 2);
  X << 1, 0,  //
      2, 0,   //
      1, 5,   //
      1, 0,   // duplicate of row 0
      0, 9,   //
      3, 3,   //
      1, 5,   // duplicate of row 2
      -1, 0;
  std::vector<float> score = {1, 1, 1, 1, 1, 2, 1, 0.5f};  // heavy ties
  std::vector<std::uint32_t> S(8);
  std::iota(S.begin(), S.end(), 0u);
  const auto top = top_k_tiebreak(score, X, S, 4);
  // Rank: row 5 (score 2), then ties at 1 by values: (2,0) row 1, then (1,5) rows 2 and 6.
  ASSERT_EQ(top.size(), 4u);
  EXPECT_EQ(top[0], 5u);
  EXPECT_EQ(top[1], 1u);
  EXPECT_EQ(top[2], 2u);
  EXPECT_EQ(top[3], 6u);
  // A permuted S gives the same selected values.
  std::vector<std::uint32_t> P = {7, 3, 6, 0, 5, 2, 4, 1};
  std::vector<float> ps(8);
  for (int i = 0; i < 8; ++i) ps[i] = score[P[i]];
  const auto top2 = top_k_tiebreak(ps, X, P, 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(X.row(top2[i]), X.row(top[i]));
  EXPECT_EQ(top_k_tiebreak(score, X, S, 100).size(), 8u);  // k capped at |S|
}

// ---- DPthreshold (docs/proofs/mean.md) ----
TEST(PrimeThreshold, BinsAndRule) {
  EXPECT_EQ(dp_threshold_bin(0.2, 10), 0);
  EXPECT_EQ(dp_threshold_bin(0.25, 10), 1);   // [1/4, 1/2)
  EXPECT_EQ(dp_threshold_bin(0.49, 10), 1);
  EXPECT_EQ(dp_threshold_bin(0.5, 10), 2);    // [1/2, 1)
  EXPECT_EQ(dp_threshold_bin(1.0, 10), 3);
  EXPECT_EQ(dp_threshold_bin(1e9, 10), 10);   // last bin open-ended (D11)
  // All mass in bin j = 6 ([8, 16)): the rule holds at ℓ = 6 only if 0 >= 0.31 ψ; with ψ > 0 the
  // largest qualifying ℓ is the one whose edge leaves enough excess: Σ_{j>=ℓ}(τ̃_j − τ̃_ℓ)h_j.
  std::vector<double> h(10, 0.0);
  h[5] = 0.1;  // bin 6, lower edge 8
  // ℓ = 5 (edge 4): excess (8 − 4)·0.1 = 0.4; ℓ = 4 (edge 2): 0.6.
  EXPECT_EQ(dp_threshold_rule(h, 0.39 / 0.31), 4.0);
  EXPECT_EQ(dp_threshold_rule(h, 0.41 / 0.31), 2.0);
  EXPECT_EQ(dp_threshold_rule(h, 0.0), std::ldexp(1.0, 10 - 3));  // ψ̃ <= 0: ℓ = L
  // All-zero histogram with ψ̃ > 0: the fallback 1/4.
  EXPECT_EQ(dp_threshold_rule(std::vector<double>(10, 0.0), 1.0), 0.25);
  for (double psi : {0.01, 0.3, 2.0, 50.0}) {
    const double r = dp_threshold_rule(h, psi);
    EXPECT_EQ(std::ldexp(1.0, std::ilogb(r)), r);  // a power of two 2^{j-3}
  }
}

// ---- filter contraction (Lemmas 2.2 / F.1; docs/proofs/mean.md item 9) ----
TEST(PrimeFilter, NeighboursStayNeighboursOverFiftyRounds) {
  for (int trial = 0; trial < 12; ++trial) {
    SeededRng g(100 + trial);
    const std::int64_t n = 60, d = 3;
    RowMatrix X = gaussian_rows(n, d, 200 + trial);
    // 30% duplicates and rounded values: ties in scores and values.
    for (std::int64_t i = 0; i < n; ++i) {
      if (i % 3 == 0) X.row(i) = X.row(0);
      X.row(i) = (X.row(i) * 2).array().round() / 2;
    }
    const bool add_remove = trial % 2 == 1;
    RowMatrix Y = X;
    if (add_remove) {
      Y.conservativeResize(n + 1, d);
      Y.row(n) = Eigen::RowVectorXd::Constant(d, 2.5);
    } else {
      Y.row(trial % n) = Eigen::RowVectorXd::Constant(d, trial % 4 == 0 ? 0.0 : -3.0);
    }
    std::vector<std::uint32_t> S(n), T(Y.rows());
    std::iota(S.begin(), S.end(), 0u);
    std::iota(T.begin(), T.end(), 0u);
    for (int round = 0; round < 50; ++round) {
      FilterRound p;
      p.centre = Vector::Zero(d);
      for (int j = 0; j < d; ++j) p.centre[j] = 0.3 * standard_normal(g);
      const Matrix A = random_symmetric(d, 1.0, 1000 * trial + round);
      p.U = mmw_weights(A, 1.0 + round % 3);
      p.rho = std::ldexp(1.0, static_cast<int>(g.uniform_below(6)) - 2);
      p.Z = g.uniform01();
      p.k = 1 + static_cast<std::int64_t>(g.uniform_below(6));
      S = filter_step(p, X, S);
      T = filter_step(p, Y, T);
      ASSERT_LE(d_delta(S, T), 1u) << "trial " << trial << " round " << round;
    }
  }
}

// A per-point uniform (the authors' code, D9) breaks contraction: the same harness detects it.
TEST(PrimeFilter, PerPointUniformsBreakContraction) {
  bool broken = false;
  for (int trial = 0; trial < 50 && !broken; ++trial) {
    SeededRng g(trial);
    const std::int64_t n = 40;
    RowMatrix X = gaussian_rows(n, 2, 500 + trial);
    RowMatrix Y = X;
    Y.row(0) << 4, 4;
    std::vector<std::uint32_t> S(n), T(n);
    std::iota(S.begin(), S.end(), 0u);
    std::iota(T.begin(), T.end(), 0u);
    for (int round = 0; round < 20 && !broken; ++round) {
      // Removal with an independent uniform per point and per dataset run.
      auto step = [&](const RowMatrix& D, std::vector<std::uint32_t>& set) {
        std::vector<std::uint32_t> kept;
        for (auto i : set)
          if (D.row(i).squaredNorm() < 4 * g.uniform01() * 2) kept.push_back(i);
        set = kept;
      };
      step(X, S);
      step(Y, T);
      broken = d_delta(S, T) > 1;
    }
  }
  EXPECT_TRUE(broken);
}

// ---- sensitivities of the practical profile (addendum; docs/proofs/mean.md item 11) ----
TEST(PrimeSensitivity, EmpiricalChangesStayWithinTheBounds) {
  const int d = 4;
  const double r = 3.0, D = 2 * r;
  SeededRng g(77);
  auto in_ball = [&](void) {
    Vector x(d);
    for (int j = 0; j < d; ++j) x[j] = standard_normal(g);
    return Vector(x * (r * std::pow(g.uniform01(), 0.25) / x.norm()));
  };
  for (int trial = 0; trial < 300; ++trial) {
    const std::int64_t n = 30;
    const std::int64_t m = 10 + static_cast<std::int64_t>(g.uniform_below(20));
    std::vector<Vector> S(m);
    for (auto& x : S) x = in_ball();
    std::vector<Vector> T = S;
    const int kind = trial % 3;  // replace, add, remove
    if (kind == 0) T[0] = in_ball();
    if (kind == 1) T.push_back(in_ball());
    if (kind == 2) T.pop_back();
    // Extremes: points on the sphere in opposite directions.
    if (trial % 7 == 0 && kind == 0) {
      S[0] = Vector::Unit(d, 0) * r;
      T[0] = -Vector::Unit(d, 0) * r;
    }
    auto stats = [&](const std::vector<Vector>& P, Matrix& M, Vector& mean) {
      Vector mu = Vector::Zero(d);
      for (auto& x : P) mu += x;
      mean = mu / std::max<double>(P.size(), 0.75 * n);
      mu /= static_cast<double>(P.size());
      M = Matrix::Zero(d, d);
      for (auto& x : P) M += (x - mu) * (x - mu).transpose();
      M /= static_cast<double>(n);
    };
    Matrix M1, M2;
    Vector m1, m2;
    stats(S, M1, m1);
    stats(T, M2, m2);
    const Matrix I = Matrix::Identity(d, d);
    auto lmax = [](const Matrix& A) {
      return Eigen::SelfAdjointEigenSolver<Matrix>(A).eigenvalues().maxCoeff();
    };
    const double tol = 1 + 1e-12;
    EXPECT_LE(std::abs(lmax(M1 - I) - lmax(M2 - I)), D * D / n * tol);
    EXPECT_LE((M1 - M2).norm(), std::sqrt(2.0) * D * D / n * tol);
    const Matrix U = mmw_weights(random_symmetric(d, 1.0, trial), 2.0);
    EXPECT_LE(std::abs(((M1 - M2) * U).trace()), D * D / n * tol);
    EXPECT_LE((m1 - m2).norm(), D / (0.75 * n) * tol);
  }
}

// ---- the full algorithm: accounting, validation, invariances ----
TEST(Prime, ChargedLedgerNeverExceedsTheTarget) {
  for (auto profile : {Profile::practical, Profile::paper})
    for (std::int64_t d : {1, 3, 12})
      for (int T : {1, 2, 4}) {
        SeededRng g(d * 10 + T);
        const RowMatrix X = shifted_cluster(3000, d, 0.05, 1.5, g);
        PrimeOptions o;
        o.scale = std::vector<double>{1.0};
        o.clip_check_share = 0;
        o.privacy.epsilon = 2;
        o.privacy.delta = 1e-5;
        o.profile = profile;
        o.T1 = T;
        o.T2 = 5 - T;
        o.fallback = false;
        const auto r = prime(X, o, g);
        EXPECT_LE(r.privacy.epsilon, o.privacy.epsilon * (1 + 1e-12));
        EXPECT_LE(r.privacy.delta, o.privacy.delta * (1 + 1e-12));
        EXPECT_TRUE(r.privacy.certified);
        int releases = 0;
        for (const auto& e : r.ledger) releases += e.count;
        // Practical: range + d medians + 6 T1T2 + 1; paper: range + 2 T1 + 1 + one folded inner.
        EXPECT_EQ(releases, profile == Profile::practical
                                ? 1 + static_cast<int>(d) + 6 * T * (5 - T) + 1
                                : 1 + 2 * T + 1 + 1);
      }
}

TEST(Prime, PaperProfileBudgetsAreTheCardsGoldenValues) {
  // ε = 1, δ = 1e-5, T1 = 3, T2 = 2: the filter gets 0.99(ε, δ); outer half over 2T1 + 1 = 7
  // releases (D1); inner k = 6·T1·T2 = 36 mechanisms by Lemma G.13.
  SeededRng g(1);
  const RowMatrix X = shifted_cluster(2000, 2, 0.05, 1.5, g);
  PrimeOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 1;
  o.privacy.delta = 1e-5;
  o.profile = Profile::paper;
  o.T1 = 3;
  o.T2 = 2;
  const auto r = prime(X, o, g);
  EXPECT_NEAR(r.diagnostics["eps1"].get<double>(), 0.495 / 7, 1e-12);
  EXPECT_NEAR(r.diagnostics["delta1"].get<double>(), 0.99e-5 / 2, 1e-18);
  const double delta_in = 0.99e-5 / 2;
  EXPECT_NEAR(r.diagnostics["eps2"].get<double>(),
              0.495 / (2 * std::sqrt(72 * std::log(2 / delta_in))), 1e-12);
  EXPECT_NEAR(r.diagnostics["delta2"].get<double>(), delta_in / 72, 1e-20);
}

TEST(Prime, RejectsBadInputBeforeAnyNoise) {
  SeededRng g(1);
  RowMatrix X = shifted_cluster(500, 3, 0.05, 1.5, g);
  PrimeOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  for (double a : {0.0, -0.1, 0.3, std::nan("")}) {
    o.alpha = a;
    EXPECT_THROW(prime(X, o, g), InvalidArgument) << a;
  }
  o.alpha = 0.05;
  o.topk_multiplier = 0.5;
  EXPECT_THROW(prime(X, o, g), InvalidArgument);
  o.topk_multiplier = 2;
  o.privacy.epsilon = 0;
  EXPECT_THROW(prime(X, o, g), InvalidArgument);
  o.privacy.epsilon = 1;
  o.privacy.delta = 0;
  EXPECT_THROW(prime(X, o, g), InvalidArgument);
  o.privacy.delta = 1e-6;
  X(7, 1) = std::nan("");
  EXPECT_THROW(prime(X, o, g), InvalidArgument);
  EXPECT_THROW(parse_enum<Profile>("fast"), InvalidArgument);
}

TEST(Prime, RowPermutationGivesTheSameRelease) {
  SeededRng g(5);
  RowMatrix X = shifted_cluster(4000, 4, 0.1, 3.0, g);
  for (int i = 0; i < 400; ++i) X.row(i) = X.row(1000);  // duplicates
  RowMatrix P(X.rows(), X.cols());
  for (Eigen::Index i = 0; i < X.rows(); ++i) P.row(i) = X.row((i * 7919) % X.rows());
  for (auto profile : {Profile::practical, Profile::paper}) {
    PrimeOptions o;
    o.scale = std::vector<double>{1.0};
    o.clip_check_share = 0;
    o.privacy.epsilon = 50;
    o.privacy.delta = 1e-3;
    o.alpha = 0.1;
    o.profile = profile;
    o.fallback = false;
    SeededRng a(9), b(9);
    const auto r1 = prime(X, o, a);
    const auto r2 = prime(P, o, b);
    ASSERT_EQ(r1.status, r2.status);
    EXPECT_EQ(r1.estimate, r2.estimate);
  }
}

TEST(Prime, ReplayReproducesTheRunsSets) {
  SeededRng g(3);
  const RowMatrix X = shifted_cluster(20000, 5, 0.05, 2.0, g);
  PrimeOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 20;
  o.privacy.delta = 1e-3;
  o.fallback = false;
  PrimeTrace trace;
  SeededRng rng(4);
  const auto r = prime(X, o, rng, nullptr, &trace);
  ASSERT_EQ(r.status, Status::ok);
  ASSERT_FALSE(trace.rounds.empty());
  EXPECT_EQ(replay_filter(trace.rounds, trace.processed), trace.final_set);
}

TEST(Prime, FallbackIsPublicAndSaysSo) {
  SeededRng g(1);
  const RowMatrix X = shifted_cluster(3000, 20, 0.05, 1.5, g);
  PrimeOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 1;
  o.privacy.delta = 1e-5;
  const auto f = prime_feasibility(3000, 20, o);
  EXPECT_FALSE(f.feasible);
  const auto r = prime(X, o, g);
  EXPECT_EQ(r.diagnostics.value("fallback", ""), "dp-mean");
  EXPECT_TRUE(prime_feasibility(1000000, 10, PrimeOptions{.privacy = {10, 0.01}, .scale = std::vector<double>{1.0}, .clip_check_share = 0}).feasible);
}

// Issue 18: PRIME, PRIME-ht and the filter refuse several ranks before anything is read or
// charged; one rank (in-process) runs as before.
TEST(Prime, RunsOnOneRankAndRefusesRanksThatDisagree) {
  // PRIME, PRIME-ht and the filter run on several ranks (test_distributed_prime.cpp,
  // test_distributed_filter.cpp); ranks whose options differ refuse before the first pass.
  SeededRng g(31);
  const RowMatrix X = shifted_cluster(2000, 3, 0.05, 1.5, g);
  for (int ranks : {1, 2}) {
    run_local_ranks(ranks, [&](Communicator& comm) {
      PrimeOptions o;
      o.scale = std::vector<double>{1.0};
      o.privacy.epsilon = 4;
      o.privacy.delta = 1e-6;
      o.run.comm = &comm;
      PrivateFilterOptions f;
      f.scale = o.scale;
      f.privacy = o.privacy;
      f.run.comm = &comm;
      SeededRng r(1);
      if (ranks == 1) {
        EXPECT_NO_THROW(prime(X, o, r));
        return;
      }
      o.alpha = comm.rank() == 0 ? 0.05 : 0.1;
      f.alpha = o.alpha;
      EXPECT_THROW(prime(X, o, r), InvalidArgument);
      EXPECT_THROW(prime_ht(X, o, r), InvalidArgument);
      EXPECT_THROW(private_filter(X, f, r), InvalidArgument);
    });
  }
}

TEST(PrimeChiSquare, QuantilesMatchKnownValues) {
  EXPECT_NEAR(chi_square_upper_quantile(1, 0.05), 3.841459, 1e-5);
  EXPECT_NEAR(chi_square_upper_quantile(10, 0.01), 23.209251, 1e-5);
  EXPECT_NEAR(chi_square_upper_quantile(50, 1e-6), 112.608092, 1e-4);
}
