// Geometric median (docs/proofs/median.md): Weiszfeld, helpers, generators, the
// radius searches, the boosting schedules, budget accounting and adversarial inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "dpstats/synthetic/gaussian_cluster.hpp"
#include "dpstats/synthetic/shifted_cluster.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mechanisms/bounded_laplace.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/median/boosting.hpp"
#include "dpstats/median/fast_center.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/median/radius.hpp"
#include "dpstats/median/weiszfeld.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "guarantee.hpp"

using namespace dpstats;

namespace {

RowMatrix cluster(std::int64_t n, std::int64_t d, std::uint64_t seed, double R = 50,
                  double sigma = 0.1) {
  SeededRng rng(seed);
  return gaussian_cluster(R, n, d, sigma, 0.9, rng);
}

bool on_grid(double r, double r_min, double R) {
  if (r == R) return true;
  for (int t = 1; t <= 80; ++t)
    if (r == std::ldexp(r_min, t - 1)) return true;
  return false;
}

}  // namespace

// ---- Weiszfeld and helpers -------------------------------------------------------------------

TEST(Weiszfeld, OneDimensionalOddNIsTheMedian) {
  RowMatrix X(7, 1);
  X << 5, -3, 100, 2, 8, 1, -50;
  const auto w = weiszfeld(X);
  EXPECT_NEAR(w.x[0], 2, 1e-9);
  EXPECT_TRUE(w.converged);
}

TEST(Weiszfeld, SquareCornersGiveTheCentre) {
  RowMatrix X(4, 2);
  X << 0, 0, 2, 0, 0, 2, 2, 2;
  WeiszfeldOptions o;
  o.start = Vector::Constant(2, 0.3);
  const auto w = weiszfeld(X, o);
  EXPECT_NEAR(w.x[0], 1, 1e-8);
  EXPECT_NEAR(w.x[1], 1, 1e-8);
}

TEST(Weiszfeld, MajorityOfCoincidentPointsIsOptimal) {
  RowMatrix X(9, 3);
  X.setZero();
  for (int i = 0; i < 5; ++i) X.row(i) << 1, 2, 3;
  for (int i = 5; i < 9; ++i) X.row(i) << 10.0 * i, -4.0 * i, 7;
  const auto w = weiszfeld(X);
  EXPECT_NEAR((w.x - Vector{{1, 2, 3}}).norm(), 0, 1e-9);
  EXPECT_TRUE(w.converged);
}

TEST(Weiszfeld, AllPointsEqualIsFinite) {
  RowMatrix X = RowMatrix::Constant(6, 4, 2.5);
  const auto w = weiszfeld(X);
  EXPECT_TRUE(w.x.allFinite());
  EXPECT_NEAR((w.x - Vector::Constant(4, 2.5)).norm(), 0, 1e-12);
  EXPECT_EQ(w.f, 0);
}

TEST(Weiszfeld, CertificateAndProbes) {
  SeededRng rng(3);
  RowMatrix X(300, 5);
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = 0; j < 5; ++j) X(i, j) = standard_normal(rng) * (j + 1);
  const auto w = weiszfeld(X);
  EXPECT_TRUE(w.converged);
  EXPECT_LE(w.rel_gap_bound, 1e-10);
  for (int p = 0; p < 1000; ++p) {
    Vector probe = w.x;
    for (int j = 0; j < 5; ++j) probe[j] += 0.1 * standard_normal(rng);
    EXPECT_LE(w.f, objective(X, probe) + 1e-12);
  }
  // Lemma 3: f(x*) >= (1 − τ) r^(τ).
  for (double tau : {0.1, 0.5, 0.75, 0.9, 1.0})
    EXPECT_GE(w.f, (1 - tau) * quantile_radius(X, w.x, tau) - 1e-12);
  // Lemma 4 with S = the 20 farthest points from a probe x: ||x* − x|| <= (2n−2|S|)/(n−2|S|) max.
  const Vector x = Vector::Constant(5, 0.7);
  std::vector<double> dist(300);
  for (int i = 0; i < 300; ++i) dist[i] = (X.row(i).transpose() - x).norm();
  std::sort(dist.begin(), dist.end());
  const double max_kept = dist[279];
  EXPECT_LE((w.x - x).norm(), (600.0 - 40) / (300 - 40) * max_kept + 1e-9);
}

TEST(Weiszfeld, TargetObjectiveStopsEarly) {
  const RowMatrix X = cluster(2000, 10, 4);
  const auto full = weiszfeld(X);
  WeiszfeldOptions o;
  o.target_objective = full.f * (1 + 1e-3);
  const auto early = weiszfeld(X, o);
  EXPECT_LE(early.f, full.f * (1 + 1e-3));
  EXPECT_LT(early.iterations, full.iterations);
}

