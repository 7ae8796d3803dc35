// Black-box audit of PRIME's final release at small size (docs/proofs/mean.md): neighbouring
// datasets that differ in one row (a clean point replaced by an outlier in the corrupted
// direction), the whole algorithm run end to end on each, and the auditor's lower bound on ε
// compared with the claim. A deterministic (noise-free) variant must be flagged, so the audit can
// fail. At n = 1000, d = 1, ε = 4 the range step succeeds (the release is an estimate, not an
// abstention) and one run costs ~0.3 ms. The paper profile's range step needs far larger n at any
// auditable ε (it gets 1% of the budget), so it is not audited end to end here; its mechanisms
// are the substrate's audited Laplace and Gaussian.
#include <gtest/gtest.h>

#include <iostream>

#include "audit/auditor.hpp"
#include "dpstats/synthetic/shifted_cluster.hpp"
#include "dpstats/mean/prime.hpp"

using namespace dpstats;
using dpstats::audit::AuditOptions;
using dpstats::audit::VectorMechanism;

namespace {

struct Pair {
  RowMatrix D, Dp;
};

Pair neighbours(std::int64_t n, std::int64_t d) {
  SeededRng g(11);
  Pair p;
  p.D = shifted_cluster(n, d, 0.1, 2.0, g);
  p.Dp = p.D;
  p.Dp.row(0) = Eigen::RowVectorXd::Constant(d, 6.0);  // far in the corrupted direction
  return p;
}

AuditOptions options() {
  AuditOptions o;
  o.samples = 30000;
  o.seed = 3;
  return o;
}

VectorMechanism run(const RowMatrix& X, const PrimeOptions& o, bool noiseless) {
  return [&X, o, noiseless](Rng& g) {
    PrimeTrace trace;
    trace.noiseless = noiseless;
    const auto r = prime(X, o, g, nullptr, noiseless ? &trace : nullptr);
    if (r.status != Status::ok) return std::vector<double>(X.cols(), 1e9);  // abstention atom
    EXPECT_TRUE(r.status == Status::ok || !noiseless);
    return std::vector<double>(r.estimate.data(), r.estimate.data() + r.estimate.size());
  };
}

}  // namespace

TEST(AuditPrime, PracticalFinalReleaseMeetsItsClaim) {
  const Pair p = neighbours(1000, 1);
  PrimeOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 4;
  o.privacy.delta = 1e-3;
  o.alpha = 0.1;
  o.fallback = false;  // audit the filter itself, not DP Mean
  o.T1 = 2;
  o.T2 = 2;
  const auto r = dpstats::audit::audit(run(p.D, o, false), run(p.Dp, o, false), o.privacy.epsilon, o.privacy.delta, options());
  std::cout << "  practical: " << r.summary() << "\n";
  EXPECT_FALSE(r.violation) << r.summary();
}

TEST(AuditPrime, TheNoiselessSwitchIsCaught) {
  // With the filter noise off, the medians and range still vary, but the final mean has no noise:
  // the two neighbours' outputs separate and the audit must report a violation.
  const Pair p = neighbours(1000, 1);
  PrimeOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 4;
  o.privacy.delta = 1e-3;
  o.alpha = 0.1;
  o.fallback = false;
  o.T1 = 2;
  o.T2 = 2;
  AuditOptions ao = options();
  ao.samples = 4000;
  const auto r = dpstats::audit::audit(run(p.D, o, true), run(p.Dp, o, true), o.privacy.epsilon, o.privacy.delta, ao);
  std::cout << "  noiseless: " << r.summary() << "\n";
  EXPECT_TRUE(r.violation) << r.summary();
}
