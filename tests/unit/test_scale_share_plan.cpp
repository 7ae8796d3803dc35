// Scale shares planned from public values (scale/share.hpp: plan_share; docs/proofs/scale.md §9):
// the plan's rank errors are the run's, the share is the smallest usable one times the margin
// within [floor, cap], and when no share up to the cap is usable the release abstains before
// anything is charged or drawn.
#include <gtest/gtest.h>

#include "dpstats/mean/bounded_mean.hpp"
#include "dpstats/mean/methods.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/random/float_normal.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/clip_bounds.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/scale/share.hpp"
#include "dpstats/seam.hpp"

namespace dpstats {
namespace {

RowMatrix normal_rows(Eigen::Index n, Eigen::Index d, std::uint64_t seed) {
  SeededRng g(seed);
  RowMatrix X(n, d);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < d; ++j) X(i, j) = 10 + 3 * standard_normal(g);
  return X;
}

TEST(ScaleSharePlan, LogGridPointsWithoutBuilding) {
  for (int m : {1, 3, 32})
    for (bool nonnegative : {false, true})
      EXPECT_EQ(log_grid_points(m, nonnegative), log_grid(m, nonnegative).size()) << m;
}

// The facts a plan computes are the ones the run states (same n, d, share).
TEST(ScaleSharePlan, PlannedFactsAreTheRunsFacts) {
  const RowMatrix X = normal_rows(500, 2, 1);
  ScaleOptions so;
  so.loss = PrivacyLoss::pure(0.7);
  ReleaseBudget a(so.loss, Accountant::basic, nullptr);
  SeededRng rng(2);
  const ScaleEstimate est = private_scale(X, so, a, rng);
  const SelectionFacts planned = planned_scale_facts(so, 2, 500);
  EXPECT_DOUBLE_EQ(planned.rank_error, est.columns[0].facts.rank_error);
  EXPECT_DOUBLE_EQ(planned.n, est.columns[0].facts.n);
  EXPECT_DOUBLE_EQ(planned.tolerance, est.columns[0].facts.tolerance);

  NormQuantileOptions no;
  no.loss = PrivacyLoss::zcdp(0.02);
  no.q = 0.8;
  ReleaseBudget b(PrivacyLoss::zcdp(0.02), Accountant::zcdp, nullptr);
  const NormQuantile q = private_norm_quantile(X, no, b, rng);
  EXPECT_DOUBLE_EQ(planned_norm_quantile_facts(no, 500).rank_error, q.facts.rank_error);

  // Clip bounds: the planned verdict is the run's on a table whose cells are inside the grids,
  // on both sides of the rows the rule needs.
  ClipBoundsOptions co;
  co.loss = PrivacyLoss::pure(0.5);
  for (Eigen::Index n : {300, 3000}) {
    const RowMatrix Y = normal_rows(n, 1, 3);
    ReleaseBudget c(co.loss, Accountant::basic, nullptr);
    const ClipBounds cb = private_clip_bounds(Y, co, c, rng);
    EXPECT_EQ(planned_reliability(co, 1, static_cast<double>(n), "--bounds").usable,
              reliability(cb, "--bounds").usable)
        << n;
  }
}

TEST(ScaleSharePlan, SmallestUsableTimesMarginWithinFloorAndCap) {
  auto at_least = [](double s0) {
    return [s0](double s) {
      return s >= s0 ? Reliability::ok("x") : Reliability::unusable("x", "too small", "more");
    };
  };
  PlannedShare p = plan_share(at_least(0.2));
  EXPECT_TRUE(p.usable);
  EXPECT_NEAR(p.needed, 0.2, 1e-6);
  EXPECT_NEAR(p.share, 0.4, 1e-5);
  EXPECT_DOUBLE_EQ(plan_share(at_least(0.01)).share, 0.1);  // the floor: large tables
  EXPECT_DOUBLE_EQ(plan_share(at_least(0.3)).share, 0.5);   // the cap
  p = plan_share(at_least(0.7));
  EXPECT_FALSE(p.usable);
  EXPECT_DOUBLE_EQ(p.share, 0.5);
  EXPECT_EQ(p.reliability.cause, "too small");
  EXPECT_EQ(p.json()["source"], "planned");
  EXPECT_THROW(plan_share(at_least(0.2), {.floor = 0.6, .cap = 0.5}), InvalidArgument);
}

// The bounded mean on a table too small for any share up to the cap: abstains with the rows that
// would suffice, charges nothing and draws nothing; a given share runs as before.
TEST(ScaleSharePlan, MeanAbstainsBeforeChargingWhenNoShareSuffices) {
  const RowMatrix X = normal_rows(300, 5, 4);
  MeanRequest r;
  r.method = "bounded";
  r.privacy = {0.3, 1e-6};
  Budget caller(PrivacyLoss::approximate(1, 1e-5), Accountant::basic);
  SeededRng rng(5);
  const Release<Vector> out = run_mean(X, r, rng, &caller);
  ASSERT_EQ(out.status, Status::abstained);
  EXPECT_TRUE(out.ledger.empty());
  EXPECT_EQ(out.privacy.epsilon, 0);
  EXPECT_EQ(caller.spent().epsilon, 0);
  const std::string why = out.diagnostics["abstained"];
  EXPECT_NE(why.find("rows at this epsilon"), std::string::npos) << why;
  EXPECT_NE(why.find("nothing was charged"), std::string::npos) << why;
  EXPECT_EQ(out.diagnostics["scale_share"]["usable"], false);
  r.scale_share = 0.5;  // given: honoured, charged (and then abstains on the estimate)
  const Release<Vector> given = run_mean(X, r, rng, nullptr);
  EXPECT_FALSE(given.ledger.empty());
  EXPECT_EQ(given.diagnostics["scale_share"]["source"], "given");
}

// Where a share up to the cap suffices the plan takes it and states it; a large table keeps 0.1.
TEST(ScaleSharePlan, MeanStatesThePlannedShare) {
  SeededRng rng(6);
  for (const char* method : {"bounded", "dp-mean"}) {
    MeanRequest r;
    r.method = method;
    r.privacy = {1, 1e-6};
    const Release<Vector> small = run_mean(normal_rows(4000, 1, 7), r, rng);
    const double s = small.diagnostics["scale_share"]["value"];
    EXPECT_GT(s, 0.1) << method;
    EXPECT_LE(s, 0.5) << method;
    const Release<Vector> large = run_mean(normal_rows(200000, 1, 8), r, rng);
    EXPECT_DOUBLE_EQ(large.diagnostics["scale_share"]["value"].get<double>(), 0.1) << method;
    EXPECT_EQ(large.status, Status::ok) << method;
  }
}

TEST(ScaleSharePlan, MedianAbstainsBeforeChargingWhenNoShareSuffices) {
  GeometricMedianOptions o;
  o.privacy = {0.1, 1e-6};
  SeededRng rng(9);
  const Release<Vector> out = geometric_median(normal_rows(200, 3, 10), o, rng);
  ASSERT_EQ(out.status, Status::abstained);
  EXPECT_TRUE(out.ledger.empty());
  EXPECT_NE(out.diagnostics["abstained"].get<std::string>().find("--domain-radius"),
            std::string::npos);
  o.privacy = {1, 1e-6};
  const Release<Vector> ok = geometric_median(normal_rows(20000, 3, 11), o, rng);
  EXPECT_EQ(ok.status, Status::ok);
  EXPECT_EQ(ok.diagnostics["scale_share"]["source"], "planned");
}

}  // namespace
}  // namespace dpstats
