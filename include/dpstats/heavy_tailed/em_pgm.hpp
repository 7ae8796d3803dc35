// Alg 5 — EM-PGM (the paper's App. E; certified false, docs/threat-model.md): the exponential
// mechanism on a grid of
// W = Ball(0, R) (d <= 2 only: the grid is exponential in d) with the clipped projected-gradient-
// mapping score s_Z(w) = ‖(w − Π_W(w − γ(g_C(w) + λ(w − w0))))/γ‖, g_C = (1/n) Σ clip_C(∇f).
// Score sensitivity 2C/n (clipping; Π_W is non-expansive and the 1/γ cancels), so sampling
// P(w) ∝ exp(−ε s_Z(w)/(2·2C/n)) is ε-DP. γ must be data-independent ([erratum] §2.10: the paper's
// γ = 1/(λ + H_Z) uses the realised smoothness); here it is a public parameter.
// Sampling is the library's permute-and-flip; the score is computed in floating point, so the
// release is a reference, certified = false (docs/errata.md).
#pragma once
#include "dpstats/data/matrix.hpp"
#include "dpstats/heavy_tailed/lipschitz_extension.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats::optimize {

struct EmPgmOptions {
  GlmKind loss = GlmKind::absolute;
  PrivacyTarget privacy;  // pure: epsilon required, delta = 0
  double radius = 0;   // W = Ball(0, R), required
  double C = 1;        // clip
  double lambda = 0;   // regularisation towards w0
  double gamma = 1;    // public step of the gradient mapping
  double spacing = 0.05;  // grid spacing (≤ 2η/√d, the paper's App. E)
  Vector w0;           // default 0
};

Release<Vector> fit_em_pgm(const RowMatrix& X, const Vector& y, const EmPgmOptions& o, Rng& rng,
                           Budget* budget = nullptr);

}  // namespace dpstats::optimize
