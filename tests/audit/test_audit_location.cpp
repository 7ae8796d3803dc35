// Privacy audit at toy size of the scale layer's private_location (docs/proofs/scale.md §2b): the
// released (location, scale) on two neighbouring columns, one row replaced by an enormous value
// that moves the median by one rank. The auditor's lower bound must not exceed the share's
// epsilon. Small grids (4 points per octave, short linear grids) keep each run cheap; the proof
// covers every grid.
#include <gtest/gtest.h>

#include <iostream>

#include "audit/auditor.hpp"
#include "dpstats/scale/location.hpp"

using namespace dpstats;

namespace {

RowMatrix column(bool enormous) {
  RowMatrix X(16, 1);
  for (int i = 0; i < 16; ++i) X(i, 0) = 1e4 + 0.5 * i;  // far from 0: the re-centring matters
  if (enormous) X(3, 0) = 1e9;
  return X;
}

audit::VectorMechanism location(const RowMatrix& X, bool final_mad) {
  return [X, final_mad](Rng& rng) {
    LocationOptions o;
    o.loss = PrivacyLoss::pure(1);
    o.per_octave = 4;
    o.refine_points = 64;
    o.recentre_points = 16;
    o.final_mad = final_mad;
    ReleaseBudget budget(PrivacyLoss::pure(1), Accountant::basic);
    const LocationEstimate e = private_location(X, o, budget, rng);
    return std::vector<double>{e.columns[0].location, e.columns[0].scale};
  };
}

TEST(AuditLocation, PrivateLocationIsNotCaughtAboveEpsilon) {
  for (bool final_mad : {true, false}) {
    audit::AuditOptions a;
    a.samples = 6000;  // each run builds its grids: kept short for the default suite
    a.seed = 9;
    const auto r = audit::audit(location(column(false), final_mad),
                                location(column(true), final_mad), 1.0, 0, a);
    EXPECT_LE(r.epsilon_lower_bound, 1.0) << r.summary();
    std::cout << "private_location (final_mad " << final_mad << "): lower bound "
              << r.epsilon_lower_bound << "\n";
  }
}

}  // namespace
