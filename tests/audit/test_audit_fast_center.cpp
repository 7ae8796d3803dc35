// Privacy audit of the certified FastCenter's gate (docs/proofs/median.md §6.1): the lattice
// bounded Laplace on the integer weight total W, on the pair W, W − Δ_W that sits at the gate's
// threshold, audited at its claim (ε/2, gate_delta). The Gaussian step is the library's secure
// Gaussian, audited in test_audit_mechanisms.cpp; the whole FastCenter needs n ≳ 10^4 rows and
// n·k ≈ 10^8 draws per release, beyond an audit's sample size.
#include <gtest/gtest.h>

#include <cstdio>

#include "audit/auditor.hpp"
#include "dpstats/median/fast_center.hpp"

namespace dpstats::audit {
namespace {

TEST(AuditFastCenter, GateOnTheThresholdPair) {
  const double eps = 1, delta = 1e-5;
  const FastCenterPlan p = fast_center_plan(10000, 1, 1, 1, eps, delta);
  // W passes iff ξ > τ + ⌊11 n (k/4)/20⌋ − W, so W = W_min − 1 + τ passes about half the time
  // and W − Δ_W a factor e^{−ε/2} less often: the pair is tight for the gate's ε/2.
  const std::int64_t W = p.min_weight - 1 + p.gate_bound;
  auto run = [&p](std::int64_t w) {
    return [&p, w](Rng& g) { return fast_center_gate(w, p, g) ? 1.0 : 0.0; };
  };
  AuditOptions o;
  o.samples = 200000;
  o.seed = 22;
  const auto r = audit_scalar(run(W), run(W - p.gate_sensitivity), eps / 2, p.gate_delta, o);
  std::printf("    %s\n", r.summary().c_str());
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GT(r.epsilon_lower_bound, 0.3) << r.summary();  // the noise is not inflated either
}

}  // namespace
}  // namespace dpstats::audit
