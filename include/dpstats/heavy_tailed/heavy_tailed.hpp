// Pure ε-DP stochastic convex optimisation with heavy-tailed gradients (card
// pure-dp-heavy-tailed-sco.md; measured addendum heavy-tailed-practical.md), for GLM losses
// f(w; a, y) = φ(⟨a, w⟩, y) on W = Ball(0, R), replace-one neighbours, record level.
//
// Methods (one entry point, fit_heavy_tailed):
//  * lipschitz_extension (recommended): Pop-Localize (Alg 1, §2.8) whose inner solver is the GLM
//    one-stage output perturbation (§2.13): per phase t, the regularised ERM of the C_t-Lipschitz
//    R^d extension (lipschitz_extension.hpp) centred at the previous output, solved to a CERTIFIED
//    gap α_t = κ²C_t²/(2λ_t m_t²) (certificate.hpp), plus lattice l2-Laplace noise for the
//    sensitivity (2 + 2κ)C_t/(λ_t m_t) at the full ε, then Π_W. Disjoint blocks: ε-DP overall by
//    parallel composition. A phase that cannot certify aborts the run: status = abstained, no
//    estimate (the abort is a public bit: docs/threat-model.md).
//      profile paper: the card's §2.8 schedule (T rule, m_t = ⌊n/2^t⌋, λ_1 = rate(m_1)/D, ×32,
//        C_t = G_k(m_tε/d)^{1/k}) with the "matched" κ = 2.
//      profile practical: phase 1 (a quarter of n) is the GLM one-stage output perturbation
//        (localisation); the last phase runs noisy clipped GD on the remaining records, started at
//        phase 1's output (final_solver = "clipped-gd"), which uses the data's curvature where
//        output perturbation can only use λ; its clip is a private quantile of the gradient norms
//        at phase 1's output (heavy_tailed_clip.hpp). κ = 0.1; every multiplier was fixed by the public
//        tuning study (docs/results/heavy-tailed.md), never from the private data.
//        final_solver = "output-perturbation" gives the pure GLM Pop-Localize (T = 3, ×4).
//  * output_perturbation: one phase (T = 1) of the above: the pure-DP single output perturbation.
//  * clipped_gd: pure-DP noisy clipped full-batch GD: T steps at ε/T each, per-sample gradients
//    clipped to C, exact clipped sum (exact_sum.hpp), lattice l2-Laplace, projected, averaged.
//  * dp_sgd: the same with the secure Gaussian at ρ-zCDP, ρ from (ε, δ) (approximate DP; baseline).
//  * non_private: the unclipped ERM (λ = 1e-9·G/R); no privacy, for studies only.
// Every constant is a function of public values (n, d, ε, R, k, G_k, G_2) and the options.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/heavy_tailed/lipschitz_extension.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats::optimize {

enum class HeavyTailedMethod { lipschitz_extension, output_perturbation, clipped_gd, dp_sgd, non_private };
enum class HeavyTailedProfile { practical, paper };
const char* to_string(HeavyTailedMethod m);
HeavyTailedMethod parse_heavy_tailed_method(const std::string& s);

// Public moment bound (card §0): E[A(z)^k] <= G_k^k; G_2 defaults to G_k.
struct MomentBound {
  double k = 4;
  double G_k = 1;
  std::optional<double> G_2;
  double g2() const { return G_2.value_or(G_k); }
};

struct HeavyTailedOptions {
  HeavyTailedMethod method = HeavyTailedMethod::lipschitz_extension;
  HeavyTailedProfile profile = HeavyTailedProfile::practical;
  std::string loss = "absolute";
  double huber_kappa = 1;
  double epsilon = 1;
  double delta = 0;                  // dp_sgd only (required there)
  double domain_radius = 1;          // W = Ball(0, R)
  MomentBound moment;
  // lipschitz_extension / output_perturbation
  std::optional<int> phases;         // T (practical default 3; output_perturbation 1)
  std::optional<double> growth;      // λ growth per phase (practical 4, paper 32)
  std::optional<double> c_multiplier;       // C_t = c·G_k(m_tε/d)^{1/k}
  std::optional<double> lambda_multiplier;  // λ_1 = c_λ·rate(m_1)/D
  std::optional<double> kappa;       // accuracy knob (practical 0.1, paper 2)
  std::optional<double> clip;        // fixes C in every phase (overrides c_multiplier)
  std::optional<double> lambda;      // fixes λ_1 (overrides lambda_multiplier)
  // lipschitz_extension, practical: the last phase's solver. "clipped-gd" (default) runs localized
  // noisy clipped GD on the last block from the previous phase's output (pure ε-DP, its noise
  // damped by the data's curvature); "output-perturbation" keeps the GLM one-stage path.
  std::optional<std::string> final_solver;
  // Clip of the final clipped-GD phase (practical; ignored when `clip` is set):
  //  "private-quantile" (default): the (1 − p)-quantile of the per-record gradient norms at the
  //    phase-1 output, p = c_p·sqrt(d/(mε)), released by the exponential mechanism at
  //    clip_budget_share·ε of the final block's budget (heavy_tailed_clip.hpp); the GD steps get
  //    the rest (basic composition inside the block).
  //  "public": 0.375·G_k(mε/d)^{1/(2k)} from the moment bound only (the previous default).
  std::optional<std::string> final_clip_rule;
  std::optional<double> clip_tail_constant;  // c_p
  std::optional<double> clip_budget_share;   // in (0, 1)
  // practical: share of n in phase 1 (default 1/4 when the final solver is clipped-gd, else 1/2)
  std::optional<double> first_fraction;
  // Per-phase inner solver of lipschitz_extension: "glm-one-stage" (default; card §2.13) or
  // "double-output-perturbation" (Alg 4 with Alg 2, paper preset; W_0 = W ∩ B(w_loc, r_0) may be
  // a lens: certified through the Lagrangian of the ball constraint, heavy_tailed_lens.hpp).
  std::optional<std::string> inner;
  // clipped_gd / dp_sgd, and the final clipped-gd phase (steps, step_size, clip of that phase)
  std::optional<int> steps;
  std::optional<double> step_size;
  NoiseMode noise = NoiseMode::secure;
};

// Non-private internals for tests and simulations; never part of a release.
struct HeavyTailedTrace {
  std::vector<Vector> pre_noise;     // certified ERM solution per phase (before noise)
  std::vector<Vector> phase_output;  // released phase outputs
  std::vector<double> gaps, alphas;  // certified gap and target per phase
  std::vector<int> newton_steps;
  double sensitivity = 0, beta = 0;  // last phase's l2 sensitivity and effective noise scale
  double final_clip = 0;             // clip of the final clipped-GD phase (practical)
};

// The per-phase schedule (data-free).
struct HeavyTailedPhase {
  std::int64_t begin = 0, m = 0;
  double C = 0, lambda = 0, kappa = 0, alpha = 0, sensitivity = 0;
};
std::vector<HeavyTailedPhase> plan_heavy_tailed(std::int64_t n, std::int64_t d,
                                                const HeavyTailedOptions& o);
// rate(m) = G_2/√m + G_k (d/(mε))^{1−1/k} (card §0).
double heavy_tailed_rate(std::int64_t m, std::int64_t d, double epsilon, const MomentBound& mb);

// X: n × d features, y: labels (±1 for hinge/logistic). Throws InvalidArgument on bad input
// before any noise is drawn.
Release<Vector> fit_heavy_tailed(const RowMatrix& X, const Vector& y, const HeavyTailedOptions& o,
                                 Rng& rng, HeavyTailedTrace* trace = nullptr);

}  // namespace dpstats::optimize
