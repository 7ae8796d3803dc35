// Alg 2/3 and the non-smooth variant (docs/proofs/user-level.md §2.3–2.4, §2.5): AC-SA contraction,
// P6 degrees, golden schedules (worked example §2.7, smoothed closed forms), exact gradient counts,
// user disjointness, the paper filter dropping one adversarial user exactly, the practical
// profile's per-step influence bound, refusals and the privacy report.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "dpstats/error.hpp"
#include "dpstats/user_level/accelerated.hpp"
#include "dpstats/solvers/smoothing.hpp"
#include "dpstats/synthetic/synthetic_users.hpp"
#include "dpstats/user_level/user_level.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "guarantee.hpp"

using namespace dpstats;
using namespace dpstats::optimize;

namespace {
ProblemConstants worked_example() {
  ProblemConstants k;
  k.L = 1;
  k.R = 2;
  k.beta = 0.25;
  k.d = 20;
  return k;
}

UserDataset task_data(std::int64_t n, std::int64_t m, std::int64_t d, std::uint64_t seed,
                      std::int64_t adversaries = 0) {
  UserTask t;
  t.n = n;
  t.m = m;
  t.d = d;
  t.adversaries = adversaries;
  SeededRng rng(seed);
  const Vector w = make_w_star(t, rng);
  return make_user_task(t, w, rng);
}

// n users with identical items (a = 0.8, y = +1), d = 1; optionally user `bad` is an adversary
// with the feature at the norm bound on the other side (a = −1, y = +1): its logistic gradient
// σ(x) is at least 0.3 away from the honest −0.8·σ(−0.8x) everywhere on [−3, 3].
UserDataset identical_users(std::int64_t n, std::int64_t m, std::int64_t bad = -1) {
  RowMatrix X(n * m, 1);
  Vector y(n * m);
  for (std::int64_t u = 0; u < n; ++u)
    for (std::int64_t k = 0; k < m; ++k) {
      X(u * m + k, 0) = u == bad ? -1.0 : 0.8;
      y[u * m + k] = 1.0;
    }
  return UserDataset(std::move(X), std::move(y), m, 1.0, 1.0);
}
}  // namespace

TEST(Acsa, RestartedStageHalvesTheErrorOnAQuadratic) {
  // f(x) = ½ Σ a_i x_i², a in [1, 100]: μ = 1, L_f = 100, κ = 100; N_s = ⌈2√2·√100⌉ = 29.
  const int d = 5;
  Vector a(d);
  a << 1, 3, 10, 30, 100;
  const Ball X(Vector::Zero(d), 1e6);
  Vector x0 = Vector::Constant(d, 1.0);
  auto f = [&](const Vector& x) { return 0.5 * (a.array() * x.array().square()).sum(); };
  Acsa acsa(x0, 1, 100, X);
  const int Ns = static_cast<int>(std::ceil(2 * std::sqrt(2.0) * 10));
  double prev = f(x0);
  for (int stage = 0; stage < 3; ++stage) {
    for (int t = 0; t < Ns; ++t) {
      const Vector y = acsa.query();
      acsa.step((a.array() * y.array()).matrix());
    }
    const double now = f(acsa.output());
    EXPECT_LE(now, 0.5 * prev) << "stage " << stage;
    prev = now;
    acsa.restart();
  }
  // First step is x_1 = Π(x_0 − G/(μ + 2L_f)); iterates stay in a small ball.
  const Ball small(Vector::Zero(d), 0.5);
  Acsa b(x0, 1, 100, small);
  EXPECT_TRUE(small.contains(b.query(), 1e-12));
  b.step(Vector::Constant(d, 1000.0));
  EXPECT_TRUE(small.contains(b.output(), 1e-12));
}

TEST(ConcentrationDegrees, IdenticalFarAndBoundaryPoints) {
  RowMatrix Q = RowMatrix::Zero(12, 3);
  auto h = concentration_degrees(Q, 0.1);
  for (auto v : h) EXPECT_EQ(v, 12);
  for (int j = 0; j < 12; ++j) Q(j, 0) = 10.0 * j;
  h = concentration_degrees(Q, 1.0);
  for (auto v : h) EXPECT_EQ(v, 1);
  // Points at distance exactly r count (<=), even where the Gram trick cancels.
  RowMatrix P(2, 2);
  P << 1e4, 0, 1e4 + 0.3, 0.4;  // distance 0.5
  h = concentration_degrees(P, 0.5);
  EXPECT_EQ(h[0], 2);
  EXPECT_EQ(h[1], 2);
}

