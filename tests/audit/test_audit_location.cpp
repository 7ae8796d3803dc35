// Privacy audit at toy size of the scale layer's private_location (docs/proofs/scale.md §2b): the
// released (location, scale) on two neighbouring columns, one row replaced by an enormous value
// that moves the median by one rank. The auditor's lower bound must not exceed the share's
// epsilon, and the same audit must catch the mechanism when it runs at a multiple of the epsilon
// it is audited against (the positive control: otherwise passing proves nothing). Small grids
// (4 points per octave, short linear grids) keep each run cheap; the proof covers every grid.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "audit/auditor.hpp"
#include "dpstats/scale/location.hpp"

using namespace dpstats;

namespace {

// A column whose median moves across cells of the log grid when one row is replaced by an
// enormous value (64 values one octave apart, from 1e4 2^-32 to 1e4 2^31: far from 0, so the
// re-centring matters). The previous pair (16 values 0.5 apart near 1e4) let the selections over
// a grid of every double stay near uniform even at 8 x epsilon, so its audit could catch nothing
// (the positive control below found it): 64 rows concentrate them.
RowMatrix octaves(bool enormous) {
  RowMatrix X(64, 1);
  for (int i = 0; i < 64; ++i) X(i, 0) = std::ldexp(1e4, i - 32);
  if (enormous) X(3, 0) = 1e9;
  return X;
}

// private_location at pure epsilon `eps` on X.
audit::VectorMechanism location(const RowMatrix& X, bool final_mad, double eps = 1) {
  return [X, final_mad, eps](Rng& rng) {
    LocationOptions o;
    o.loss = PrivacyLoss::pure(eps);
    o.per_octave = 4;
    o.refine_points = 64;
    o.recentre_points = 16;
    o.final_mad = final_mad;
    ReleaseBudget budget(PrivacyLoss::pure(eps), Accountant::basic);
    const LocationEstimate e = private_location(X, o, budget, rng);
    return std::vector<double>{e.columns[0].location, e.columns[0].scale};
  };
}

TEST(AuditLocation, PrivateLocationIsNotCaughtAboveEpsilon) {
  for (bool final_mad : {true, false}) {
    audit::AuditOptions a;
    a.samples = 6000;  // each run builds its grids: kept short for the default suite
    a.seed = 9;
    const auto r = audit::audit(location(octaves(false), final_mad),
                                location(octaves(true), final_mad), 1.0, 0, a);
    EXPECT_LE(r.epsilon_lower_bound, 1.0) << r.summary();
    std::cout << "private_location (final_mad " << final_mad << "): lower bound "
              << r.epsilon_lower_bound << "\n";
  }
}

// The positive control: the same pair and the same audit, the mechanism run at kFactor times
// the epsilon it is audited against (measured lower bounds: 1.02 at 8x, 1.08 at 16x, 2.51 at
// 32x with these 6000 samples).
TEST(AuditLocation, CatchesPrivateLocationRunAboveItsEpsilon) {
  constexpr double kFactor = 32;
  audit::AuditOptions a;
  a.samples = 6000;
  a.seed = 9;
  const auto r = audit::audit(location(octaves(false), true, kFactor),
                              location(octaves(true), true, kFactor), 1.0, 0, a);
  EXPECT_GT(r.epsilon_lower_bound, 1.0) << r.summary();
  std::cout << "private_location at " << kFactor << " x epsilon: lower bound "
            << r.epsilon_lower_bound << "\n";
}

}  // namespace
