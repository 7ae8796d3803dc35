// Pure-DP heavy-tailed SCO (docs/proofs/heavy-tailed.md; privacy invariants, adversarial and
// edge cases): the certificate, the schedules, the sensitivity
// invariant with an enormous record, aborts, validation and the release fields.
#include <gtest/gtest.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/heavy_tailed/certificate.hpp"
#include "dpstats/heavy_tailed/heavy_tailed.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/synthetic/heavy_tailed_data.hpp"
#include "guarantee.hpp"

namespace dpstats::optimize {
namespace {

MomentBound moment_of(const HeavyTailedOptions& o) {
  MomentBound mb;
  mb.k = o.moment_order;
  mb.G_k = o.moment_bound.value_or(1);
  mb.G_2 = o.moment_bound_2;
  return mb;
}

HeavyTailedSample data(std::int64_t n, std::int64_t d, int nu, std::uint64_t seed,
                       HeavyTailedTaskKind kind = HeavyTailedTaskKind::l1_student_t) {
  HeavyTailedTask t;
  t.kind = kind;
  t.d = d;
  t.nu = nu;
  SeededRng rng(seed);
  return generate_heavy_tailed(t, n, rng);
}

GlmErmProblem problem(const HeavyTailedSample& s, const std::string& loss, double C, double lambda) {
  GlmErmProblem p;
  p.A = &s.X;
  p.y = &s.y;
  p.end = s.X.rows();
  p.env.kind = parse_enum<GlmKind>(loss);
  p.C = C;
  p.lambda = lambda;
  p.w0 = Vector::Zero(s.X.cols());
  p.center = Vector::Zero(s.X.cols());
  p.radius = 2;
  return p;
}

TEST(HeavyTailedCertificate, GapBoundsTheTrueSuboptimalityAndCertifiesAtKinks) {
  for (const std::string loss : {"absolute", "hinge", "squared", "logistic", "huber"}) {
    auto s = data(400, 3, 5, 11, loss == "hinge" || loss == "logistic"
                                     ? HeavyTailedTaskKind::hinge_student_t
                                     : HeavyTailedTaskKind::l1_student_t);
    const auto p = problem(s, loss, 1.5, 0.05);
    const double alpha = 1e-10;
    const auto sol = solve_certified_glm_erm(p, alpha);
    ASSERT_TRUE(sol.certified) << loss << " gap " << sol.gap;
    EXPECT_LE(sol.gap, alpha);
    const double best = glm_erm_objective(p, sol.w);
    // Any other point: its gap (with the certified solution's duals replaced by its own model
    // duals) is >= its true suboptimality >= P(v) − P(w) − α.
    SeededRng rng(3);
    for (int t = 0; t < 20; ++t) {
      Vector v = sol.w + 0.3 * Vector::Random(3);
      if (v.norm() > 2) v *= 2 / v.norm();
      EXPECT_GE(glm_erm_objective(p, v), best - alpha) << loss;
      Vector theta(s.X.rows());
      for (Eigen::Index i = 0; i < theta.size(); ++i) {
        theta[i] = p.env.derivative(s.X.row(i).dot(v), s.y[i], 1.5 / s.X.row(i).norm());
      }
      EXPECT_GE(glm_duality_gap(p, v, theta), glm_erm_objective(p, v) - best - 1e-12) << loss;
    }
  }
}

TEST(HeavyTailedCertificate, LargeBlockCertifiesAtTinyAlpha) {
  // Addendum "Problems in the card" 4: Huber duals alone leave a gap >> α at large m; the
  // active-set duals certify. m = 1.6·10^5 at the addendum's α scale (~1e-11).
  auto s = data(160000, 5, 5, 12);
  const auto p = problem(s, "absolute", 2.0, 0.05);
  const double alpha = 0.01 * 0.01 * 4 / (2 * 0.05 * 160000.0 * 160000.0);
  const auto sol = solve_certified_glm_erm(p, alpha);
  EXPECT_TRUE(sol.certified) << sol.gap << " vs " << alpha;
}

TEST(HeavyTailedPlan, PaperScheduleFollowsTheCard) {
  HeavyTailedOptions o;
  o.method = HeavyTailedMethod::lipschitz_extension;  // the pre-#15 default
  o.privacy.epsilon = 1;
  o.profile = Profile::paper;
  o.moment_order = 4;
  o.moment_bound = 3;
  o.domain_radius = 1;
  const auto plan = plan_heavy_tailed(100000, 5, o, moment_of(o), 1);
  ASSERT_GE(plan.size(), 2u);
  const double r1 = heavy_tailed_rate(50000, 5, 1, moment_of(o));
  EXPECT_NEAR(plan[0].lambda, r1 / 2, 1e-12);
  for (std::size_t t = 0; t < plan.size(); ++t) {
    const auto m = static_cast<double>(plan[t].m);
    EXPECT_EQ(plan[t].m, 100000 >> (t + 1));
    EXPECT_NEAR(plan[t].C, 3 * std::pow(m / 5, 0.25), 1e-9);
    EXPECT_NEAR(plan[t].lambda, plan[0].lambda * std::pow(32.0, static_cast<double>(t)), 1e-9);
    EXPECT_NEAR(plan[t].alpha, 4 * plan[t].C * plan[t].C / (2 * plan[t].lambda * m * m), 1e-15);
    EXPECT_NEAR(plan[t].sensitivity, 6 * plan[t].C / (plan[t].lambda * m), 1e-12);
  }
  // Practical: T = 3, the last phase takes the leftovers (every record used once).
  o.profile = Profile::practical;
  o.final_solver = FinalSolver::output_perturbation;
  const auto pr = plan_heavy_tailed(100001, 5, o, moment_of(o), 1);
  ASSERT_EQ(pr.size(), 3u);
  EXPECT_EQ(pr[0].m + pr[1].m + pr[2].m, 100001);
  EXPECT_EQ(pr[1].begin, pr[0].m);
  // Default practical: phase 1 on a quarter of n, the final clipped-GD phase on the rest.
  o.final_solver.reset();
  const auto hy = plan_heavy_tailed(100000, 5, o, moment_of(o), 1);
  ASSERT_EQ(hy.size(), 2u);
  EXPECT_EQ(hy[0].m, 25000);
  EXPECT_EQ(hy[1].m, 75000);
}

TEST(HeavyTailedFit, EnormousRecordMovesPreNoiseOutputsByAtMostTheSensitivity) {
  // Replace one record by x = 10^12·1, y = −10^12: each phase's certified pre-noise solution
  // (same centre) moves by at most (2 + 2κ)C/(λm) (docs/proofs/heavy-tailed.md).
  auto s = data(3000, 3, 5, 13);
  auto s2 = s;
  s2.X.row(0).setConstant(1e12);
  s2.y[0] = -1e12;
  for (auto profile : {Profile::practical, Profile::paper}) {
    HeavyTailedOptions o;
    o.method = HeavyTailedMethod::lipschitz_extension;  // the pre-#15 default
    o.privacy.epsilon = 1;
    o.profile = profile;
    o.domain_radius = 2;
    o.moment_bound = 3;
    o.phases = 1;  // one phase: same centre on both datasets
    HeavyTailedTrace t1, t2;
    SeededRng r1(5), r2(5);
    fit_heavy_tailed(s.X, s.y, o, r1, nullptr, &t1);
    fit_heavy_tailed(s2.X, s2.y, o, r2, nullptr, &t2);
    ASSERT_EQ(t1.pre_noise.size(), 1u);
    ASSERT_EQ(t2.pre_noise.size(), 1u);
    EXPECT_LE((t1.pre_noise[0] - t2.pre_noise[0]).norm(), t1.sensitivity);
    EXPECT_GT(t1.sensitivity, 0);
  }
}

TEST(HeavyTailedFit, ReleaseIsPureAndCertified) {
  auto s = data(2000, 3, 5, 14);
  SeededRng rng(6);
  for (auto m : {HeavyTailedMethod::lipschitz_extension, HeavyTailedMethod::output_perturbation,
                 HeavyTailedMethod::clipped_gd}) {
    HeavyTailedOptions o;
    o.method = HeavyTailedMethod::lipschitz_extension;  // the pre-#15 default
    o.privacy.epsilon = 1;
    o.moment_bound = 1;
    o.method = m;
    o.domain_radius = 2;
    o.steps = 8;
    const auto r = fit_heavy_tailed(s.X, s.y, o, rng);
    EXPECT_EQ(r.status, Status::ok);
    EXPECT_EQ(r.privacy.delta, 0);
    EXPECT_EQ(r.privacy.epsilon, 1);
    // Pop-Localize's certificate may abort on the data: that bit is not covered (#15).
    EXPECT_EQ(r.privacy.certified, m == HeavyTailedMethod::clipped_gd) << name_of(m);
    EXPECT_LE(r.estimate.norm(), 2 + 1e-12);
    for (const auto& e : r.ledger) EXPECT_EQ(e.loss.kind, LossKind::pure);
    dpstats::testing::expect_guarantee_from_ledger(r);
  }
  HeavyTailedOptions g;
  g.method = HeavyTailedMethod::lipschitz_extension;  // the pre-#15 default
  g.privacy.epsilon = 1;
  g.domain_radius = 1;
  g.moment_bound = 1;
  g.method = HeavyTailedMethod::dp_sgd;
  g.privacy.delta = 1e-6;
  g.steps = 8;
  const auto r = fit_heavy_tailed(s.X, s.y, g, rng);
  EXPECT_EQ(r.privacy.delta, 1e-6);
  EXPECT_TRUE(r.privacy.rho.has_value());
  dpstats::testing::expect_guarantee_from_ledger(r);
}

TEST(HeavyTailedFit, UncertifiableAccuracyAbortsWithoutAnEstimate) {
  auto s = data(2000, 3, 5, 15);
  HeavyTailedOptions o;
  o.method = HeavyTailedMethod::lipschitz_extension;  // the pre-#15 default
  o.privacy.epsilon = 1;
  o.domain_radius = 1;
  o.moment_bound = 1;
  o.kappa = 1e-12;  // α = κ²C²/(2λm²) far below double resolution: cannot certify
  SeededRng rng(7);
  const auto r = fit_heavy_tailed(s.X, s.y, o, rng);
  EXPECT_EQ(r.status, Status::abstained);
  EXPECT_EQ(r.estimate.size(), 0);
  // The one abstention convention: the ledger keeps what was charged before the abort.
  EXPECT_FALSE(r.ledger.empty());
  EXPECT_TRUE(r.diagnostics.contains("abstained"));
  dpstats::testing::expect_guarantee_from_ledger(r);
}

TEST(HeavyTailedFit, RejectsBadInputBeforeAnyNoise) {
  auto s = data(100, 2, 5, 16);
  SeededRng rng(8);
  HeavyTailedOptions o;
  o.method = HeavyTailedMethod::lipschitz_extension;  // the pre-#15 default
  o.privacy.epsilon = 1;
  o.domain_radius = 1;
  o.moment_bound = 1;
  auto bad = s;
  bad.X(3, 1) = std::nan("");
  EXPECT_THROW(fit_heavy_tailed(bad.X, bad.y, o, rng), InvalidArgument);
  o.privacy.epsilon = 0;
  EXPECT_THROW(fit_heavy_tailed(s.X, s.y, o, rng), InvalidArgument);
  o.privacy.epsilon = 1;
  o.privacy.delta = 1e-6;  // delta only for dp-sgd
  EXPECT_THROW(fit_heavy_tailed(s.X, s.y, o, rng), InvalidArgument);
  o.privacy.delta = 0;
  o.loss = GlmKind::hinge;  // labels must be ±1
  EXPECT_THROW(fit_heavy_tailed(s.X, s.y, o, rng), InvalidArgument);
  EXPECT_THROW(parse_enum<GlmKind>("cubic"), InvalidArgument);
  o.loss = GlmKind::absolute;
  o.domain_radius = 0;  // required
  EXPECT_THROW(fit_heavy_tailed(s.X, s.y, o, rng), InvalidArgument);
  o.domain_radius = 1;
  o.moment_order = 1.5;
  EXPECT_THROW(fit_heavy_tailed(s.X, s.y, o, rng), InvalidArgument);
}

TEST(HeavyTailedFit, EdgeCasesStayFeasible) {
  auto s = data(500, 2, 5, 17);
  s.X.row(1).setZero();  // a = 0
  s.X.row(2) = s.X.row(3);
  s.y[2] = s.y[3];       // duplicates
  SeededRng rng(9);
  for (double eps : {1e-3, 100.0}) {
    HeavyTailedOptions o;
    o.method = HeavyTailedMethod::lipschitz_extension;  // the pre-#15 default
    o.moment_bound = 1;
    o.privacy.epsilon = eps;
    o.domain_radius = 2;
    const auto r = fit_heavy_tailed(s.X, s.y, o, rng);
    if (r.status == Status::ok) EXPECT_LE(r.estimate.norm(), 2 + 1e-12);
  }
}

TEST(HeavyTailedData, StudentTCdfAndMoments) {
  EXPECT_NEAR(student_t_cdf(0, 5), 0.5, 1e-15);
  EXPECT_NEAR(student_t_cdf(2.015048, 5), 0.95, 1e-6);   // t-table
  EXPECT_NEAR(student_t_cdf(3.182446, 3), 0.975, 1e-6);
  HeavyTailedTask t;
  t.d = 5;
  t.nu = 5;
  const auto mb = heavy_tailed_moment(t, 4);
  // E‖x‖⁴ = d·E x⁴ + d(d−1)(E x²)², E x² = 5/3, E x⁴ = 3·25/(3·1) = 25.
  EXPECT_NEAR(std::pow(mb.G_k, 4), 5 * 25 + 20 * 25.0 / 9, 1e-9);
  EXPECT_NEAR(*mb.G_2, std::sqrt(25.0 / 3), 1e-12);
}

}  // namespace
}  // namespace dpstats::optimize

