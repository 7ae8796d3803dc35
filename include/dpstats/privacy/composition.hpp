// Composition of (epsilon, delta) guarantees. zCDP rho and GDP mu^2 compose additively; that
// happens in Budget. Every function validates its arguments.
#pragma once
#include <span>
#include <vector>

#include "dpstats/privacy/privacy_loss.hpp"

namespace dpstats {

struct EpsilonDelta {
  double epsilon = 0;
  double delta = 0;
};

// An exact running sum of doubles (Shewchuk's non-overlapping partials, as Python's math.fsum):
// budgets and compositions carry no accumulated rounding error, and the reported total is the
// exact sum rounded up to a double.
class ExactSum {
 public:
  void add(double x);
  // Adds a * b exactly (the product is split into two doubles with an fma).
  void add_product(double a, double b);
  // The exact sum, rounded up to the next double (never below the exact value).
  double rounded_up() const;
  bool is_zero() const { return partials_.empty(); }

 private:
  std::vector<double> partials_;  // non-overlapping, increasing magnitude
};

// Basic composition: epsilons and deltas add (exactly; the sums are rounded up).
EpsilonDelta basic_composition(std::span<const EpsilonDelta> losses);

// Advanced composition (Dwork, Rothblum & Vadhan 2010; Kairouz et al. form): k mechanisms,
// each (eps0, delta0)-DP, are (sqrt(2k ln(1/delta_slack)) eps0 + k eps0 (e^eps0 - 1),
// k delta0 + delta_slack)-DP.
EpsilonDelta advanced_composition(double eps0, double delta0, long k, double delta_slack);

// Optimal homogeneous composition (Kairouz, Oh & Viswanath 2015, Thm 3.3): the smallest epsilon
// such that k-fold (eps0, delta0) composes to (epsilon, 1 - (1-delta0)^k (1 - delta_slack)).
// Computed exactly (the hockey-stick divergence of k-fold randomized response, a sum over the
// number of flips with log-binomial weights, bisection on epsilon, rounded up) for
// k <= 10^7; above that it returns the better of basic and advanced composition (valid, not
// optimal). delta_slack in [0, 1); delta_slack = 0 gives k eps0.
EpsilonDelta optimal_composition(double eps0, double delta0, long k, double delta_slack);

// The best of the valid rules (basic, advanced, optimal) for the same inputs: the smallest
// epsilon; its delta is the one the winning rule reports (basic: k delta0; advanced:
// k delta0 + delta_slack; optimal: 1 - (1-delta0)^k (1-delta_slack)). Advanced is skipped when
// delta_slack = 0.
EpsilonDelta best_composition(double eps0, double delta0, long k, double delta_slack);

// The largest per-step eps0 such that k-fold composition of (eps0, delta0) meets the target
// (epsilon, delta) under the best valid rule, with delta0 = delta / (2k) and delta_slack = delta/2
// (docs/errata.md: never cap eps0 at 0.9).
double per_step_epsilon(double epsilon, double delta, long k);

}  // namespace dpstats
