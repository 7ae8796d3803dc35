// Composition: basic and advanced against their formulas, the optimal (KOV15) composition
// against a brute-force enumeration of k-fold randomized response, and per-step epsilon search.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/privacy/composition.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats {
namespace {

template <class F>
void expect_invalid(F f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected an InvalidArgument naming '" << needle << "'";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// delta(eps) of k-fold randomized response RR(eps0) by enumerating all 2^k answer sequences
// (no binomial grouping): sum over outcomes of [P(o) - e^eps Q(o)]_+.
long double brute_force_rr_delta(double eps0, int k, double eps) {
  const long double p = std::exp(static_cast<long double>(eps0)) / (1 + std::exp((long double)eps0));
  const long double q = 1 - p;
  long double delta = 0;
  for (unsigned mask = 0; mask < (1u << k); ++mask) {
    long double P = 1, Q = 1;
    for (int i = 0; i < k; ++i) {
      const bool flipped = (mask >> i) & 1u;
      P *= flipped ? q : p;
      Q *= flipped ? p : q;
    }
    const long double term = P - std::exp(static_cast<long double>(eps)) * Q;
    if (term > 0) delta += term;
  }
  return delta;
}

// The smallest epsilon with brute-force delta <= target (bisection to 1e-14).
double brute_force_optimal_epsilon(double eps0, int k, double target) {
  double lo = 0, hi = k * eps0;
  while (hi - lo > 1e-14) {
    const double mid = (lo + hi) / 2;
    (brute_force_rr_delta(eps0, k, mid) > target ? lo : hi) = mid;
  }
  return hi;
}

TEST(Composition, BasicAdds) {
  const std::vector<EpsilonDelta> losses = {{0.5, 1e-6}, {0.25, 0}, {1.0, 2e-6}};
  const EpsilonDelta total = basic_composition(losses);
  EXPECT_EQ(total.epsilon, 1.75);  // exact sum, exactly representable
  EXPECT_GE(total.delta, 3e-6);
  EXPECT_NEAR(total.delta, 3e-6, 1e-20);
  // Ten copies of fl(0.1) sum to more than 1 exactly; the reported sum is never below it.
  const std::vector<EpsilonDelta> tenths(10, {0.1, 0});
  EXPECT_GE(static_cast<long double>(basic_composition(tenths).epsilon), 10 * 0.1L);
  EXPECT_EQ(basic_composition({}).epsilon, 0);
  const std::vector<EpsilonDelta> bad = {{0.5, 0}, {-1, 0}};
  expect_invalid([&] { basic_composition(bad); }, "losses[1].epsilon");
  const std::vector<EpsilonDelta> bad_delta = {{0.5, 2}};
  expect_invalid([&] { basic_composition(bad_delta); }, "losses[0].delta");
}

TEST(Composition, ExactSumIsExactAndRoundsUp) {
  ExactSum a;
  a.add(1e16);
  a.add(1);
  a.add(-1e16);
  EXPECT_EQ(a.rounded_up(), 1);  // naive double summation gives 0
  ExactSum b;
  b.add(1);
  b.add(1e-30);
  EXPECT_EQ(b.rounded_up(), std::nextafter(1.0, 2.0));  // naive gives 1, below the exact sum
  ExactSum c;
  for (int i = 0; i < 10; ++i) c.add(0.1);
  EXPECT_GT(c.rounded_up(), 1.0);  // 10 fl(0.1) = 1 + 5.55e-17 exactly
  EXPECT_EQ(c.rounded_up(), std::nextafter(1.0, 2.0));
  ExactSum d;
  d.add_product(3, 0.1);  // 3 fl(0.1) = 0.3000000000000000166..., between two doubles
  EXPECT_EQ(d.rounded_up(), 0.30000000000000004);
  ExactSum e;
  EXPECT_TRUE(e.is_zero());
  EXPECT_EQ(e.rounded_up(), 0);
  expect_invalid([&] { e.add(NAN); }, "finite");
}

TEST(Composition, AdvancedEqualsFormula) {
  for (double eps0 : {0.01, 0.1, 1.0}) {
    for (long k : {1L, 10L, 1000L}) {
      const double slack = 1e-6;
      const double formula = std::sqrt(2 * k * std::log(1 / slack)) * eps0 + k * eps0 * std::expm1(eps0);
      const EpsilonDelta adv = advanced_composition(eps0, 1e-8, k, slack);
      EXPECT_GE(adv.epsilon, formula);
      EXPECT_NEAR(adv.epsilon, formula, 1e-14 * formula);
      EXPECT_NEAR(adv.delta, k * 1e-8 + slack, 1e-14 * (k * 1e-8 + slack));
      EXPECT_GE(adv.delta, k * 1e-8 + slack);
    }
  }
}

TEST(Composition, OptimalMatchesBruteForce) {
  // k = 10, eps0 = 0.1, delta' = 1e-5: the answer lies between the grid points 0.8 and 1.0, where
  // delta(eps) = (e^1 - e^eps) / (1 + e^0.1)^10, so eps = log(e - 1e-5 (1 + e^0.1)^10)
  // = 0.99369117675933586 (mpmath).
  const EpsilonDelta opt = optimal_composition(0.1, 0, 10, 1e-5);
  const double brute = brute_force_optimal_epsilon(0.1, 10, 1e-5);
  std::printf("optimal_composition(0.1, 0, 10, 1e-5) = %.12f (brute force %.12f, basic 1, "
              "advanced %.6f)\n",
              opt.epsilon, brute, advanced_composition(0.1, 0, 10, 1e-5).epsilon);
  EXPECT_GE(opt.epsilon, 0.99369117675933586);
  EXPECT_LE(opt.epsilon, 0.99369117675933586 + 1e-11);
  EXPECT_NEAR(opt.epsilon, brute, 1e-11);
  EXPECT_NEAR(opt.delta, 1e-5, 1e-18);
  // More settings, including ones where the answer is far below k eps0.
  struct Case {
    double eps0;
    int k;
    double slack;
  };
  for (const Case c : {Case{0.5, 12, 1e-3}, Case{1.0, 8, 1e-2}, Case{0.05, 14, 1e-6},
                       Case{2.0, 5, 1e-4}, Case{0.3, 1, 0.1}}) {
    const double e = optimal_composition(c.eps0, 0, c.k, c.slack).epsilon;
    const double b = brute_force_optimal_epsilon(c.eps0, c.k, c.slack);
    EXPECT_GE(e, b - 1e-13) << c.eps0 << " " << c.k;
    EXPECT_LE(e, b + 1e-10 * (1 + b)) << c.eps0 << " " << c.k;
    EXPECT_LE(static_cast<double>(brute_force_rr_delta(c.eps0, c.k, e)), c.slack);
  }
}

TEST(Composition, OptimalMatchesKovTheorem33AtGridPoints) {
  // KOV15 Thm 3.3: ((k - 2l) eps0, delta_l) with
  // delta_l = sum_{i<l} C(k,i) (e^{(k-i) eps0} - e^{(k-2l+i) eps0}) / (1 + e^eps0)^k.
  const int k = 20;
  const double eps0 = 0.5;
  for (int l = 1; l <= 6; ++l) {
    long double delta_l = 0, binom = 1;
    for (int i = 0; i < l; ++i) {
      if (i > 0) binom = binom * (k - i + 1) / i;
      delta_l += binom * (std::exp((long double)(k - i) * eps0) - std::exp((long double)(k - 2 * l + i) * eps0));
    }
    delta_l /= std::pow(1 + std::exp((long double)eps0), k);
    const double e = optimal_composition(eps0, 0, k, static_cast<double>(delta_l)).epsilon;
    EXPECT_NEAR(e, (k - 2 * l) * eps0, 1e-9) << l;
  }
}

TEST(Composition, OptimalDeltaAndOrdering) {
  // 1 - (1 - 1e-7)^50 (1 - 1e-6) = 5.99998275003185... (mpmath); the naive double expression
  // 1 - pow(1 - 1e-7, 50) * (1 - 1e-6) is off in the 10th digit.
  const EpsilonDelta opt = optimal_composition(0.2, 1e-7, 50, 1e-6);
  EXPECT_GE(opt.delta, 5.99998275003185e-6 * (1 - 1e-14));
  EXPECT_NEAR(opt.delta, 5.99998275003185e-6, 1e-13 * 6e-6);
  for (double eps0 : {0.001, 0.01, 0.1, 0.5, 1.0, 3.0}) {
    for (long k : {1L, 2L, 10L, 100L, 1000L, 5000L}) {
      const double slack = 1e-6;
      const double opt_eps = optimal_composition(eps0, 0, k, slack).epsilon;
      const double basic = k * eps0;
      const double adv = advanced_composition(eps0, 0, k, slack).epsilon;
      EXPECT_LE(opt_eps, basic * (1 + 1e-15)) << eps0 << " " << k;
      EXPECT_LE(opt_eps, adv) << eps0 << " " << k;
      EXPECT_GT(opt_eps, 0) << eps0 << " " << k;
    }
  }
  // Many small steps: strictly better than both other rules.
  const double many = optimal_composition(0.01, 0, 1000, 1e-6).epsilon;
  EXPECT_LT(many, 0.9 * advanced_composition(0.01, 0, 1000, 1e-6).epsilon);
  // No slack: nothing better than k eps0 is possible.
  const double no_slack = optimal_composition(0.1, 0, 10, 0).epsilon;
  EXPECT_GE(no_slack, 1.0);
  EXPECT_NEAR(no_slack, 1.0, 1e-14);
}

TEST(Composition, OptimalLargeKApproachesGaussian) {
  // For k -> inf with eps0 sqrt(k) = mu fixed, k-fold RR(eps0) tends to mu-GDP (Dong, Roth & Su).
  const double eps = optimal_composition(0.001, 0, 1'000'000, 1e-6).epsilon;
  const double gdp = gdp_to_epsilon(1.0, 1e-6);
  std::printf("optimal_composition(0.001, 0, 1e6, 1e-6) = %.6f, mu=1 GDP limit %.6f\n", eps, gdp);
  EXPECT_NEAR(eps / gdp, 1, 0.02);
  // Above 10^7 steps: the better of basic and advanced.
  const EpsilonDelta huge = optimal_composition(1e-5, 0, 20'000'000, 1e-6);
  EXPECT_NEAR(huge.epsilon, advanced_composition(1e-5, 0, 20'000'000, 1e-6).epsilon, 1e-15);
}

TEST(Composition, BestPicksTheSmallestEpsilon) {
  const EpsilonDelta best = best_composition(0.1, 0, 10, 1e-5);
  EXPECT_EQ(best.epsilon, optimal_composition(0.1, 0, 10, 1e-5).epsilon);
  // One step with a tiny slack: basic (eps0, delta0) wins, with its own delta.
  // One step: basic (1, 1e-7) or the optimal rule, which trades the slack 1e-12 for
  // epsilon = 1 - 1e-12 (1 + e)/e; either way epsilon <= 1 and very close to it.
  const EpsilonDelta one = best_composition(1.0, 1e-7, 1, 1e-12);
  EXPECT_LE(one.epsilon, 1.0);
  EXPECT_GE(one.epsilon, 1.0 - 1.4e-12);
  for (double eps0 : {0.01, 0.3, 2.0}) {
    for (long k : {1L, 7L, 300L}) {
      const EpsilonDelta b = best_composition(eps0, 1e-9, k, 1e-6);
      EXPECT_LE(b.epsilon, k * eps0 * (1 + 1e-15));
      EXPECT_LE(b.epsilon, advanced_composition(eps0, 1e-9, k, 1e-6).epsilon);
      EXPECT_LE(b.delta, k * 1e-9 + 1e-6 + 1e-20);
    }
  }
}

TEST(Composition, PerStepEpsilonIsTheLargestValid) {
  struct Case {
    double epsilon, delta;
    long k;
  };
  for (const Case c : {Case{1, 1e-6, 10}, Case{20, 0.01, 50}, Case{100, 0.01, 200},
                       Case{0.5, 1e-8, 1000}, Case{1, 0, 10}}) {
    const double eps0 = per_step_epsilon(c.epsilon, c.delta, c.k);
    const double d0 = c.delta / (2.0 * c.k), slack = c.delta / 2;
    const EpsilonDelta used = best_composition(eps0, d0, c.k, slack);
    EXPECT_LE(used.epsilon, c.epsilon) << c.epsilon << " " << c.k;
    EXPECT_LE(used.delta, c.delta * (1 + 1e-12)) << c.epsilon << " " << c.k;
    EXPECT_GT(best_composition(eps0 * (1 + 1e-9), d0, c.k, slack).epsilon, c.epsilon);
    EXPECT_GE(eps0, c.epsilon / c.k * (1 - 1e-13));  // never worse than basic composition
  }
  // Pitfall 4.3: at epsilon = 20 the 0.9 cap of Lemma G.13 wastes most of the budget.
  const double k = 50, delta = 0.01;
  const double capped = 0.9 / (2 * std::sqrt(2 * k * std::log(2 / delta)));
  const double ours = per_step_epsilon(20, delta, 50);
  std::printf("per_step_epsilon(20, 0.01, 50) = %.6f (Lemma G.13 with the 0.9 cap: %.6f)\n", ours,
              capped);
  EXPECT_GT(ours, 10 * capped);
  EXPECT_NEAR(per_step_epsilon(1, 0, 10), 0.1, 1e-13);
}

TEST(Composition, InvalidArgumentsNameTheParameter) {
  expect_invalid([] { advanced_composition(0, 0, 10, 1e-5); }, "eps0");
  expect_invalid([] { advanced_composition(0.1, -1, 10, 1e-5); }, "delta0");
  expect_invalid([] { advanced_composition(0.1, 0, 0, 1e-5); }, "k");
  expect_invalid([] { advanced_composition(0.1, 0, 10, 0); }, "delta_slack");
  expect_invalid([] { optimal_composition(NAN, 0, 10, 1e-5); }, "eps0");
  expect_invalid([] { optimal_composition(0.1, 0, -3, 1e-5); }, "k");
  expect_invalid([] { optimal_composition(0.1, 0, 3, 1); }, "delta_slack");
  expect_invalid([] { best_composition(0.1, 1, 3, 1e-5); }, "delta0");
  expect_invalid([] { per_step_epsilon(-1, 1e-5, 3); }, "epsilon");
  expect_invalid([] { per_step_epsilon(1, 1e-5, 0); }, "k");
  expect_invalid([] { per_step_epsilon(1, 1.5, 3); }, "delta");
}

}  // namespace
}  // namespace dpstats