TEST(SmoothingBall, SamplesAreUniformInTheBall) {
  SeededRng rng(3);
  const int d = 4, N = 20000;
  double sq = 0;
  Vector mean = Vector::Zero(d);
  for (int i = 0; i < N; ++i) {
    const Vector u = sample_ball(d, 2.0, rng);
    ASSERT_LE(u.norm(), 2.0 + 1e-12);
    sq += u.squaredNorm();
    mean += u;
  }
  // E‖u‖² = r²·d/(d+2) = 8/3; sd of ‖u‖² <= 4, so 6 se ≈ 0.17.
  EXPECT_NEAR(sq / N, 8.0 / 3, 0.17);
  EXPECT_LT((mean / N).norm(), 0.1);
}

TEST(Alg3Plan, PaperScheduleValuesAtTheWorkedExample) {
  const auto P = plan_alg3(1 << 20, 64, 1.0, 1e-9, worked_example(), 0.1);
  EXPECT_EQ(P.profile, Profile::paper);
  double grads = 0;
  for (const auto& ph : P.phases) {
    grads += static_cast<double>(ph.T_i) * static_cast<double>(ph.K_i) * 64;
    EXPECT_NEAR(ph.L_f, 0.25 + ph.lambda_i, 1e-12 * ph.L_f);
    EXPECT_EQ(ph.stage_length,
              std::min<std::int64_t>(ph.T_i, static_cast<std::int64_t>(std::ceil(
                                                 2 * std::sqrt(2.0) * std::sqrt(ph.L_f / ph.lambda_i)))));
  }
  EXPECT_DOUBLE_EQ(P.gradient_evaluations, grads);
  // Phase 1: N_s = ⌈2√2·√((0.25 + 4.737e-4)/4.737e-4)⌉ = 66.
  EXPECT_EQ(P.phases.front().stage_length, 66);
  EXPECT_FALSE(P.certified);  // infeasible from phase 15 (errata)
}

TEST(Alg3Plan, SmoothedScheduleClosedForms) {
  // Thm D.3: r = R√d/(εn√m), β_r = L√d/r = (L/R)·ε·n·√m, λ = (L/R)/√(mn).
  Alg3Options o;
  o.profile = Profile::paper;
  o.q = 0.1;
  auto k = worked_example();
  k.beta.reset();
  const auto P = plan_accelerated(1 << 20, 64, 1.0, 1e-9, k, o, true);
  EXPECT_TRUE(P.nonsmooth);
  EXPECT_NEAR(P.smoothing_radius, 2 * std::sqrt(20.0) / (1048576.0 * 8), 1e-18);
  EXPECT_NEAR(P.beta, 0.5 * 1048576.0 * 8, 1e-6);
  EXPECT_NEAR(P.lambda, 0.5 / 8192.0, 1e-15);
  const auto& p1 = P.phases.front();
  const double lnndm = std::log(1048576.0 * 20 * 64);
  EXPECT_EQ(p1.T_i, static_cast<std::int64_t>(std::ceil((1 + std::sqrt(P.beta / p1.lambda_i)) * lnndm)));
  double grads = 0;
  for (const auto& ph : P.phases) grads += static_cast<double>(ph.T_i * ph.K_i) * 64;
  EXPECT_DOUBLE_EQ(P.gradient_evaluations, grads);
  // The smooth plan needs β; the smoothed one does not.
  EXPECT_THROW(plan_accelerated(1 << 20, 64, 1.0, 1e-9, k, o, false), InvalidArgument);
}