#include "dpstats/heavy_tailed/em_pgm.hpp"

namespace dpstats::optimize {
namespace {

TEST(HeavyTailedEmPgm, ConcentratesNearTheMinimiserInOneDimension) {
  HeavyTailedTask t;
  t.d = 1;
  t.nu = 5;
  SeededRng g(41);
  const auto s = generate_heavy_tailed(t, 4000, g);  // w* = 0.8
  EmPgmOptions o;
  o.radius = 2;
  o.C = 2;
  o.gamma = 1;
  o.spacing = 0.01;
  o.privacy.epsilon = 1;
  SeededRng rng(42);
  int close = 0;
  for (int r = 0; r < 20; ++r) {
    const auto rel = fit_em_pgm(s.X, s.y, o, rng);
    EXPECT_FALSE(rel.privacy.certified);
    dpstats::testing::expect_guarantee_from_ledger(rel);
    if (std::abs(rel.estimate[0] - 0.8) < 0.15) ++close;
  }
  EXPECT_GE(close, 15);
  EXPECT_THROW(fit_em_pgm(RowMatrix::Zero(3, 3), Vector::Zero(3), o, rng), InvalidArgument);
}

}  // namespace
}  // namespace dpstats::optimize

#include "dpstats/solvers/adaptive_subgradient.hpp"