TEST(QuantileRadius, IsTheCeilTauNthDistance) {
  RowMatrix X(4, 1);
  X << 1, -2, 3, 4;
  EXPECT_EQ(quantile_radius(X, Vector::Zero(1), 0.75), 3);
  EXPECT_EQ(quantile_radius(X, Vector::Zero(1), 0.25), 1);
  EXPECT_EQ(quantile_radius(X, Vector::Zero(1), 1.0), 4);
  EXPECT_THROW(quantile_radius(X, Vector::Zero(1), 0.0), InvalidArgument);
}

// ---- generators and the F distribution ---------------------------------------------------------

TEST(Generators, FisherFCheckValues) {
  EXPECT_NEAR(fisher_f_quantile(0.75, 50, 5), 1.875074, 2e-6);
  EXPECT_NEAR(fisher_f_cdf(1, 10, 1e6), 0.559506, 2e-6);
  // Card §5.1 table: r_true = sqrt(d F^{-1}_{d,ν}(0.75)), d = 10.
  const std::vector<std::pair<double, double>> table{{2, 5.8112}, {4, 4.5629}, {10, 3.9386},
                                                     {20, 3.7410}};
  for (auto [nu, r] : table) EXPECT_NEAR(std::sqrt(10 * fisher_f_quantile(0.75, 10, nu)), r, 1e-4);
  // Card §5.2: 20·sqrt(50 F^{-1}_{50,ν}(0.75)) for ν = 2.5, 5, 10.
  EXPECT_NEAR(20 * std::sqrt(50 * fisher_f_quantile(0.75, 50, 2.5)), 237.69, 0.01);
  EXPECT_NEAR(20 * std::sqrt(50 * fisher_f_quantile(0.75, 50, 5)), 193.65, 0.01);
  EXPECT_NEAR(20 * std::sqrt(50 * fisher_f_quantile(0.75, 50, 10)), 173.30, 0.01);
}

TEST(Generators, GaussianClusterShape) {
  SeededRng rng(5);
  Vector mu;
  const RowMatrix X = gaussian_cluster(4, 1001, 10, 0.1, 0.9, rng, &mu);
  EXPECT_NEAR(mu.norm(), 2, 1e-12);
  const std::int64_t n_in = 900;  // floor(0.9·1001)
  const Vector inlier_mean = X.topRows(n_in).colwise().mean().transpose();
  // Each coordinate of the inlier mean has sd 0.1/sqrt(900); l2 over 10 coords: ~0.0105; 5x slack.
  EXPECT_LT((inlier_mean - mu).norm(), 0.053);
  for (Eigen::Index i = n_in; i < X.rows(); ++i) EXPECT_LE(X.row(i).norm(), 4 + 1e-12);
}

TEST(Generators, HeavyTailedNormsFollowF) {
  SeededRng rng(6);
  const RowMatrix X = heavy_tailed(5, 20000, 10, rng);
  // KS statistic of ||x||²/d against F(10, 5); critical value at 1e-6 is ~ 2.7/sqrt(n) = 0.019.
  std::vector<double> v(20000);
  for (int i = 0; i < 20000; ++i) v[i] = X.row(i).squaredNorm() / 10;
  std::sort(v.begin(), v.end());
  double ks = 0;
  for (int i = 0; i < 20000; ++i) {
    const double F = fisher_f_cdf(v[i], 10, 5);
    ks = std::max({ks, std::abs(F - i / 20000.0), std::abs(F - (i + 1) / 20000.0)});
  }
  EXPECT_LT(ks, 0.019);
}

// ---- radius searches -------------------------------------------------------------------------

TEST(FastRadius, StepAndPartnerFormulas) {
  EXPECT_EQ(fast_radius_steps(0.005, 10), 11);
  EXPECT_EQ(fast_radius_partners(11, 1e-5), 46);
}

TEST(FastRadius, OutputOnGridAndSeeded) {
  const RowMatrix X = cluster(500, 5, 7, 4);
  for (std::uint64_t s = 0; s < 10; ++s) {
    SeededRng a(s), b(s);
    const auto r1 = fast_radius(X, 0.01, 4, 1, 1e-5, a);
    const auto r2 = fast_radius(X, 0.01, 4, 1, 1e-5, b);
    EXPECT_EQ(r1.r_hat, r2.r_hat);
    EXPECT_TRUE(on_grid(r1.r_hat, 0.01, 4));
    const auto p = fast_radius_permuted(X, 0.01, 4, 1, a);
    EXPECT_TRUE(on_grid(p.r_hat, 0.01, 4));
  }
}

