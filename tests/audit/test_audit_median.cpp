// Privacy audits of the geometric-median releases at small size (docs/auditing.md): the final
// release of the practical pipeline, the permutation-design radius search and one DPGD step, each
// on a worst-case neighbouring pair, audited at the loss the release reports.
#include <gtest/gtest.h>

#include <cstdio>

#include "audit/auditor.hpp"
#include "dpstats/median/boosting.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/median/radius.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats::audit {
namespace {

void report(const AuditResult& r) { std::printf("    %s\n", r.summary().c_str()); }

AuditOptions options(std::size_t samples) {
  AuditOptions o;
  o.samples = samples;
  o.seed = 21;
  return o;
}

VectorMechanism practical_run(RowMatrix X, double epsilon) {
  return [X, epsilon](Rng& g) {
    GeometricMedianOptions o;
    o.privacy = {epsilon, 1e-6};
    o.domain_radius = 4;
    o.min_radius = 0.01;
    return std::vector<double>{geometric_median(X, o, g).estimate[0]};
  };
}

RowMatrix pair_data(double x) {
  RowMatrix X = RowMatrix::Zero(12, 1);
  X(11, 0) = x;
  return X;
}

TEST(AuditMedian, OneDpgdStepOnTheWorstPair) {
  // Every gradient at z = 0.5 is −1 on D; on D' one row sits above z, so the mean moves by 2/n.
  const double rho = 0.5;
  auto run = [rho](RowMatrix X) {
    return [X, rho](Rng& g) {
      DpgdOptions o;
      o.rho = rho;
      o.steps = 1;
      o.eta = 1;
      o.radius = 100;
      Budget b(PrivacyLoss::zcdp(rho), Accountant::zcdp);
      return std::vector<double>{dpgd(X, Vector::Constant(1, 0.5), o, b, g)[0]};
    };
  };
  const double delta = 1e-6;
  const double eps = zcdp_to_epsilon(rho, delta);
  const auto r = audit(run(pair_data(0)), run(pair_data(1)), eps, delta, options(200000));
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  // The pair is tight for the Gaussian: the audit must see a real loss (noise not inflated).
  EXPECT_GT(r.epsilon_lower_bound, 0.5) << r.summary();
}

TEST(AuditMedian, PermutedRadiusSearch) {
  const double eps = 1;
  auto run = [eps](RowMatrix X) {
    return [X, eps](Rng& g) {
      return std::vector<double>{fast_radius_permuted(X, 0.01, 4, eps, g).r_hat};
    };
  };
  // Replacing the far row by a copy of the cluster moves the pair counts as much as one row can.
  RowMatrix D = RowMatrix::Zero(12, 1), Dp = RowMatrix::Zero(12, 1);
  for (int i = 0; i < 12; ++i) D(i, 0) = Dp(i, 0) = 0.02 * i;
  Dp(11, 0) = 3.5;
  const auto r = audit(run(D), run(Dp), eps, 0, options(100000));
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
}

// The whole practical pipeline (radius search, localization, DPGD) on its worst single-row
// change at n = 12, d = 1, audited at the (ε, δ) its release reports. Each run costs ~1 ms (most of
// it the budget's zCDP -> (ε, δ) conversions), so the CI size is 20000 samples per side; the slow
// suite repeats it with 200000.
TEST(AuditMedian, PracticalPipelineFinalRelease) {
  const auto r = audit(practical_run(pair_data(0), 4), practical_run(pair_data(4), 4), 4.0, 1e-6,
                       options(20000));
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
}

}  // namespace
}  // namespace dpstats::audit