namespace dpstats::optimize {
namespace {

TEST(HeavyTailedAlg3, StoppingRuleCertifiesAlphaOptimality) {
  // Φ(x) = (1/m) Σ |⟨a_i, x⟩ − b_i| on the unit ball in R^2; reference optimum by a fine grid.
  SeededRng rng(51);
  const int m = 30;
  RowMatrix A(m, 2);
  Vector b(m);
  for (int i = 0; i < m; ++i) {
    A(i, 0) = 2 * rng.uniform01() - 1;
    A(i, 1) = 2 * rng.uniform01() - 1;
    b[i] = 0.3 * A(i, 0) - 0.2 * A(i, 1) + 0.1 * (rng.uniform01() - 0.5);
  }
  const auto phi = [&](const Vector& x) { return (A * x - b).cwiseAbs().sum() / m; };
  double best = 1e300;
  for (int i = -500; i <= 500; ++i) {
    for (int j = -500; j <= 500; ++j) {
      Vector x(2);
      x << i / 500.0, j / 500.0;
      if (x.norm() <= 1) best = std::min(best, phi(x));
    }
  }
  const double alpha = 0.05;
  int adversarial = 0;
  for (bool inexact : {false, true}) {
    const auto res = adaptive_inexact_subgradient(
        [&](const Vector& x, Vector& g) {
          g = A.transpose() * (A * x - b).unaryExpr([](double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); }) / m;
        },
        [&](const Vector& y, double xi, Vector& out) {
          out = y;
          if (out.norm() > 1) out /= out.norm();
          if (inexact) {  // a feasible point within ξ of the exact projection
            Vector jitter(2);
            jitter << std::cos(adversarial * 1.3), std::sin(adversarial * 1.3);
            ++adversarial;
            Vector cand = out + 0.5 * xi * jitter;
            if (cand.norm() <= 1) out = cand;
          }
        },
        Vector::Zero(2), 2.0, alpha, 10000000);
    ASSERT_TRUE(res.certified);
    EXPECT_LE(phi(res.x), best + alpha + 1e-6);
    // Iteration bound ⌈(3 D L/α)²⌉ with L <= max ‖a_i‖ <= √2.
    EXPECT_LE(res.iterations, static_cast<std::int64_t>(std::ceil(std::pow(3 * 2 * std::sqrt(2.0) / alpha, 2))));
  }
}

TEST(HeavyTailedAlg3, BallCapProjectionIsFeasibleAndAccurate) {
  // W = B(0, 1), W0 = W ∩ B(c, r): compare with a dense bisection reference.
  const auto PW = [](Vector& x) {
    if (x.norm() > 1) x /= x.norm();
  };
  SeededRng rng(52);
  for (int t = 0; t < 50; ++t) {
    Vector c(2), y(2);
    c << 0.6 * (2 * rng.uniform01() - 1), 0.6 * (2 * rng.uniform01() - 1);
    y << 4 * rng.uniform01() - 2, 4 * rng.uniform01() - 2;
    const double r = 0.1 + 0.5 * rng.uniform01(), xi = 1e-6;
    int calls = 0;
    const Vector x = inexact_ball_cap_projection(PW, c, r, y, xi, &calls);
    EXPECT_LE(x.norm(), 1 + 1e-12);
    EXPECT_LE((x - c).norm(), r * (1 + 1e-12));
    const Vector ref = inexact_ball_cap_projection(PW, c, r, y, 1e-14);
    EXPECT_LE((x - ref).norm(), xi + 1e-9);
    const double R = (y - c).norm();
    EXPECT_LE(calls, static_cast<int>(std::ceil(std::log2(1 + R * R / (r * xi)))) + 2);
  }
}

}  // namespace
}  // namespace dpstats::optimize