TEST(FastRadius, IdenticalPointsGiveTheFirstRadius) {
  const RowMatrix X = RowMatrix::Constant(100, 3, 1.5);
  SeededRng rng(1);
  EXPECT_EQ(fast_radius(X, 0.01, 10, 1e9, 1e-5, rng).r_hat, 0.01);
  EXPECT_EQ(fast_radius_permuted(X, 0.01, 10, 1e9, rng).r_hat, 0.01);
}

TEST(FastRadius, MinRadiusAtLeastRReturnsR) {
  const RowMatrix X = cluster(50, 2, 8, 4);
  SeededRng rng(1);
  const auto r = fast_radius(X, 5, 4, 1, 1e-5, rng);
  EXPECT_EQ(r.r_hat, 4);
  EXPECT_TRUE(r.fell_back);
  EXPECT_EQ(r.distance_evaluations, 0);
}

TEST(FastRadius, PermutedReadsOnlyItsSubsample) {
  const RowMatrix X = cluster(5000, 4, 9, 4);
  SeededRng rng(2);
  PermutedRadiusOptions o;
  o.subsample = 1000;
  o.permutations = 8;
  const auto r = fast_radius_permuted(X, 0.01, 4, 1, rng, o);
  EXPECT_EQ(r.distance_evaluations, 8000);
  EXPECT_EQ(r.ledger.loss.kind, LossKind::pure);
}

TEST(RadiusFinder, SmallBetaFallsThroughAndIsFlagged) {
  // Card §2.8 pitfall: n = 1000, ε = 1, β = 1e-5 puts θ above n: nothing can pass.
  const RowMatrix X = cluster(1000, 10, 10, 4);
  SeededRng rng(3);
  const auto r = radius_finder(X, 0.01, 4, 1, 1e-5, rng);
  EXPECT_TRUE(r.fell_back);
  EXPECT_EQ(r.r_hat, std::ldexp(0.01, r.grid_size - 1));
  const auto ok = radius_finder(X, 0.01, 4, 1, 0.05, rng);
  EXPECT_FALSE(ok.fell_back);
}

// ---- boosting -----------------------------------------------------------------------------------

TEST(PhasedSgd, ScheduleInvariants) {
  EXPECT_NEAR(stable_m(1023, 1000, 1e-5), 43.846, 1e-3);
  EXPECT_NEAR(stable_dpsgd_epsilon(0.5, 1e-5), 5.46610, 1e-5);
  EXPECT_EQ(K_for_passes(1, 1000), 10);
  EXPECT_EQ(K_for_passes(4, 1000), 12);
  const RowMatrix X = cluster(1000, 5, 11);
  const Vector xs = weiszfeld(X).x;
  for (bool fixed : {true, false}) {
    PhasedSgdOptions o;
    o.fixed_order = fixed;
    o.rho = 0.5;
    o.delta = 1e-5;
    o.K = 10;
    o.radius = 1;
    o.eta = 0.3 / std::sqrt(1023.0);
    Budget b(PrivacyLoss::approximate(100, 1e-3), Accountant::basic);
    Budget z(PrivacyLoss::zcdp(0.5), Accountant::zcdp);
    SeededRng rng(4);
    const auto r = phased_dpsgd(X, xs, o, fixed ? z : b, rng);
    EXPECT_EQ(r.T, 1023);
    std::int64_t sum = 0;
    for (auto t : r.phase_steps) sum += t;
    EXPECT_EQ(sum, 1023);
    EXPECT_EQ(r.phase_steps.back(), 1);
    EXPECT_NEAR(r.m, fixed ? 2.0 : 43.846, 1e-3);
    if (fixed) {
      EXPECT_LE(r.max_index_uses, 2);
      // Charged (9/14)ρ·(1 − (9/16)^K) up to the floating-point slack and lattice rounding.
      EXPECT_NEAR(z.spent().rho, 0.5 * 9.0 / 14 * (1 - std::pow(9.0 / 16, 10)), 1e-3);
    }
    // σ_k = 3^-k (2m+1)η/sqrt(ρ) (up to the slack and lattice rounding).
    EXPECT_NEAR(r.sigma[0], (2 * r.m + 1) * o.eta / 3 / std::sqrt(0.5), 1e-3 * r.sigma[0]);
  }
}

