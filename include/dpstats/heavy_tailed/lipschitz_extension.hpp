// Lipschitz extensions f_C(w, z) = min_{y∈W} f(y, z) + C‖w − y‖ of generalised linear losses
// f(w; a, y) = φ(⟨a, w⟩, y) (docs/proofs/heavy-tailed.md §2.2, §2.13).
//
//  * GlmEnvelope: the R^d extension (E3, §2.13): φ_L(·, y), the 1-D L-Lipschitz envelope of φ in
//    u = ⟨a, w⟩ with L = C/‖a‖. Closed forms: absolute → min(1,L)|u − y|, hinge → min(1,L)·hinge,
//    squared → Huber with threshold L, huber(κ) → huber(min(κ, L)), logistic → linear below
//    u0 = ln((1 − L)/L) (in v = y·u). Its conjugate φ_L* (the dual side of the certificate, §2.12)
//    and derivative clamp(φ', −L, L) (so ∇f_C = clip_C(∇f)).
//  * extension_on_ball (E2): the exact W-relative f_C on a Euclidean ball by the 1-D reduction over
//    s = ⟨a, y⟩ (golden-section search on a convex function), with its minimiser y* and a
//    subgradient s (§2.2 item 5).
//  * structured_extension (§2.9, dependency-free dual oracle): for two-slope piecewise-linear
//    losses (absolute, hinge/ReLU) on a domain given by its support function (ball, box,
//    ellipsoid, polytope in vertex form), an upper bound f(y) + C‖w − y‖ and a weak-duality lower
//    bound ⟨s, w⟩ − θκ − σ_W(s − θa) with ‖s‖ <= C: s is a certified B-approximate subgradient
//    with B = upper − lower.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/solvers/domain.hpp"
#include "dpstats/solvers/loss.hpp"

namespace dpstats::optimize {


// φ(u, y) and its L-Lipschitz envelope in u (L = +inf: φ itself).
struct GlmEnvelope {
  GlmKind kind = GlmKind::absolute;
  double huber_kappa = 1;  // huber only

  double phi(double u, double y) const;
  double value(double u, double y, double L) const;
  double derivative(double u, double y, double L) const;   // a subgradient at kinks
  double curvature(double u, double y, double L) const;    // ψ'' (0 at kinks of PL losses)
  // Largest |θ| in the envelope's dual domain: min(1, L) (abs, hinge, logistic), L, min(κ, L).
  double dual_bound(double L) const;
  // φ_L*(θ) for θ in the dual domain (+inf outside).
  double conjugate(double theta, double y, double L) const;
  // ψ(u) + ψ*(θ) − θu >= 0, computed without cancellation where possible.
  double fenchel_young(double u, double theta, double y, double L) const;
  bool piecewise_linear() const { return kind == GlmKind::absolute || kind == GlmKind::hinge; }
  // Two-slope form of abs/hinge: ψ(u) = max(l(u − κ), r(u − κ)), dual interval [l, r].
  void two_slope(double y, double L, double* kink, double* l, double* r) const;
};

struct ExtEval {
  double upper = 0, lower = 0;  // f_C(w) ∈ [lower, upper]
  Vector y;                     // a point of W attaining `upper`
  Vector s;                     // a (B-approximate) subgradient of f_C at w, ‖s‖ <= C
};

// (E2) exact f_C on W = Ball(c, R) for f(w) = φ(⟨a, w⟩, y); tol: absolute tolerance of the 1-D
// search (lower = upper − the search's certified bracket bound is not computed; lower = upper).
ExtEval extension_on_ball(const GlmEnvelope& env, const Ball& W, const Vector& w, const Vector& a,
                          double y, double C, double tol = 1e-12);

// Support-function view of a domain for the dual oracle (§2.9).
struct SupportDomain {
  std::function<double(const Vector&)> support;   // σ_W(v)
  std::function<Vector(const Vector&)> argmax;    // a maximiser of ⟨v, ·⟩ over W
  std::function<void(Vector&)> project;           // optional exact projection (empty: none)
};
SupportDomain support_of_ball(const Vector& center, double radius);
SupportDomain support_of_box(const Vector& lower, const Vector& upper);
// {c + Q u : ‖u‖ <= 1} with Q square invertible: σ(v) = ⟨v, c⟩ + ‖Qᵀv‖ (no projection).
SupportDomain support_of_ellipsoid(const Vector& center, const Eigen::MatrixXd& Q);
// conv{vertices} (polytope in vertex form): σ(v) = max_j ⟨v, p_j⟩ (no projection).
SupportDomain support_of_polytope(const std::vector<Vector>& vertices);

// §2.9 dual / weak-duality oracle for abs or hinge (two-slope) losses on any SupportDomain:
// iterates on (s, θ) to raise the lower bound and, when a projection exists, on y to lower the
// upper bound, until upper − lower <= B or `iterations` rounds.
ExtEval structured_extension(const GlmEnvelope& env, const SupportDomain& W, const Vector& w,
                             const Vector& a, double y, double C, double B, int iterations = 400);

}  // namespace dpstats::optimize