TEST(Alg3Plan, PracticalDefaults) {
  const auto k = worked_example();
  const auto P = plan_accelerated(5000, 20, 1.0, 1e-6, k, {});
  ASSERT_TRUE(P.feasible);
  EXPECT_TRUE(P.certified);
  ASSERT_EQ(P.phases.size(), 1u);
  const auto& ph = P.phases.front();
  EXPECT_EQ(ph.n_i, 5000);
  EXPECT_EQ(ph.K_i, 5000);
  EXPECT_EQ(ph.T_i, 20);
  EXPECT_NEAR(P.tau, 1 / (4 * std::sqrt(20.0)), 1e-15);
  EXPECT_NEAR(P.rho, epsilon_delta_to_zcdp(1.0, 1e-6), 1e-12);
  // σ of the mean: (≈ 2τ/K)/√(2ρ/T).
  EXPECT_NEAR(ph.sigma_i, 2 * P.tau / 5000 / std::sqrt(2 * P.rho / 20), 1e-6 * ph.sigma_i);
  EXPECT_DOUBLE_EQ(P.gradient_evaluations, 20.0 * 5000 * 20);
  Alg3Options o;
  o.num_phases = 3;
  o.users_per_step = 100;
  const auto Q = plan_accelerated(4000, 20, 1.0, 1e-6, k, o);
  ASSERT_EQ(Q.phases.size(), 3u);
  EXPECT_EQ(Q.phases[0].n_i, 2000);
  EXPECT_EQ(Q.phases[1].n_i, 1000);
  EXPECT_EQ(Q.phases[2].K_i, 100);
  EXPECT_LE(Q.users_used, 4000);
}

TEST(Alg3Fit, GradientCountsEqualTheFormulasAndUsersAreDisjoint) {
  const std::int64_t n = 300, m = 4;
  const auto D = task_data(n, m, 3, 21);
  for (auto method : {UserLevelMethod::accelerated, UserLevelMethod::nonsmooth}) {
    for (std::int64_t K : {std::int64_t{300}, std::int64_t{37}}) {
      UserLevelOptions o;
      o.privacy = {1, 1e-6};
      o.method = method;
      o.loss = method == UserLevelMethod::nonsmooth ? GlmKind::hinge : GlmKind::logistic;
      o.domain_radius = 3;
      o.alg3.num_phases = 2;
      o.alg3.users_per_step = K;
      o.steps = 7;
      std::map<std::int64_t, std::int64_t> phase_of;
      std::map<std::pair<std::int64_t, std::int64_t>, std::set<std::int64_t>> step_users;
      std::map<std::pair<std::int64_t, std::int64_t>, int> step_reads;
      UserLevelTrace trace;
      trace.on_user = [&](std::int64_t phase, std::int64_t t, std::int64_t u) {
        auto [it, fresh] = phase_of.emplace(u, phase);
        EXPECT_EQ(it->second, phase) << "user " << u << " in two phases";
        step_users[{phase, t}].insert(u);
        ++step_reads[{phase, t}];
      };
      SeededRng rng(4);
      const auto r = fit_user_level(D, o, rng, nullptr, &trace);
      const auto& sch = r.diagnostics["schedule"];
      std::int64_t expect = 0;
      for (const auto& ph : sch["phases"])
        expect += ph["T_i"].get<std::int64_t>() * ph["K_i"].get<std::int64_t>() * m;
      EXPECT_EQ(r.diagnostics["gradient_evaluations"].get<std::int64_t>(), expect);
      EXPECT_EQ(expect, 7 * (std::min<std::int64_t>(K, 150) + std::min<std::int64_t>(K, 75)) * m);
      EXPECT_EQ(r.diagnostics["steps_run"].get<std::int64_t>(), 14);
      for (const auto& [key, users] : step_users) {
        EXPECT_EQ(static_cast<int>(users.size()), step_reads[key]) << "a user twice in a step";
        EXPECT_EQ(static_cast<std::int64_t>(users.size()), std::min<std::int64_t>(K, key.first == 1 ? 150 : 75));
      }
      EXPECT_TRUE(r.privacy.certified);
      EXPECT_TRUE(Ball(Vector::Zero(3), 3).contains(r.estimate, 1e-12));
    }
  }
}