TEST(PhasedSgd, NoiselessConvergesAndSeedDeterministic) {
  const RowMatrix X = cluster(5000, 10, 12);
  const auto w = weiszfeld(X);
  const double r_hat = 2 * quantile_radius(X, w.x, 0.75);
  SeededRng init(1);
  const Vector start = w.x + unit_sphere_point(10, init) * 0.75 * r_hat;
  PhasedSgdOptions o;
  o.rho = 0.5;
  o.K = K_for_passes(4, 5000);
  o.radius = r_hat;
  o.eta = 0.3 * r_hat / std::sqrt(std::ldexp(1.0, o.K) - 1);
  o.sigma_scale = 0;
  Budget b(PrivacyLoss::zcdp(0.5), Accountant::zcdp);
  SeededRng rng(2);
  const auto r = phased_dpsgd(X, start, o, b, rng);
  EXPECT_LT((objective(X, r.x) - w.f) / r_hat, 1e-3);
  o.sigma_scale = 1;
  SeededRng a(9), c(9);
  Budget b1(PrivacyLoss::zcdp(0.5), Accountant::zcdp), b2(PrivacyLoss::zcdp(0.5), Accountant::zcdp);
  EXPECT_EQ(phased_dpsgd(X, start, o, b1, a).x, phased_dpsgd(X, start, o, b2, c).x);
}

TEST(Dpgd, InsideDomainAndNoiselessConverges) {
  const RowMatrix X = cluster(3000, 8, 13);
  const auto w = weiszfeld(X);
  const double r_hat = 2 * quantile_radius(X, w.x, 0.75);
  const Vector start = w.x + Vector::Constant(8, 0.75 * r_hat / std::sqrt(8.0));
  DpgdOptions o;
  o.rho = 1e-4;  // very noisy: the projection must still hold
  o.steps = 10;
  o.radius = r_hat;
  o.eta = r_hat / std::sqrt(10.0);
  o.average = false;
  Budget b(PrivacyLoss::zcdp(1e-4), Accountant::zcdp);
  SeededRng rng(3);
  const Vector x = dpgd(X, start, o, b, rng);
  EXPECT_LE((x - start).norm(), r_hat * (1 + 1e-12));
  o.sigma_scale = 0;
  o.steps = 50;
  o.eta = r_hat / std::sqrt(50.0);
  Budget b2(PrivacyLoss::zcdp(1e-4), Accountant::zcdp);
  EXPECT_LT((objective(X, dpgd(X, start, o, b2, rng)) - w.f) / r_hat, 1e-3);
}

TEST(Dpgd, QuantisedGradientMatchesTheExactMean) {
  const RowMatrix X = cluster(1000, 6, 14);
  const Vector z = Vector::Constant(6, 0.3);
  Vector exact = Vector::Zero(6);
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const Vector diff = z - X.row(i).transpose();
    exact += diff / diff.norm();
  }
  exact /= 1000.0;
  const MeanGradient g = mean_unit_gradient(X, z);
  EXPECT_LT((g.g - exact).norm(), 1e-8);
  EXPECT_NEAR(g.sensitivity, 2.0 / 1000, 1e-9);
}

TEST(Dpgd, CurvatureIsTheQuantisedInverseDistanceMean) {
  const RowMatrix X = cluster(1000, 6, 14);
  const Vector z = Vector::Constant(6, 0.3);
  const double tau = 0.05;
  double exact = 0;
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    exact += tau / std::max((z - X.row(i).transpose()).norm(), tau);
  exact /= 1000.0;
  const MeanGradient g = mean_unit_gradient(X, z, tau);
  EXPECT_NEAR(g.curvature, exact, 1e-8);
  EXPECT_GT(g.curvature, 0);
  EXPECT_LE(g.curvature, 1);
  // Replacing one row moves the released mean by at most the stated sensitivity.
  RowMatrix Y = X;
  Y.row(7) = z.transpose();  // distance 0: its term goes from < 1 to exactly 1
  EXPECT_LE(std::abs(mean_unit_gradient(Y, z, tau).curvature - g.curvature),
            curvature_sensitivity(1000));
  EXPECT_EQ(mean_unit_gradient(X, z).curvature, 0);  // tau = 0: not computed
}

