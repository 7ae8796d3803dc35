// The auditor's self-tests and the audits of the secure Laplace and Gaussian mechanisms at 10^6
// samples per side (the CI-size versions are in tests/audit). Slow label: run with
// `make test-slow`.
//
// A correct mechanism is flagged with probability <= 1e-7 (AuditOptions::false_alarm) by
// construction; see tests/audit/auditor.hpp and docs/auditing.md.
#include <gtest/gtest.h>

#include <cstdio>

#include "audit/auditor.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"

namespace dpstats::audit {
namespace {

constexpr std::size_t kSamples = 1000000;  // per side

using reference::analytic_gaussian_sigma;
using reference::gaussian;
using reference::laplace;
using reference::randomized_response;

void report(const AuditResult& r) { std::printf("    %s\n", r.summary().c_str()); }

AuditOptions options() {
  AuditOptions o;
  o.samples = kSamples;
  o.seed = 20240601;
  return o;
}

TEST(AuditLarge, CorrectLaplacePassesTightly) {
  const auto r = audit_scalar([](Rng& g) { return laplace(g, 1); },
                              [](Rng& g) { return 1 + laplace(g, 1); }, 1, 0, options());
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GE(r.epsilon_lower_bound, 0.95) << r.summary();  // target in the issue: >= 0.8 ε
}

TEST(AuditLarge, HalfNoiseLaplaceIsFlagged) {
  const auto r = audit_scalar([](Rng& g) { return laplace(g, 0.5); },
                              [](Rng& g) { return 1 + laplace(g, 0.5); }, 1, 0, options());
  report(r);
  EXPECT_TRUE(r.violation) << r.summary();
  EXPECT_GE(r.epsilon_lower_bound, 1.9) << r.summary();  // true ε = 2
}

TEST(AuditLarge, LeakingMechanismIsFlagged) {
  auto leaky = [](double x) {
    return [=](Rng& g) { return g.uniform01() < 0.01 ? x : x + laplace(g, 1); };
  };
  const auto r = audit_scalar(leaky(0), leaky(1), 1, 1e-4, options());
  report(r);
  EXPECT_TRUE(r.violation) << r.summary();
  EXPECT_GT(r.epsilon_lower_bound, 4.5) << r.summary();
}

TEST(AuditLarge, AnalyticGaussianPasses) {
  for (const auto& [eps, delta] : {std::pair{1.0, 1e-5}, std::pair{1.0, 1e-3}}) {
    const double sigma = analytic_gaussian_sigma(1, eps, delta);
    const auto r =
        audit_scalar([&](Rng& g) { return gaussian(g, sigma); },
                     [&](Rng& g) { return 1 + gaussian(g, sigma); }, eps, delta, options());
    report(r);
    EXPECT_FALSE(r.violation) << r.summary();
    EXPECT_GT(r.epsilon_lower_bound, delta < 1e-4 ? 0.5 * eps : 0.7 * eps) << r.summary();
  }
}

TEST(AuditLarge, ExactlyTightRandomizedResponse) {
  const auto r =
      audit_scalar(randomized_response(1, 0), randomized_response(1, 1), 1, 0, options());
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GT(r.epsilon_lower_bound, 0.97) << r.summary();
}

// ---- the library's secure mechanisms at 10^6 samples ----------------------------------------

TEST(AuditLarge, SecureLaplacePasses) {
  const LaplaceMechanism m(1, 1);
  const auto r = audit_scalar([&](Rng& g) { return m.apply(0.3, g); },
                              [&](Rng& g) { return m.apply(1.3, g); }, 1, 0, options());
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GE(r.epsilon_lower_bound, 0.95) << r.summary();
  // The bound does not depend on the claimed ε: the same mechanism claimed at ε = 0.9 is flagged.
  EXPECT_GT(r.epsilon_lower_bound, 0.9) << r.summary();
}

TEST(AuditLarge, SecureGaussianPasses) {
  for (const auto& [eps, delta] : {std::pair{1.0, 1e-5}, std::pair{1.0, 1e-3}}) {
    const auto m = GaussianMechanism::from_epsilon_delta(1, eps, delta);
    const auto r = audit_scalar([&](Rng& g) { return m.apply(0.0, g); },
                                [&](Rng& g) { return m.apply(1.0, g); }, eps, delta, options());
    report(r);
    EXPECT_FALSE(r.violation) << r.summary();
    EXPECT_GT(r.epsilon_lower_bound, delta < 1e-4 ? 0.5 * eps : 0.7 * eps) << r.summary();
  }
}

}  // namespace
}  // namespace dpstats::audit
