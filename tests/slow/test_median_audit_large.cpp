// The geometric-median pipeline audit of tests/audit at 200000 samples per side (about 4 minutes).
#include <gtest/gtest.h>

#include <cstdio>

#include "audit/auditor.hpp"
#include "dpstats/median/geometric_median.hpp"

namespace dpstats::audit {
namespace {

VectorMechanism median_run(RowMatrix X, double epsilon) {
  return [X, epsilon](Rng& g) {
    GeometricMedianOptions o;
    o.privacy = {epsilon, 1e-6};
    o.domain_radius = 4;
    o.min_radius = 0.01;
    return std::vector<double>{geometric_median(X, o, g).estimate[0]};
  };
}

RowMatrix median_pair(double x) {
  RowMatrix X = RowMatrix::Zero(12, 1);
  X(11, 0) = x;
  return X;
}

TEST(SlowAuditMedian, PracticalPipelineFinalRelease) {
  AuditOptions o;
  o.samples = 200000;
  o.seed = 22;
  for (double eps : {1.0, 4.0}) {
    const auto r = audit(median_run(median_pair(0), eps), median_run(median_pair(4), eps), eps,
                         1e-6, o);
    std::printf("    %s\n", r.summary().c_str());
    EXPECT_FALSE(r.violation) << r.summary();
  }
}

}  // namespace
}  // namespace dpstats::audit