TEST(Dpgd, WeiszfeldStepConvergesWhereTheRadiusStepOvershoots) {
  // Two scales: r̂ (≈ the 0.75-quantile distance) is ~10× Weiszfeld's step 1/H.
  SeededRng g(5);
  RowMatrix X(2000, 20);
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = 0; j < X.cols(); ++j) X(i, j) = (i % 2 ? 0.9 : 0.1) * standard_normal(g);
  const auto w = weiszfeld(X);
  const Vector start = Vector::Constant(20, 0.3);
  DpgdOptions o;
  o.rho = 1;
  o.steps = 3;
  o.radius = 8;  // ~ r̂ here
  o.eta = o.radius / std::sqrt(3.0);
  o.average = false;
  o.sigma_scale = 0;
  Budget b(PrivacyLoss::zcdp(1), Accountant::zcdp);
  SeededRng rng(1);
  const double plain = (objective(X, dpgd(X, start, o, b, rng)) - w.f) / w.f;
  o.weiszfeld_step = true;
  const double weiszfeld_step = (objective(X, dpgd(X, start, o, b, rng)) - w.f) / w.f;
  EXPECT_GT(plain, 1e-2);
  EXPECT_LT(weiszfeld_step, 1e-4);
}

// ---- budget accounting --------------------------------------------------------------------------

TEST(Budget, SpendBeforeNoiseAndRefuseWhenShort) {
  const RowMatrix X = cluster(200, 3, 15);
  DpgdOptions o;
  o.rho = 0.5;
  o.steps = 3;
  o.radius = 1;
  o.eta = 0.1;
  Budget small(PrivacyLoss::zcdp(0.4), Accountant::zcdp);
  SeededRng a(1), b(1);
  EXPECT_THROW(dpgd(X, Vector::Zero(3), o, small, a), BudgetExceeded);
  EXPECT_TRUE(small.ledger().empty());
  EXPECT_EQ(a.next_u64(), b.next_u64());  // no noise was drawn
}

TEST(GeometricMedian, ReleasesStayWithinTheRequestedBudget) {
  const RowMatrix X = cluster(3000, 5, 16);
  for (auto profile : {Profile::practical, Profile::paper}) {
    GeometricMedianOptions o;
    o.profile = profile;
    o.privacy = {1, 1e-6};
    o.domain_radius = 50;
    o.localization_steps = 20;
    SeededRng rng(2);
    const auto r = geometric_median(X, o, rng);
    EXPECT_LE(r.privacy.epsilon, 1.0);
    EXPECT_LE(r.privacy.delta, 1e-6);
    EXPECT_TRUE(r.privacy.certified);
    EXPECT_TRUE(r.seeded);
    EXPECT_TRUE(r.estimate.allFinite());
    EXPECT_FALSE(r.ledger.empty());
    dpstats::testing::expect_guarantee_from_ledger(r);
  }
  GeometricMedianOptions o;
  o.privacy = {zcdp_to_epsilon(0.5, 1e-6), 1e-6};
  o.domain_radius = 50;
  SeededRng rng(3);
  const auto r = geometric_median(X, o, rng);
  ASSERT_TRUE(r.privacy.rho.has_value());
  EXPECT_LE(*r.privacy.rho, 0.5 * (1 + 1e-9));
  EXPECT_GT(*r.privacy.rho, 0.49);  // the practical profile spends (almost) all of it
  dpstats::testing::expect_guarantee_from_ledger(r);
}

TEST(GeometricMedian, RejectsBadInput) {
  RowMatrix X = cluster(100, 3, 17);
  GeometricMedianOptions o;
  o.privacy = {1, 1e-6};
  o.domain_radius = 50;
  SeededRng rng(1);
  auto bad = [&](auto edit) {
    GeometricMedianOptions c = o;
    edit(c);
    EXPECT_THROW(geometric_median(X, c, rng), InvalidArgument);
  };
  bad([](auto& c) { c.privacy.epsilon = 0; });  // not given
  bad([](auto& c) { c.privacy.epsilon = -1; });
  bad([](auto& c) { c.privacy.delta = 1; });
  bad([](auto& c) { c.privacy.delta = 0; });  // Gaussian noise needs delta > 0
  bad([](auto& c) { c.domain_radius = 0; });
  bad([](auto& c) { c.scale_share = 0; });
  bad([](auto& c) { c.scale_share = 0.6; });
  bad([](auto& c) { c.bound_check_share = 0.5; });
  bad([](auto& c) { c.run.threads = 0; });
  bad([](auto& c) { c.min_radius = -1; });
  X(3, 1) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(geometric_median(X, o, rng), InvalidArgument);
}

// ---- adversarial inputs -------------------------------------------------------------------------

