// Audit of the continual-moments release (docs/proofs/moments.md): a 4-step stream, d = 2, JME
// with the square-root factorization, all 4 steps' first and second moments as one output; the
// neighbours replace one row x by -x (the worst case of the joint sensitivity, docs/proofs/moments.md).
#include <gtest/gtest.h>

#include "audit/auditor.hpp"
#include "dpstats/moments/estimator.hpp"
#include "dpstats/privacy/conversions.hpp"

using namespace dpstats;
using namespace dpstats::moments;
using namespace dpstats::audit;

namespace {

VectorMechanism stream_release(const RowMatrix& X, const MomentsConfig& c) {
  return [X, c](Rng& rng) {
    const auto r = estimate_moments(X, c, rng);
    std::vector<double> out(r.estimate.first.data(),
                            r.estimate.first.data() + r.estimate.first.size());
    out.insert(out.end(), r.estimate.second.data(),
               r.estimate.second.data() + r.estimate.second.size());
    return out;
  };
}

// The budget as rho (the (epsilon, delta) target converted once: from_rho is cheap per run, the
// conversion is not); the claim audited is the (epsilon, delta) that rho implies.
MomentsConfig jme_config(double epsilon) {
  MomentsConfig c = make_config(4, 2, "jme", "prefix", "sqrt", false);
  c.rho = epsilon_delta_to_zcdp(epsilon, 1e-5);
  c.clip = 1;
  c.clip_check_share = 0;  // rows of norm <= 1 by construction: the clip never bites
  c.privacy.delta = 1e-5;
  return c;
}

AuditOptions options() {
  AuditOptions o;
  o.samples = 60000;
  o.seed = 17;
  return o;
}

}  // namespace

TEST(AuditMoments, JmeStreamReleaseHoldsItsClaim) {
  RowMatrix X(4, 2), Xp(4, 2);
  X << 0.6, 0.8, 0.6, 0.8, 0.6, 0.8, 0.6, 0.8;
  Xp = X;
  Xp.row(0) = -X.row(0);  // the first row has the largest column norm of C
  const auto r =
      dpstats::audit::audit(stream_release(X, jme_config(1.0)), stream_release(Xp, jme_config(1.0)), 1.0, 1e-5,
            options());
  std::cout << r.summary() << "\n";
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GT(r.epsilon_lower_bound, 0.1) << r.summary();
  // Mis-use: the release calibrated for epsilon = 6, claimed at epsilon = 1, is caught.
  const auto b =
      dpstats::audit::audit(stream_release(X, jme_config(6.0)), stream_release(Xp, jme_config(6.0)), 1.0, 1e-5,
            options());
  std::cout << b.summary() << "\n";
  EXPECT_TRUE(b.violation) << b.summary();
}
