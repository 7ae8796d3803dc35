// Alg 3 — Adaptive-Inexact-ProjSubgrad (docs/proofs/user-level.md) and the
// ξ-inexact projection onto W_0 = W ∩ B(c, r) (§2.5, Lemma 2.8/C.6).
//
// Alg 3 needs no Lipschitz constant: with S = Σ‖g_s‖², η_t = D_K/√S, ξ_t = min{D_K, α·η_t/(6D_K)},
// it stops at the first t with 3·D_K·√S <= α·t and returns the average of x_1..x_t, which is then
// α-optimal (Prop 2.9/C.5). An iteration budget (public) turns a run that has not stopped into an
// abort (certified = false; never release it).
#pragma once
#include <cstdint>
#include <functional>

#include "dpstats/data/matrix.hpp"

namespace dpstats::optimize {

struct Alg3Result {
  Vector x;                 // the average x̄_t (or the last average when not certified)
  std::int64_t iterations = 0;
  bool certified = false;   // the stopping rule 3·D_K·√S <= α·t held (or g_t = 0)
};

// subgradient(x, g): writes a subgradient of Φ at x. project(y, ξ, out): a point of K within ξ of
// Π_K(y) (ξ = 0: exact).
Alg3Result adaptive_inexact_subgradient(
    const std::function<void(const Vector&, Vector&)>& subgradient,
    const std::function<void(const Vector&, double, Vector&)>& project, const Vector& x1,
    double diameter, double alpha, std::int64_t max_iterations);

// §2.5: a point of W ∩ B(c, r), within ξ of Π_{W∩B(c,r)}(y), from an exact Π_W (c ∈ W). Uses at
// most N + 2 calls of Π_W, N = ⌈log2(1 + R²/(rξ))⌉, R = ‖y − c‖; `calls` (optional) counts them.
Vector inexact_ball_cap_projection(const std::function<void(Vector&)>& project_W, const Vector& c,
                                   double r, const Vector& y, double xi, int* calls = nullptr);

}  // namespace dpstats::optimize