TEST(GeometricMedian, TinyNDuplicatesAndOneDimension) {
  for (std::int64_t n : {1, 2, 19, 20}) {
    const RowMatrix X = cluster(n, 3, 18 + n);
    for (auto profile : {Profile::practical, Profile::paper}) {
      GeometricMedianOptions o;
      o.profile = profile;
      o.privacy = {1, 1e-6};
      o.domain_radius = 50;
      o.localization_steps = 5;
      SeededRng rng(4);
      const auto r = geometric_median(X, o, rng);
      EXPECT_TRUE(r.estimate.allFinite());
      EXPECT_EQ(r.estimate.size(), 3);
    }
  }
  const RowMatrix same = RowMatrix::Constant(500, 4, -1.25);
  GeometricMedianOptions o;
  o.privacy = {zcdp_to_epsilon(10, 1e-6), 1e-6};
  o.domain_radius = 8;
  SeededRng rng(5);
  const auto r = geometric_median(same, o, rng);
  EXPECT_TRUE(r.estimate.allFinite());
  EXPECT_LT((r.estimate - Vector::Constant(4, -1.25)).norm(), 0.5);
  SeededRng g(6);
  RowMatrix line(2001, 1);
  for (int i = 0; i < 2001; ++i) line(i, 0) = 3 + standard_normal(g);
  const auto r1 = geometric_median(line, o, rng);
  EXPECT_NEAR(r1.estimate[0], weiszfeld(line).x[0], 0.1);
}

TEST(GeometricMedian, FarOutliersStayNearTheCluster) {
  // 10% of the rows at norm 1e6 with R = 1e6 (adversarial inputs).
  SeededRng g(7);
  RowMatrix X(5000, 5);
  for (int i = 0; i < 5000; ++i)
    for (int j = 0; j < 5; ++j) X(i, j) = 0.1 * standard_normal(g) + (i < 500 ? 1e6 / std::sqrt(5.0) : 3);
  GeometricMedianOptions o;
  o.privacy = {1, 1e-6};
  o.domain_radius = 1e6;
  o.min_radius = 1e-3;
  SeededRng rng(8);
  const auto r = geometric_median(X, o, rng);
  const double r_hat = r.diagnostics["r_hat"].get<double>();
  const auto w = weiszfeld(X);
  EXPECT_LE(r_hat, 4 * quantile_radius(X, w.x, 0.9));
  EXPECT_GE(r_hat, quantile_radius(X, w.x, 0.75) / 4);
  EXPECT_LT((r.estimate - w.x).norm(), 3 * r_hat);
}

TEST(QuantileRadiusRelease, MethodsAndPrivacy) {
  const RowMatrix X = cluster(1000, 10, 19, 4);
  SeededRng rng(9);
  QuantileRadiusOptions o;
  o.privacy = {1, 1e-5};
  o.min_radius = 0.01;
  o.domain_radius = 4;
  auto r = quantile_radius_release(X, o, rng);
  EXPECT_EQ(r.privacy.epsilon, 1);
  EXPECT_EQ(r.privacy.delta, 1e-5);
  dpstats::testing::expect_guarantee_from_ledger(r);
  o.method = RadiusMethod::radius_finder;
  o.privacy.delta = 0;
  r = quantile_radius_release(X, o, rng);
  EXPECT_EQ(r.privacy.delta, 0);
  EXPECT_GT(r.estimate, 0);
  dpstats::testing::expect_guarantee_from_ledger(r);
  o.method = RadiusMethod::fast_radius_permuted;
  r = quantile_radius_release(X, o, rng);
  dpstats::testing::expect_guarantee_from_ledger(r);
  o.method = RadiusMethod::fast_radius;  // needs delta > 0
  EXPECT_THROW(quantile_radius_release(X, o, rng), InvalidArgument);
}

// ---- FastCenter (Alg. 3) ------------------------------------------------------------------------

TEST(FastCenter, PartnersAndValidation) {
  EXPECT_EQ(fast_center_partners(1000, 1e-5), 12788);  // ⌈600 ln(18·10^8)⌉ = 12787, up to 4ℤ
  EXPECT_EQ(fast_center_partners(1000, 1e-5) % 4, 0);
  SeededRng rng(1);
  EXPECT_THROW(fast_center(RowMatrix::Zero(19, 2), 1, 1, 1, 1e-5, rng), InvalidArgument);
  EXPECT_THROW(fast_center(RowMatrix::Zero(40, 2), 0, 1, 1, 1e-5, rng), InvalidArgument);
  EXPECT_THROW(fast_center(RowMatrix::Zero(40, 2), 1, -1, 1, 1e-5, rng), InvalidArgument);
  EXPECT_THROW(fast_center(RowMatrix::Zero(40, 2), 1, 1, 0, 1e-5, rng), InvalidArgument);
  EXPECT_THROW(fast_center(RowMatrix::Zero(40, 2), 1, 1, 1, 0, rng), InvalidArgument);
  // The bounded lattice Laplace gate's δ exceeds δ/6 for large ε: refused, not loosened.
  EXPECT_THROW(fast_center_plan(1000, 2, 1, 1, 4, 1e-5), InvalidArgument);
  EXPECT_NO_THROW(fast_center_plan(1000, 2, 1, 1, 2.5, 1e-5));
}