TEST(Alg3Fit, PaperProfileRunsAtEpsilonTenAndCountsExactly) {
  // ε = 10, δ = 0.5 and q = 1, one phase: the smallest paper schedule that runs in a unit test
  // (n_1 = ⌊n/4⌋ must exceed the Laplace tail 500·ln(n_1²m²e^ε/δ)/ε ≈ 1390).
  const std::int64_t n = 6000, m = 5;
  const auto D = task_data(n, m, 2, 22);
  UserLevelOptions o;
  o.privacy = {1, 1e-6};
  o.method = UserLevelMethod::accelerated;
  o.privacy.epsilon = 10;
  o.privacy.delta = 0.5;
  o.domain_radius = 3;
  o.profile = Profile::paper;
  o.alg3.q = 1;
  o.alg3.num_phases = 1;
  UserLevelTrace trace;
  SeededRng rng(5);
  const auto r = fit_user_level(D, o, rng, nullptr, &trace);
  ASSERT_EQ(r.status, Status::ok);
  const auto& ph = r.diagnostics["schedule"]["phases"][0];
  const std::int64_t T = ph["T_i"].get<std::int64_t>(), K = ph["K_i"].get<std::int64_t>();
  EXPECT_EQ(K, n / 4);  // capped at n_1
  EXPECT_EQ(r.diagnostics["gradient_evaluations"].get<std::int64_t>(), T * K * m);
  // τ >= L here (m = 5): the filter is vacuous and keeps every sampled user (docs/proofs/user-level.md).
  ASSERT_EQ(static_cast<std::int64_t>(trace.step_kept.size()), T);
  for (auto kept : trace.step_kept) EXPECT_EQ(kept, K);
  EXPECT_TRUE(r.privacy.certified);
  // Ledger: the (ε, δ) Thm C.1 proves, one entry whose parts are the mechanisms that run: per
  // phase the concentration gate (AboveThreshold at ε/2) and the T_i filtered steps' Gaussian.
  ASSERT_EQ(r.ledger.size(), 1u) << ledger_json(r.ledger).dump(1);
  EXPECT_EQ(r.ledger[0].mechanism, "proved");
  EXPECT_DOUBLE_EQ(r.ledger[0].loss.epsilon, 10.0);
  ASSERT_EQ(r.ledger[0].blocks.size(), 1u);
  const Ledger& phase = r.ledger[0].blocks[0];
  ASSERT_EQ(phase.size(), 2u) << ledger_json(r.ledger).dump(1);  // one phase: gate, steps
  EXPECT_EQ(phase[0].mechanism, "above_threshold");
  EXPECT_DOUBLE_EQ(phase[0].loss.epsilon, 5.0);
  EXPECT_EQ(phase[1].mechanism, "gaussian");
  EXPECT_EQ(phase[1].count, T);
  // Paper constants refuse at realistic sizes, and steps/clip do not apply to them.
  o.privacy.delta = 1e-6;
  EXPECT_THROW(fit_user_level(D, o, rng, nullptr, &trace), InvalidArgument);
  o.privacy.epsilon = 10;
  o.privacy.delta = 0.5;
  o.steps = 5;
  EXPECT_THROW(fit_user_level(D, o, rng, nullptr, &trace), InvalidArgument);
}

TEST(Alg3Fit, PaperFilterDropsOneAdversarialUserExactly) {
  // Honest users are identical (pairwise distance 0); the adversary's mean gradient is > 2τ
  // away (τ shrunk by c_τ, utility only), so its degree is 1 < K/2: p = 0, never kept; every
  // honest user has degree >= K − 1 >= 2K/3: p = 1. With the noise off the run on D' equals the
  // run on D (adversary replaced by an honest user) exactly, whenever the adversary is sampled.
  const std::int64_t n = 6000, m = 5, bad = 17;
  const auto D = identical_users(n, m), Dp = identical_users(n, m, bad);
  UserLevelOptions o;
  o.privacy = {1, 1e-6};
  o.method = UserLevelMethod::accelerated;
  o.privacy.epsilon = 10;
  o.privacy.delta = 0.5;
  o.domain_radius = 3;
  o.profile = Profile::paper;
  o.alg3.q = 1;
  o.alg3.num_phases = 1;
  o.alg3.c_tau = 0.02;  // 2τ ≈ 0.15 < 0.3
  bool seen = false;
  for (std::uint64_t seed = 1; seed <= 12 && !seen; ++seed) {
    UserLevelTrace ta, tb;
    ta.noiseless = tb.noiseless = true;
    bool read_bad = false;
    tb.on_user = [&](std::int64_t, std::int64_t, std::int64_t u) { read_bad |= u == bad; };
    auto oa = o, ob = o;
    SeededRng r1(seed), r2(seed);
    const auto a = fit_user_level(D, oa, r1, nullptr, &ta);
    const auto b = fit_user_level(Dp, ob, r2, nullptr, &tb);
    EXPECT_FALSE(b.privacy.certified);  // noise off
    if (!read_bad) continue;
    seen = true;
    const auto K = static_cast<std::int64_t>(ta.step_kept.size() ? ta.step_kept.front() : 0);
    ASSERT_GT(K, 0);
    for (std::size_t t = 0; t < tb.step_kept.size(); ++t) EXPECT_EQ(tb.step_kept[t], K - 1);
    EXPECT_EQ((a.estimate - b.estimate).norm(), 0.0);
  }
  EXPECT_TRUE(seen) << "the adversary was never in phase 1 for 12 seeds";
}

