// Certified regularised GLM ERM over a lens W_0 = W ∩ Ball(c, r) (docs/proofs/heavy-tailed.md
// §2.7 line 3 and §2.12; issue 8 gap 2): the stage-2 solve of Alg 4 when localisation is active.
//
// h(v) = (1/m) Σ ψ_i(⟨a_i, v⟩) + (λ/2)‖v − w0‖², P* = min over the lens. For μ >= 0 the Lagrangian
// of the ball constraint, h_μ(v) = h(v) + (μ/2)(‖v − c‖² − r²), is again a GLM ERM over W (same
// envelope, regulariser λ + μ centred at (λw0 + μc)/(λ + μ), up to a constant), and weak duality
// gives min_W h_μ <= P*. So for any v in the lens with a certified gap g_μ of the penalised
// problem over W (certificate.hpp),
//     h(v) − P* <= g_μ + (μ/2)(r² − ‖v − c‖²)          (both terms >= 0),
// a certificate for the lens. The multiplier is found by safeguarded regula falsi (Illinois) on
// ‖w(μ) − c‖ = r over [0, μ_max],
// μ_max = 2(C + λ‖w0 − c‖)/r (there the penalised minimiser lies within r/2 of c, since every
// term is C-Lipschitz and c ∈ W); each probe is a certified solve to α/2 and the search stops when
// the complementary-slackness term is at most α/2 − a rounding margin. The probe count is capped by
// a public constant; a run that cannot certify returns certified = false (the caller aborts).
#pragma once
#include "dpstats/heavy_tailed/certificate.hpp"

namespace dpstats::optimize {

struct LensSolution {
  CertifiedSolution solution;  // w in the lens; gap = the lens certificate above
  double multiplier = 0;       // μ of the accepted probe
  int probes = 0;              // certified solves used
};

// p.center / p.radius describe W (c must lie in W); (lens_center, lens_radius) the second ball.
LensSolution solve_certified_lens_glm_erm(const GlmErmProblem& p, const Vector& lens_center,
                                          double lens_radius, double alpha);

}  // namespace dpstats::optimize