namespace dpstats::optimize {
namespace {

TEST(HeavyTailedAlg4, DoubleOutputPerturbationReleasesOrAbortsCleanly) {
  auto s = data(40000, 5, 5, 61);
  s.X.row(0).setConstant(1e6);
  s.y[0] = -1e7;
  HeavyTailedOptions o;
  o.method = HeavyTailedMethod::lipschitz_extension;  // the pre-#15 default
  o.privacy.epsilon = 1;
  o.domain_radius = 2;
  o.moment_bound = 3.67;
  o.final_solver = FinalSolver::output_perturbation;
  o.inner = InnerSolver::double_output_perturbation;
  SeededRng rng(62);
  HeavyTailedTrace tr;
  const auto r = fit_heavy_tailed(s.X, s.y, o, rng, nullptr, &tr);
  // One parallel composite over the disjoint blocks (ε), each block two ε/2 releases.
  ASSERT_EQ(r.ledger.size(), 1u) << ledger_json(r.ledger).dump(1);  // abstaining too: the plan
  EXPECT_EQ(r.ledger[0].mechanism, kParallelComposition);
  EXPECT_EQ(r.ledger[0].loss.epsilon, 1);
  for (const auto& block : r.ledger[0].blocks) {
    EXPECT_EQ(block.size(), 2u) << ledger_json(r.ledger).dump(1);
    for (const auto& e : block) EXPECT_EQ(e.loss.epsilon, 0.5);
  }
  if (r.status == Status::ok) {
    EXPECT_LE(r.estimate.norm(), 2 + 1e-12);
    EXPECT_FALSE(r.ledger[0].blocks.empty());
    EXPECT_FALSE(r.privacy.certified);  // the certificate's abort bit is not covered (#15)
  } else {
    EXPECT_EQ(r.estimate.size(), 0);
  }
  dpstats::testing::expect_guarantee_from_ledger(r);
  for (std::size_t i = 0; i < tr.gaps.size(); ++i) EXPECT_LE(tr.gaps[i], tr.alphas[i]);
  EXPECT_THROW(parse_enum<InnerSolver>("magic"), InvalidArgument);
}

}  // namespace
}  // namespace dpstats::optimize