TEST(Alg3Fit, PracticalReleaseMovesByAtMostItsSensitivityPerStep) {
  // Coupled runs (same seed) on D and D' = D with user 0 an adversary (labels flipped, features
  // ×100 clipped to A), noise off: the first released gradient (same query point) differs by at
  // most the per-step sensitivity of the mean, and with the noise on the noise is far larger.
  const auto D = task_data(400, 10, 4, 23, 0), Dp = task_data(400, 10, 4, 23, 1);
  UserLevelOptions o;
  o.privacy = {1, 1e-6};
  o.method = UserLevelMethod::accelerated;
  o.domain_radius = 5;
  UserLevelTrace ta, tb;
  ta.noiseless = tb.noiseless = true;
  auto oa = o, ob = o;
  SeededRng r1(2), r2(2);
  const auto a = fit_user_level(D, oa, r1, nullptr, &ta);
  const auto b = fit_user_level(Dp, ob, r2, nullptr, &tb);
  const double sens = a.diagnostics["schedule"]["phases"][0]["sensitivity"].get<double>();
  const double moved = (ta.released_gradients.front() - tb.released_gradients.front()).norm();
  EXPECT_GT(moved, 0);
  EXPECT_LE(moved, sens);
  EXPECT_GT(a.diagnostics["schedule"]["phases"][0]["sigma_i"].get<double>(), sens);
}

TEST(Alg3Fit, NoiseOffPracticalDecreasesRiskSmoothAndNonsmooth) {
  const auto D = task_data(400, 20, 3, 24);
  for (auto [method, loss] : {std::pair{UserLevelMethod::accelerated, "logistic"},
                              std::pair{UserLevelMethod::nonsmooth, "hinge"}}) {
    UserLevelOptions o;
    o.privacy = {1, 1e-6};
    o.method = method;
    o.loss = parse_enum<GlmKind>(loss);
    o.domain_radius = 5;
    UserLevelTrace noiseless_o;
    noiseless_o.noiseless = true;
    o.steps = 40;
    SeededRng rng(1);
    const auto r = fit_user_level(D, o, rng, nullptr, &noiseless_o);
    const auto f = make_loss(loss);
    const double at0 = empirical_risk(D, *f, Vector::Zero(3));
    EXPECT_LT(empirical_risk(D, *f, r.estimate), at0 - 0.05) << loss;
    dpstats::testing::expect_guarantee_from_ledger(r);
  }
}

TEST(Alg3Fit, RejectsMisuse) {
  const auto D = task_data(100, 3, 2, 25);
  SeededRng rng(1);
  UserLevelOptions o;
  o.privacy = {1, 1e-6};
  o.domain_radius = 1;
  o.method = UserLevelMethod::accelerated;
  o.loss = GlmKind::hinge;  // non-smooth: Alg 3 needs β
  EXPECT_THROW(fit_user_level(D, o, rng), InvalidArgument);
  o.loss = GlmKind::logistic;
  o.steps = 0;
  EXPECT_THROW(fit_user_level(D, o, rng), InvalidArgument);
  o.steps.reset();
  o.method = UserLevelMethod::nonsmooth;
  o.alg3.smoothing_radius = -1;
  EXPECT_THROW(fit_user_level(D, o, rng), InvalidArgument);
  EXPECT_EQ(parse_enum<UserLevelMethod>("accelerated"), UserLevelMethod::accelerated);
  EXPECT_EQ(parse_enum<UserLevelMethod>("nonsmooth"), UserLevelMethod::nonsmooth);
}