TEST(FastCenter, PlanIsExactAndWithinThePapersBounds) {
  for (const std::int64_t n : {std::int64_t{20}, std::int64_t{10000}, std::int64_t{1000000}}) {
    for (const std::int64_t d : {std::int64_t{1}, std::int64_t{50}, std::int64_t{784}}) {
      const double r_hat = 0.7, eps = 0.25, delta = 2.5e-6;
      const auto p = fast_center_plan(n, d, 50, r_hat, eps, delta);
      EXPECT_EQ(p.k % 4, 0);
      EXPECT_GE(static_cast<double>(p.k), 600 * std::log(18.0 * n / delta));
      // Exact ranges: every weighted term and the n-row sum, every squared lattice distance.
      const double cap = std::ldexp(1.0, p.bits);
      EXPECT_LT(static_cast<double>(n) * p.quarter * cap, 0x1p53);
      EXPECT_LE(static_cast<double>(d) * 4 * cap * cap, 0x1p53);
      EXPECT_GE(p.quantum * cap, 50.0);  // the lattice covers B(0, R)
      EXPECT_LE(p.r_eff, r_hat * (1 + 1e-12));
      EXPECT_GT(p.r_eff, r_hat * (1 - 1e-3));
      // The data-dependent denominator bounded by the gate: W_min > 0.55 n (k/4).
      EXPECT_GT(static_cast<double>(p.min_weight), 0.55 * n * p.quarter);
      EXPECT_LE(static_cast<double>(p.min_weight), 0.55 * n * p.quarter + 1);
      EXPECT_LT(p.sensitivity, 400 * r_hat / n);  // the paper's bound is looser
      EXPECT_GE(p.sensitivity, 19 * 8 * r_hat / (0.55 * n) * (1 - 1e-3));
      EXPECT_LE(p.gate_delta, delta / 6);
      EXPECT_GE(static_cast<double>(p.gate_scale), 24 * p.quarter / eps);
      EXPECT_GE(static_cast<double>(p.gate_bound), p.gate_scale * std::log(24 / delta));
    }
  }
}

TEST(FastCenter, FarApartPointsFailTheGate) {
  RowMatrix X(40, 2);
  for (int i = 0; i < 40; ++i) X.row(i) << 10.0 * i, 0;  // pairwise farther than 2r̂ = 2
  SeededRng rng(2);
  const auto r = fast_center(X, 1000, 1, 1, 1e-5, rng);
  EXPECT_TRUE(r.failed);
  EXPECT_EQ(r.centre, Vector::Zero(2));
}

TEST(FastCenter, IdenticalPointsGiveThePointPlusCalibratedNoise) {
  const RowMatrix X = RowMatrix::Constant(1000, 2, 3.0);
  SeededRng rng(3);
  const double eps = 2, delta = 1e-2;
  const auto plan = fast_center_plan(1000, 2, 8, 0.5, eps, delta);
  const double sigma =
      GaussianMechanism::from_epsilon_delta(plan.sensitivity, eps / 2, delta / 6, 2).sigma();
  Vector sum = Vector::Zero(2);
  const int reps = 10;
  for (int t = 0; t < reps; ++t) {
    const auto r = fast_center(X, 8, 0.5, eps, delta, rng);
    ASSERT_FALSE(r.failed);
    EXPECT_EQ(r.sigma, sigma);
    EXPECT_EQ(r.sensitivity, plan.sensitivity);
    sum += r.centre;
  }
  EXPECT_LT((sum / reps - Vector::Constant(2, 3.0)).cwiseAbs().maxCoeff(), 5 * sigma / std::sqrt(reps * 1.0));
}

TEST(FastCenter, RowsBeyondTheDomainAreProjected) {
  // Half the rows far outside B(0, R): projected onto the sphere, they are 2r̂-close to each
  // other, so the gate passes and the centre stays in B(0, R) up to the noise.
  RowMatrix X = RowMatrix::Zero(1000, 2);
  for (int i = 0; i < 1000; i += 2) X(i, 0) = 1e6;
  SeededRng rng(4);
  const auto r = fast_center(X, 1, 4, 2, 1e-2, rng);
  ASSERT_FALSE(r.failed);
  EXPECT_LT(r.centre.norm(), 1 + 10 * r.sigma);
}

