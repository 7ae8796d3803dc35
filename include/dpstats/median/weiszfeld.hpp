// Non-private geometric median (docs/proofs/median.md §7): the objective
// f(x) = (1/n) Σ ||x − x_i||, Weiszfeld's iteration with the Vardi–Zhang step at data points, and
// the quantile radius r^(τ)(D; c). Used for metrics, tests and as the speed baseline; never part
// of a private release.
#pragma once
#include <optional>

#include "dpstats/data/matrix.hpp"

namespace dpstats {

// f_D(x) = (1/n) Σ_i ||x − x_i||.
double objective(const ConstMatrixRef& X, const Vector& x);

// The ⌈τn⌉-th smallest ||x_i − c|| (τ in (0, 1]): the smallest r with #{i : ||x_i − c|| ≤ r} ≥ τn.
double quantile_radius(const ConstMatrixRef& X, const Vector& centre, double tau);

struct WeiszfeldOptions {
  int max_iterations = 10000;
  // Stop once the certified relative gap (f(x) − f*)/f* is at most rel_tol. The certificate:
  // for a subgradient s at x, f* ≥ f(x) − ||s||·||x − x*|| and ||x − x*|| ≤ f(x) + f* (triangle
  // inequality through each x_i, averaged), so (f − f*)/f* ≤ 2g/(1 − 2g) with g = ||s||.
  double rel_tol = 1e-10;
  // Benchmarks only: also stop once f(x) ≤ target (e.g. (1 + 1e-6)·f* with f* known).
  std::optional<double> target_objective;
  // Start point; the coordinate-wise mean when absent.
  std::optional<Vector> start;
};

struct WeiszfeldResult {
  Vector x;
  double f = 0;             // objective at x
  double grad_norm = 0;     // norm of the minimum-norm subgradient at x
  double rel_gap_bound = 0; // certified bound on (f − f*)/f* (0 when optimality is certified)
  int iterations = 0;       // updates made
  int reads = 0;            // passes over the data (one per evaluated point, plus one for the mean)
  bool converged = false;   // rel_tol, target, exact optimality, or the iterate stopped moving
};

WeiszfeldResult weiszfeld(const ConstMatrixRef& X, const WeiszfeldOptions& options = {});

}  // namespace dpstats
