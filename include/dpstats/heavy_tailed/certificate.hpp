// Certified regularised ERM for the GLM one-stage path (docs/proofs/heavy-tailed.md §2.12,
// §2.13; docs/results/heavy-tailed.md "Problems in the card" 4).
//
// Problem: P(w) = (1/m) Σ_i ψ_i(⟨a_i, w⟩) + (λ/2)‖w − w0‖² over W = Ball(c, R), where ψ_i is the
// C/‖a_i‖-Lipschitz envelope of the GLM loss (lipschitz_extension.hpp), so every term is convex and
// C-Lipschitz in w.
// Certificate (weak duality, any θ_i in ψ_i's dual domain): with S = (1/m) Σ θ_i a_i and
// v* = Π_W(w0 − S/λ),
//   gap(w, θ) = (1/m) Σ_i [ψ_i(u_i) + ψ_i*(θ_i) − θ_i u_i]            (Fenchel–Young, >= 0)
//             + ⟨S + λ(v* − w0), w − v*⟩ + (λ/2)‖w − v*‖²               (>= 0: v* is optimal on W)
//   >= P(w) − min_W P.
// Every bracket is computed without cancellation, in long double. `certified` holds iff
// gap <= α·(1 − 2^-20) − margin, margin = 4(d + 4)·2^-52·((1/m)Σ|θ_i|‖a_i‖(‖w‖ + 1) + λ·(‖w‖ +
// ‖w0‖ + ‖c‖ + R)²): an allowance for the rounding of the dot products u_i and of the quadratic
// term (the brackets themselves are cancellation-free). This is a standard error estimate, not a
// machine-checked floating-point proof (docs/threat-model.md).
//
// Solver: damped Newton (a multiplier search when the ball binds) for smooth envelopes; for the
// piecewise-linear abs/hinge envelopes, Newton on Huber-smoothed surrogates with decreasing width
// μ, each level finished by the exact active-set step: the points with residual at the kink get
// the duals θ_A solving the KKT system (least squares on ≤ d rows), the others θ = their slope —
// the exact dual at the optimum, so the gap falls to rounding (the Huber duals alone leave a gap
// of order (dC/m)²/λ). Iteration counts are capped by public constants; a run that cannot
// certify returns certified = false and the caller aborts without releasing.
#pragma once
#include <cstdint>

#include "dpstats/data/matrix.hpp"
#include "dpstats/heavy_tailed/lipschitz_extension.hpp"

namespace dpstats::optimize {

struct GlmErmProblem {
  const RowMatrix* A = nullptr;  // m × d features (rows a_i)
  const Vector* y = nullptr;     // labels
  std::int64_t begin = 0, end = 0;  // the block [begin, end) of rows
  GlmEnvelope env;
  double C = 1;                  // Lipschitz bound of every term (envelope L_i = C/‖a_i‖)
  double lambda = 1;
  Vector w0;
  Vector center;                 // W = Ball(center, radius)
  double radius = 1;
  // Threads of the row passes (gradient and Hessian, objective, duals, gap). The rows are cut into
  // fixed chunks whatever the count and the chunks' sums are added in chunk order, so the
  // solution does not depend on `threads`.
  int threads = 1;
};

struct CertifiedSolution {
  Vector w;
  double gap = 0;         // certified upper bound on P(w) − min P (not private: never released)
  bool certified = false;
  int newton_steps = 0;
};

// P(w) (evaluation; long double sums).
double glm_erm_objective(const GlmErmProblem& p, const Vector& w);
// gap(w, θ) of the header; θ has one entry per row of the block.
double glm_duality_gap(const GlmErmProblem& p, const Vector& w, const Vector& theta);
// Non-private reference solve (no certificate): Huber-smoothed continuation 10, 1, 0.1, ..., mu.
Vector solve_glm_erm_reference(const GlmErmProblem& p, double mu = 1e-6);
// Solves to a certified gap <= alpha (see the header).
CertifiedSolution solve_certified_glm_erm(const GlmErmProblem& p, double alpha);

}  // namespace dpstats::optimize