TEST(FastCenter, TheGateIsTheIntegerTestOfTheProof) {
  const auto p = fast_center_plan(10000, 2, 1, 1, 1, 1e-5);
  SeededRng rng(5);
  // W <= 0.55 n (k/4) can never pass (ξ <= τ); W = n (k/4) with τ < 0.45 n (k/4) always does.
  for (int t = 0; t < 200; ++t) EXPECT_FALSE(fast_center_gate(p.min_weight - 1, p, rng));
  ASSERT_LT(2 * p.gate_bound, 9 * 10000 * p.quarter / 20);
  for (int t = 0; t < 200; ++t) EXPECT_TRUE(fast_center_gate(10000 * p.quarter, p, rng));
}

// The gate's mechanism states its own loss: epsilon K/t (rounded up, at most the gate's epsilon/2)
// and the plan's delta (P(|xi| > tau - K) / P(|xi| <= tau)); every draw lies within +-tau.
TEST(FastCenter, TheGateMechanismStatesItsOwnLoss) {
  const auto p = fast_center_plan(10000, 2, 1, 1, 1, 1e-5);
  const BoundedLaplaceMechanism gate(p.gate_scale, p.gate_bound, p.gate_sensitivity);
  EXPECT_EQ(gate.delta(), p.gate_delta);
  const LedgerEntry e = gate.ledger_entry("gate");
  EXPECT_EQ(e.mechanism, "bounded_laplace");
  EXPECT_EQ(e.loss.delta, p.gate_delta);
  EXPECT_GE(e.loss.epsilon, static_cast<double>(p.gate_sensitivity) / p.gate_scale);
  EXPECT_LE(e.loss.epsilon, 0.5);
  SeededRng rng(6);
  for (int t = 0; t < 1000; ++t) EXPECT_LE(std::abs(gate.noise(rng)), p.gate_bound);
  EXPECT_THROW(BoundedLaplaceMechanism(10, 5, 5), InvalidArgument);  // bound <= sensitivity
}

// The early decision (docs/proofs/median.md §2) returns what the full count would: on data where
// every pair is within the first grid radius the first step passes, and on data where no pair is
// within any grid radius the search falls back, after far fewer than T·n·k distances.
TEST(FastRadius, EarlyDecisionStopsBeforeCountingEveryPair) {
  const RowMatrix same = RowMatrix::Constant(5000, 3, 1.5);
  SeededRng rng(3);
  const auto r = fast_radius(same, 0.01, 10, 1, 1e-5, rng);
  EXPECT_EQ(r.step, 1);
  const int k = fast_radius_partners(fast_radius_steps(0.01, 10), 1e-5);
  EXPECT_LT(r.distance_evaluations, std::int64_t{5000} * k);  // settled before the last block
  RowMatrix far(5000, 1);
  for (Eigen::Index i = 0; i < far.rows(); ++i) far(i, 0) = 100.0 * static_cast<double>(i);
  const auto f = fast_radius(far, 0.01, 10, 1, 1e-5, rng);
  EXPECT_TRUE(f.fell_back);
  EXPECT_LT(f.distance_evaluations, std::int64_t{5000} * k * f.grid_size / 2);
}

TEST(FastRadius, ThreadsDoNotChangeTheSeededSearch) {
  const RowMatrix X = cluster(6000, 4, 9, 4);
  for (std::uint64_t s = 0; s < 3; ++s) {
    SeededRng a(s), b(s), c(s);
    const auto r1 = fast_radius(X, 0.01, 4, 1, 1e-5, a, 1);
    const auto r2 = fast_radius(X, 0.01, 4, 1, 1e-5, b, 2);
    const auto r3 = fast_radius(X, 0.01, 4, 1, 1e-5, c, 3);
    EXPECT_EQ(r1.r_hat, r2.r_hat);
    EXPECT_EQ(r1.r_hat, r3.r_hat);
    EXPECT_EQ(r1.distance_evaluations, r2.distance_evaluations);
    EXPECT_EQ(r1.distance_evaluations, r3.distance_evaluations);
    PermutedRadiusOptions o1, o3;
    o3.threads = 3;
    SeededRng d(s), e(s);
    EXPECT_EQ(fast_radius_permuted(X, 0.01, 4, 1, d, o1).r_hat,
              fast_radius_permuted(X, 0.01, 4, 1, e, o3).r_hat);
  }
}
