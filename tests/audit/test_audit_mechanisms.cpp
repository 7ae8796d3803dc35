// Privacy audits of the library's own mechanisms (docs/auditing.md): each is run on a pair of
// neighbouring inputs chosen to be the worst case its proof allows, and audited at the loss it
// reports. Each audit must pass (a correct mechanism is flagged with probability <= 1e-7 by
// construction) and, where cheap, a deliberately mis-calibrated use must be flagged.
//
// The lower bound does not depend on the claimed ε (only on δ, which enters the events' bound),
// so "the same mechanism claimed at a smaller ε" is checked against the same audit's bound.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "audit/auditor.hpp"
#include "dpstats/mean/bounded_mean.hpp"
#include "dpstats/mechanisms/above_threshold.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/histogram.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/mechanisms/quantile.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats::audit {
namespace {

constexpr std::size_t kSamples = 200000;  // per side

void report(const AuditResult& r) { std::printf("    %s\n", r.summary().c_str()); }

AuditOptions options(std::size_t samples = kSamples) {
  AuditOptions o;
  o.samples = samples;
  o.seed = 11;
  return o;
}

std::vector<double> to_std(const Eigen::VectorXd& v) {
  return std::vector<double>(v.data(), v.data() + v.size());
}

// "Every coordinate at or beyond its value on D'": the event on which a product-form (per
// coordinate) noise realises its whole privacy loss, which no single coordinate shows.
CustomEvent orthant_beyond(const std::vector<double>& d_prime) {
  return {"every coordinate beyond its D' value", [d_prime](std::span<const double> x) {
            for (std::size_t j = 0; j < x.size(); ++j) {
              if (d_prime[j] > 0 ? x[j] <= d_prime[j] : x[j] >= d_prime[j]) return false;
            }
            return true;
          }};
}

// ---- Laplace ------------------------------------------------------------------------------------

TEST(AuditMechanisms, SecureLaplaceScalar) {
  const LaplaceMechanism m(1.0, 1.0);
  auto on = [&m](double x) { return [&m, x](Rng& g) { return m.apply(x, g); }; };
  const auto r = audit_scalar(on(0.3), on(1.3), 1.0, 0, options());
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GE(r.epsilon_lower_bound, 0.9) << r.summary();
  // Mis-use: the same mechanism claimed at half its ε.
  EXPECT_GT(r.epsilon_lower_bound, 0.5) << r.summary();
}

TEST(AuditMechanisms, SecureLaplaceVector) {
  const std::vector<double> shift{1.0 / 3, -1.0 / 3, 1.0 / 3};  // l1 distance 1
  auto on = [](const LaplaceMechanism& m, std::vector<double> x) {
    return [&m, x](Rng& g) {
      return to_std(m.apply(Eigen::Map<const Eigen::VectorXd>(x.data(), 3), g));
    };
  };
  AuditOptions o = options();
  o.custom_events.push_back(orthant_beyond(shift));
  const LaplaceMechanism good(1.0, 1.0, 3);
  const auto r = audit(on(good, {0, 0, 0}), on(good, shift), 1.0, 0, o);
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GE(r.epsilon_lower_bound, 0.8) << r.summary();
  // Mis-calibration: the per-coordinate sensitivity (1/3) used instead of the l1 one (1): the
  // true loss on this pair is 3.
  const LaplaceMechanism bad(1.0 / 3, 1.0, 3);
  const auto b = audit(on(bad, {0, 0, 0}), on(bad, shift), 1.0, 0, o);
  report(b);
  EXPECT_TRUE(b.violation) << b.summary();
  EXPECT_GT(b.epsilon_lower_bound, 2.0) << b.summary();
}

// ---- Gaussian -----------------------------------------------------------------------------------

TEST(AuditMechanisms, SecureGaussianFromEpsilonDelta) {
  const double eps = 1, delta = 1e-5;
  auto on = [](const GaussianMechanism& m, double x) {
    return [&m, x](Rng& g) { return m.apply(x, g); };
  };
  const auto m = GaussianMechanism::from_epsilon_delta(1.0, eps, delta);
  const auto r = audit_scalar(on(m, 0.0), on(m, 1.0), eps, delta, options());
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GT(r.epsilon_lower_bound, 0.3) << r.summary();
  // Mis-use: a mechanism built for ε = 4 released under the claim ε = 1.
  const auto loose = GaussianMechanism::from_epsilon_delta(1.0, 4 * eps, delta);
  const auto b = audit_scalar(on(loose, 0.0), on(loose, 1.0), eps, delta, options());
  report(b);
  EXPECT_TRUE(b.violation) << b.summary();
}

TEST(AuditMechanisms, SecureGaussianVector) {
  const double eps = 1, delta = 1e-5;
  const auto m = GaussianMechanism::from_epsilon_delta(1.0, eps, delta, 4);
  auto on = [&m](double c) {
    return [&m, c](Rng& g) { return to_std(m.apply(Eigen::VectorXd::Constant(4, c), g)); };
  };
  const auto r = audit(on(0.0), on(0.5), eps, delta, options());  // l2 distance 1
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GT(r.epsilon_lower_bound, 0.3) << r.summary();
}

TEST(AuditMechanisms, SecureGaussianFromRho) {
  // It reports only rho: audit at the (ε, δ) of the tight zCDP conversion.
  const double rho = 0.125, delta = 1e-3;
  const auto m = GaussianMechanism::from_rho(1.0, rho);
  const double eps = zcdp_to_epsilon(m.rho(), delta);
  auto on = [&m](double x) { return [&m, x](Rng& g) { return m.apply(x, g); }; };
  const auto r = audit_scalar(on(0.0), on(1.0), eps, delta, options());
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GT(r.epsilon_lower_bound, 0.5 * eps) << r.summary();
  // Mis-use: the ε of a 16 times smaller rho (4 times the noise) claimed for this mechanism.
  EXPECT_GT(r.epsilon_lower_bound, zcdp_to_epsilon(rho / 16, delta)) << r.summary();
}

// ---- AboveThreshold -----------------------------------------------------------------------------

// Index of the first query answered "above" (queries.size() if none).
VectorMechanism above_threshold_run(std::vector<double> queries, double eps, bool monotone) {
  return [queries, eps, monotone](Rng& g) {
    AboveThreshold at(0.0, 1.0, eps, g, monotone);
    for (std::size_t i = 0; i < queries.size(); ++i) {
      if (at.query(queries[i])) return std::vector<double>{static_cast<double>(i)};
    }
    return std::vector<double>{static_cast<double>(queries.size())};
  };
}

TEST(AuditMechanisms, AboveThreshold) {
  const double eps = 1;
  // The pair of the proof's worst case: on D' every query before the halting one is higher by the
  // sensitivity (threshold noise pays ε/2) and the halting query lower (query noise pays ε/2).
  std::vector<double> d(6, -1.0), dp(6, 0.0);
  d.push_back(0);
  dp.push_back(-1);
  const auto r = audit(above_threshold_run(d, eps, false), above_threshold_run(dp, eps, false), eps,
                       0, options());
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GT(r.epsilon_lower_bound, 0.5) << r.summary();
  // Mis-use: the monotone calibration (half the query noise) on queries that move in opposite
  // directions.
  const auto b = audit(above_threshold_run(d, eps, true), above_threshold_run(dp, eps, true), eps,
                       0, options());
  report(b);
  EXPECT_TRUE(b.violation) << b.summary();
}

// ---- permute-and-flip ---------------------------------------------------------------------------

VectorMechanism permute_and_flip_run(std::vector<double> quality, bool monotone) {
  return [quality, monotone](Rng& g) {
    ExponentialMechanismOptions o;
    o.epsilon = 1;
    o.sensitivity = 1;
    o.monotone = monotone;
    return std::vector<double>{static_cast<double>(permute_and_flip(quality, o, g))};
  };
}

TEST(AuditMechanisms, PermuteAndFlip) {
  // Scores that move in opposite directions: the general (non-monotone) calibration.
  const auto r = audit(permute_and_flip_run({1, 0}, false), permute_and_flip_run({0, 1}, false), 1,
                       0, options());
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GT(r.epsilon_lower_bound, 0.6) << r.summary();
  // Mis-use: declaring those scores monotone (half the exponent's denominator).
  const auto b = audit(permute_and_flip_run({1, 0}, true), permute_and_flip_run({0, 1}, true), 1, 0,
                       options());
  report(b);
  EXPECT_TRUE(b.violation) << b.summary();
}

TEST(AuditMechanisms, PermuteAndFlipMonotone) {
  // Monotone scores (all move up on D'): the bound is nearly tight.
  const auto r = audit(permute_and_flip_run({0, 0, 0, 0}, true),
                       permute_and_flip_run({1, 1, 1, 0}, true), 1, 0, options());
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GT(r.epsilon_lower_bound, 0.85) << r.summary();
  // Mis-use: the same mechanism claimed at half its ε.
  EXPECT_GT(r.epsilon_lower_bound, 0.5) << r.summary();
}

// ---- stability histogram ------------------------------------------------------------------------

// Output: [noisy count of bin 0, noisy count of bin 7, number of released bins], -1 for a bin that
// was not released.
VectorMechanism histogram_run(std::vector<std::int64_t> bins, double eps, double delta,
                              Neighbouring nb) {
  return [bins, eps, delta, nb](Rng& g) {
    const StabilityHistogram h = stability_histogram(bins, eps, delta, nb, g);
    auto count = [&h](std::int64_t b) {
      auto it = h.noisy_counts.find(b);
      return it == h.noisy_counts.end() ? -1.0 : it->second;
    };
    return std::vector<double>{count(0), count(7), static_cast<double>(h.noisy_counts.size())};
  };
}

TEST(AuditMechanisms, StabilityHistogramLoneBin) {
  // Replace-one: D has a lone record in bin 7, D' moves it to bin 0. The lone bin may be released
  // only with probability <= δ/2.
  const double eps = 1, delta = 1e-5;
  std::vector<std::int64_t> d(30, 0), dp(30, 0);
  d.back() = 7;
  const auto r =
      audit(histogram_run(d, eps, delta, Neighbouring::replace_one),
            histogram_run(dp, eps, delta, Neighbouring::replace_one), eps, delta, options());
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  // Mis-use: a histogram built for δ = 0.05 claimed at δ = 1e-5: the lone bin shows.
  const auto b =
      audit(histogram_run(d, eps, 0.05, Neighbouring::replace_one),
            histogram_run(dp, eps, 0.05, Neighbouring::replace_one), eps, delta, options());
  report(b);
  EXPECT_TRUE(b.violation) << b.summary();
}

TEST(AuditMechanisms, StabilityHistogramTwoPopulatedBins) {
  // Replace-one between two well-populated bins moves two counts by 1 each.
  const double eps = 1, delta = 1e-5;
  std::vector<std::int64_t> d(60, 0), dp(60, 0);
  for (std::size_t i = 0; i < 30; ++i) d[i] = dp[i] = 7;
  dp[0] = 0;  // D' = 31 in bin 0, 29 in bin 7
  AuditOptions o = options();
  o.custom_events.push_back({"bin 0 up and bin 7 down", [](std::span<const double> x) {
                               return x[0] >= 31 && x[1] >= 0 && x[1] <= 29;
                             }});
  const auto r = audit(histogram_run(d, eps, delta, Neighbouring::replace_one),
                       histogram_run(dp, eps, delta, Neighbouring::replace_one), eps, delta, o);
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  // Mis-use: the add/remove calibration applied to a replace-one pair.
  const auto b = audit(histogram_run(d, eps, delta, Neighbouring::add_remove),
                       histogram_run(dp, eps, delta, Neighbouring::add_remove), eps, delta, o);
  report(b);
  EXPECT_TRUE(b.violation) << b.summary();
}

// ---- private quantile ---------------------------------------------------------------------------

TEST(AuditMechanisms, PrivateQuantile) {
  QuantileOptions q;
  q.q = 0.5;
  q.lower = 0;
  q.upper = 1;
  q.candidates = 8;
  q.epsilon = 1;
  auto on = [q](std::vector<double> values) {
    return [q, values](Rng& g) { return private_quantile(values, q, g); };
  };
  // Replace-one: the smallest value jumps to the top of the range.
  std::vector<double> d{0.05, 0.2, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8, 0.9};
  std::vector<double> dp = d;
  dp[0] = 1.0;
  const auto r = audit_scalar(on(d), on(dp), q.epsilon, 0, options(50000));
  report(r);
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GT(r.epsilon_lower_bound, 0.6) << r.summary();
  // Mis-use: the same mechanism claimed at half its ε.
  EXPECT_GT(r.epsilon_lower_bound, 0.5) << r.summary();
}

// ---- the first estimator (the docs/auditing.md example) -----------------------------------------

TEST(AuditMechanisms, BoundedMean) {
  RowMatrix X = RowMatrix::Zero(50, 2), Xp = X;
  Xp.row(0).setConstant(1.0);  // replace one record by the far corner: neighbours
  const BoundedMeanOptions o{
      .privacy = {1, 0}, .bounds = std::vector<double>{0, 1}, .clip_check_share = 0};
  auto on = [&o](const RowMatrix& data) {
    return [&o, &data](Rng& rng) {
      const auto r = bounded_mean(data, o, rng);
      return std::vector<double>(r.estimate.begin(), r.estimate.end());
    };
  };
  const auto res = audit(on(X), on(Xp), o.privacy.epsilon, o.privacy.delta, {.samples = 50000});
  report(res);
  EXPECT_FALSE(res.violation) << res.summary();
}

}  // namespace
}  // namespace dpstats::audit
