// Tests of the privacy auditor itself (tests/audit/auditor.hpp): it must pass correct mechanisms
// with a reasonably tight lower bound and flag broken ones. The mechanisms audited here are the
// floating-point reference mechanisms of auditor.hpp (Laplace, Gaussian, randomized response
// written from Rng::uniform01), so that these tests depend on nothing but the Rng interface.
//
// A correct mechanism is flagged with probability <= AuditOptions::false_alarm = 1e-7 by
// construction (Clopper–Pearson bounds, Bonferroni over the evaluated events, events chosen on an
// independent calibration split); every run here is seeded, hence deterministic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "audit/auditor.hpp"

namespace dpstats::audit {
namespace {

constexpr std::size_t kSamples = 200000;  // per side; the 10^6 versions are in tests/slow

using reference::analytic_gaussian_sigma;
using reference::gaussian;
using reference::laplace;
using reference::randomized_response;

// Prints the audit line, so that the suite's log records the bounds it reaches.
void report(const AuditResult& r) { std::printf("    %s\n", r.summary().c_str()); }

AuditOptions options(std::size_t samples = kSamples, std::uint64_t seed = 1) {
  AuditOptions o;
  o.samples = samples;
  o.seed = seed;
  return o;
}

// ---- the statistics underneath ------------------------------------------------------------

TEST(AuditorStatistics, IncompleteBetaCheckValues) {
  EXPECT_NEAR(regularized_incomplete_beta(1, 1, 0.3), 0.3, 1e-14);
  EXPECT_NEAR(regularized_incomplete_beta(3, 1, 0.5), 0.125, 1e-14);   // x^a
  EXPECT_NEAR(regularized_incomplete_beta(7, 7, 0.5), 0.5, 1e-13);     // symmetry
  EXPECT_NEAR(regularized_incomplete_beta(2, 3, 0.4), 0.5248, 1e-13);  // P[Bin(4, 0.4) >= 2]
  // Large arguments (the regime of 10^6 samples): P[Bin(10^6, 0.5) >= 500000] = I_0.5(5e5, 5e5+1).
  EXPECT_NEAR(regularized_incomplete_beta(5e5, 5e5 + 1, 0.5), 0.5 + 0.5 * 7.978845e-4, 1e-8);
}

TEST(AuditorStatistics, ClopperPearsonCheckValues) {
  // Two-sided 95% interval for 5/10: [0.187086, 0.812914] (standard tables).
  EXPECT_NEAR(clopper_pearson_lower(5, 10, 0.025), 0.187086, 1e-6);
  EXPECT_NEAR(clopper_pearson_upper(5, 10, 0.025), 0.812914, 1e-6);
  // Closed forms at the edges: upper(0) = 1 - alpha^(1/n), lower(n) = alpha^(1/n).
  EXPECT_NEAR(clopper_pearson_upper(0, 150000, 1e-8), 1 - std::pow(1e-8, 1.0 / 150000), 1e-12);
  EXPECT_NEAR(clopper_pearson_lower(150000, 150000, 1e-8), std::pow(1e-8, 1.0 / 150000), 1e-12);
  EXPECT_EQ(clopper_pearson_lower(0, 10, 0.05), 0.0);
  EXPECT_EQ(clopper_pearson_upper(10, 10, 0.05), 1.0);
  // The bounds bracket the estimate and tighten with n.
  const double lo1 = clopper_pearson_lower(3000, 10000, 1e-8);
  const double lo2 = clopper_pearson_lower(30000, 100000, 1e-8);
  EXPECT_LT(lo1, lo2);
  EXPECT_LT(lo2, 0.3);
  // Rounded outwards: the tail at the returned bound is at most alpha.
  const double up = clopper_pearson_upper(12, 100000, 1e-9);
  EXPECT_LE(regularized_incomplete_beta(100000 - 12, 13, 1 - up, up), 1e-9);
  EXPECT_THROW(clopper_pearson_lower(11, 10, 0.05), InvalidArgument);
  EXPECT_THROW(clopper_pearson_upper(1, 10, 0.7), InvalidArgument);
}

TEST(AuditorStatistics, AnalyticGaussianHelperMatchesCheckValue) {
  // The test's own helper must reproduce Balle–Wang (privacy/calibration.hpp).
  EXPECT_NEAR(analytic_gaussian_sigma(1, 1, 1e-5), 3.730632, 1e-5);
  EXPECT_NEAR(analytic_gaussian_sigma(1, 8, 1e-3), 0.480014, 1e-5);
}

// ---- (1) a correct Laplace mechanism passes with a tight bound --------------------------------

TEST(Auditor, CorrectLaplacePasses) {
  const double eps = 1, sens = 1, b = sens / eps;
  const auto r = audit_scalar([&](Rng& g) { return 0.0 + laplace(g, b); },
                              [&](Rng& g) { return sens + laplace(g, b); }, eps, 0, options());
  SCOPED_TRACE(r.summary());
  report(r);
  EXPECT_FALSE(r.violation);
  EXPECT_LE(r.epsilon_lower_bound, eps);
  EXPECT_GE(r.epsilon_lower_bound, 0.9 * eps);  // reaches about 0.95 at 2·10^5 samples per side
  EXPECT_GE(r.epsilon_point_estimate, r.epsilon_lower_bound);
  EXPECT_EQ(r.evaluated_events, 8u);
}

// ---- (2) half the noise (true ε = 2) is flagged at the claimed ε = 1 --------------------------

TEST(Auditor, HalfNoiseLaplaceIsFlagged) {
  const double eps = 1, sens = 1, b = 0.5 * sens / eps;
  const auto r = audit_scalar([&](Rng& g) { return laplace(g, b); },
                              [&](Rng& g) { return sens + laplace(g, b); }, eps, 0, options());
  SCOPED_TRACE(r.summary());
  report(r);
  EXPECT_TRUE(r.violation);
  EXPECT_GT(r.epsilon_lower_bound, 1.8);  // true ε = 2
  EXPECT_LE(r.epsilon_lower_bound, 2.0);
}

// ---- (3) a leak with probability 0.01 is flagged at (ε, δ = 1e-4), passes at δ = 0.01 ---------

TEST(Auditor, LeakingMechanismIsFlagged) {
  const double eps = 1, b = 1 / eps;
  auto leaky = [&](double x) {
    return [=](Rng& g) { return g.uniform01() < 0.01 ? x : x + laplace(g, b); };
  };
  const auto r = audit_scalar(leaky(0), leaky(1), eps, 1e-4, options());
  SCOPED_TRACE(r.summary());
  report(r);
  EXPECT_TRUE(r.violation);
  EXPECT_GT(r.epsilon_lower_bound, 3.0);
  // The same mechanism IS (ε, 0.01)-DP: the auditor must accept that claim.
  const auto ok = audit_scalar(leaky(0), leaky(1), eps, 0.01, options());
  SCOPED_TRACE(ok.summary());
  report(ok);
  EXPECT_FALSE(ok.violation);
}

// ---- (4) the Gaussian mechanism at its analytic (ε, δ) passes; half the σ is flagged -----------

TEST(Auditor, AnalyticGaussianPasses) {
  for (const auto& [eps, delta] : {std::pair{1.0, 1e-5}, std::pair{1.0, 1e-3}}) {
    const double sigma = analytic_gaussian_sigma(1, eps, delta);
    const auto r =
        audit_scalar([&](Rng& g) { return gaussian(g, sigma); },
                     [&](Rng& g) { return 1 + gaussian(g, sigma); }, eps, delta, options());
    SCOPED_TRACE(r.summary());
    report(r);
    EXPECT_FALSE(r.violation);
    EXPECT_GT(r.epsilon_lower_bound, delta < 1e-4 ? 0.3 * eps : 0.5 * eps);
  }
}

TEST(Auditor, GaussianWithHalfSigmaIsFlagged) {
  const double eps = 1, delta = 1e-5, sigma = 0.5 * analytic_gaussian_sigma(1, eps, delta);
  const auto r =
      audit_scalar([&](Rng& g) { return gaussian(g, sigma); },
                   [&](Rng& g) { return 1 + gaussian(g, sigma); }, eps, delta, options());
  SCOPED_TRACE(r.summary());
  report(r);
  EXPECT_TRUE(r.violation);
}

// ---- vector outputs: the projection on the mean difference ------------------------------------

TEST(Auditor, VectorGaussianUsesTheMeanDifferenceProjection) {
  // Shift (1/2, 1/2, 1/2, 1/2): l2 sensitivity 1, but only 1/2 per coordinate. With half the
  // required σ only the projection on the shift sees the full loss.
  const double eps = 1, delta = 1e-5, good = analytic_gaussian_sigma(1, eps, delta);
  auto mech = [](double shift, double sigma) {
    return [=](Rng& g) {
      std::vector<double> out(4);
      for (double& v : out) v = shift + gaussian(g, sigma);
      return out;
    };
  };
  const auto bad = audit(mech(0, good / 2), mech(0.5, good / 2), eps, delta, options());
  SCOPED_TRACE(bad.summary());
  report(bad);
  EXPECT_TRUE(bad.violation);
  EXPECT_NE(bad.best_event.find("proj(mean difference)"), std::string::npos);
  AuditOptions no_projection = options();
  no_projection.project_mean_difference = false;
  const auto coords = audit(mech(0, good / 2), mech(0.5, good / 2), eps, delta, no_projection);
  SCOPED_TRACE(coords.summary());
  report(coords);
  EXPECT_LT(coords.epsilon_lower_bound, bad.epsilon_lower_bound);

  const auto ok = audit(mech(0, good), mech(0.5, good), eps, delta, options());
  SCOPED_TRACE(ok.summary());
  report(ok);
  EXPECT_FALSE(ok.violation);
}

// A joint leak that no single coordinate shows: l1 sensitivity mistaken for the per-coordinate
// one (Laplace scale 1/2 per coordinate on a shift (1/2, 1/2): true ε = 2). A custom quadrant
// event, fixed before sampling, exposes it.
TEST(Auditor, CustomEventCatchesJointLeak) {
  auto mech = [](double shift) {
    return [=](Rng& g) {
      return std::vector<double>{shift + laplace(g, 0.5), shift + laplace(g, 0.5)};
    };
  };
  AuditOptions o = options();
  o.custom_events.push_back(
      {"both coords > 1/2", [](std::span<const double> x) { return x[0] > 0.5 && x[1] > 0.5; }});
  const auto r = audit(mech(0), mech(0.5), 1, 0, o);
  SCOPED_TRACE(r.summary());
  report(r);
  EXPECT_TRUE(r.violation);
  EXPECT_GT(r.epsilon_lower_bound, 1.8);
  EXPECT_NE(r.best_event.find("custom: both coords > 1/2"), std::string::npos);
}

// ---- a mechanism whose loss is exactly ε: tight, never above ε --------------------------------

// k-ary randomized response: D reports 0 and D' reports 1 with probability e^ε / (e^ε + 3).
TEST(Auditor, ExactlyTightMechanismIsNotFlaggedAndBoundIsTight) {
  const double eps = 1;
  const auto r =
      audit_scalar(randomized_response(eps, 0), randomized_response(eps, 1), eps, 0, options());
  SCOPED_TRACE(r.summary());
  report(r);
  EXPECT_FALSE(r.violation);
  EXPECT_GT(r.epsilon_lower_bound, 0.9 * eps);
  // A claim slightly below the truth is caught.
  const auto low =
      audit_scalar(randomized_response(eps, 0), randomized_response(eps, 1), 0.8, 0, options());
  EXPECT_TRUE(low.violation) << low.summary();
}

// The false-alarm guarantee, checked empirically at a loose level: 200 audits of the exactly
// tight randomized response at false_alarm = 0.1 must flag at most 47 times. Each audit flags with
// probability <= 0.1, so a correct auditor exceeds 47 with probability
// <= exp(-200 KL(0.235 || 0.1)) < 1e-6; an auditor that used plug-in estimates instead of
// confidence bounds would flag about half of them.
TEST(Auditor, FalseAlarmRateIsControlled) {
  int flagged = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    AuditOptions o = options(4000, seed);
    o.false_alarm = 0.1;
    flagged +=
        audit_scalar(randomized_response(1, 0), randomized_response(1, 1), 1, 0, o).violation;
  }
  std::printf("    %d of 200 audits flagged at false_alarm = 0.1\n", flagged);
  EXPECT_LE(flagged, 47);
}

// ---- (5) determinism ---------------------------------------------------------------------------

TEST(Auditor, SameSeedSameResult) {
  auto run = [](std::uint64_t seed) {
    return audit_scalar([](Rng& g) { return laplace(g, 1); },
                        [](Rng& g) { return 1 + laplace(g, 1); }, 1, 0, options(20000, seed));
  };
  const auto a = run(7), b = run(7), c = run(8);
  EXPECT_EQ(a.epsilon_lower_bound, b.epsilon_lower_bound);
  EXPECT_EQ(a.epsilon_point_estimate, b.epsilon_point_estimate);
  EXPECT_EQ(a.best_event, b.best_event);
  EXPECT_EQ(a.count_numerator, b.count_numerator);
  EXPECT_EQ(a.count_denominator, b.count_denominator);
  EXPECT_NE(a.epsilon_lower_bound, c.epsilon_lower_bound);
}

// ---- misuse -------------------------------------------------------------------------------------

TEST(Auditor, RejectsBadArgumentsAndOutputs) {
  const ScalarMechanism m = [](Rng& g) { return laplace(g, 1); };
  EXPECT_THROW(audit_scalar(m, m, -1, 0, options(1000)), InvalidArgument);
  EXPECT_THROW(audit_scalar(m, m, 1, 1, options(1000)), InvalidArgument);
  EXPECT_THROW(audit_scalar(m, m, 1, 0, options(150)), InvalidArgument);
  AuditOptions bad_fraction = options(1000);
  bad_fraction.calibration_fraction = 1;
  EXPECT_THROW(audit_scalar(m, m, 1, 0, bad_fraction), InvalidArgument);
  EXPECT_THROW(audit_scalar(
                   m, [](Rng&) { return std::nan(""); }, 1, 0, options(1000)),
               InvalidArgument);
  EXPECT_THROW(audit([](Rng&) { return std::vector<double>{0}; },
                     [](Rng&) {
                       return std::vector<double>{0, 1};
                     },
                     1, 0, options(1000)),
               InvalidArgument);
}

// Identical inputs: every event has the same probability on both sides; nothing is flagged even
// at a claimed ε = 0.
TEST(Auditor, IdenticalInputsGiveNoEvidence) {
  const ScalarMechanism m = [](Rng& g) { return laplace(g, 1); };
  const auto r = audit_scalar(m, m, 0, 0, options(50000));
  SCOPED_TRACE(r.summary());
  report(r);
  EXPECT_FALSE(r.violation);
  EXPECT_LT(r.epsilon_lower_bound, 0.1);
}

}  // namespace
}  // namespace dpstats::audit
