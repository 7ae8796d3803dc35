// Pure ε-DP stochastic convex optimisation with heavy-tailed gradients (docs/proofs/heavy-tailed.md;
// docs/results/heavy-tailed.md), for GLM losses
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
//      profile paper: the paper's §2.8 schedule (T rule, m_t = ⌊n/2^t⌋, λ_1 = rate(m_1)/D, ×32,
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
#include <concepts>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/heavy_tailed/lipschitz_extension.hpp"
#include "dpstats/names.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/profile.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"
#include "dpstats/run_control.hpp"
#include "dpstats/test_hooks.hpp"

namespace dpstats::optimize {

enum class HeavyTailedMethod { lipschitz_extension, output_perturbation, clipped_gd, dp_sgd, non_private };
enum class FinalSolver { clipped_gd, output_perturbation };
enum class FinalClipRule { private_quantile, public_bound };
enum class InnerSolver { glm_one_stage, double_output_perturbation };

// Resolved moment bound (docs/proofs/heavy-tailed.md §0): E[A(z)^k] <= G_k^k; G_2 defaults to G_k.
struct MomentBound {
  double k = 4;
  double G_k = 1;
  std::optional<double> G_2;
  double g2() const { return G_2.value_or(G_k); }
};

// Public parameters (docs/guide.md "Public parameters"):
//  * domain_radius (kind a, required): W = Ball(0, domain_radius).
//  * moment_bound G_k (kind b): absent, it is estimated privately from scale_share of epsilon by
//    the scale layer (scale/norm_quantile.hpp) as the 0.75-quantile of the per-record bound sup_W ‖∇f(w; z)‖ (‖a‖ for absolute, hinge and
//    logistic; κ‖a‖ for huber; ‖a‖(‖a‖R + |y|) for squared), and every clip, λ and step that
//    derives from it scales with the data; when the scale layer gives the estimate no rank
//    guarantee (insufficient_data / degenerate) the release abstains with the reason. moment_order k (kind c: a unit-free shape, default 4).
//  * moment_bound_2 G_2 (kind c given G_k: defaults to G_k).
//  * centre (kind b): absent, the fit standardises its features privately and fits an intercept
//    whenever their scale is unknown (no moment_bound, clip, lambda or step_size given) and the
//    records are enough for the private location's guarantee (scale/location.hpp; scale_share of
//    epsilon, or of rho for dp-sgd, on top of the moment bound's share); otherwise it fits x . w
//    with no intercept, diagnostics["centring"] says why, and a private offset check
//    (solvers/standardize.hpp, scale_share of epsilon; a quarter of it of rho for dp-sgd)
//    abstains when a column (or a regression label) lies far from 0. true: always centre
//    (abstain when the records are too few); false: never, and no check. When centred, the estimate is
//    (w_1..w_d, b) in the user's units (solvers/standardize.hpp), domain_radius bounds the weights
//    of the standardised features and the intercept, and G_k is estimated on them.
struct HeavyTailedOptions {
  HeavyTailedMethod method = HeavyTailedMethod::clipped_gd;  // no data-dependent abort bit
  Profile profile = Profile::practical;
  GlmKind loss = GlmKind::absolute;
  double huber_kappa = 1;
  PrivacyTarget privacy;             // delta: dp-sgd only (required there), 0 otherwise
  RunControl run;
  double domain_radius = 0;          // required: W = Ball(0, R)
  double moment_order = 4;           // k >= 2
  std::optional<double> moment_bound;    // G_k; absent: estimated from scale_share
  std::optional<double> moment_bound_2;  // G_2 (default G_k)
  double scale_share = 0.1;          // share of epsilon spent on an absent moment_bound, (0, 1)
                                     // (and as much again on the centring, when it runs)
  std::optional<bool> centre;        // absent: centre when the feature scale is unknown
  // Holdout (solvers/holdout.hpp): a fraction in (0, 0.5] of the records, held out by a secret
  // keyed hash of each record (its values and label), is not fitted on; its loss under the model
  // (the user's units), clipped to holdout_loss_bound, is summed and released (Laplace at
  // holdout_share x epsilon; dp-sgd: Gaussian at holdout_share x rho), charged before the method
  // runs and stated in diagnostics["holdout"] with its 95% intervals.
  std::optional<double> holdout;
  double holdout_share = 0.05;
  double holdout_loss_bound = 5;
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
  std::optional<FinalSolver> final_solver;
  // Clip of the final clipped-GD phase (practical; ignored when `clip` is set):
  //  "private-quantile" (default): the (1 − p)-quantile of the per-record gradient norms at the
  //    phase-1 output, p = c_p·sqrt(d/(mε)), released by the exponential mechanism at
  //    clip_budget_share·ε of the final block's budget (heavy_tailed_clip.hpp); the GD steps get
  //    the rest (basic composition inside the block).
  //  "public": 0.375·G_k(mε/d)^{1/(2k)} from the moment bound only (the previous default).
  std::optional<FinalClipRule> final_clip_rule;
  std::optional<double> clip_tail_constant;  // c_p
  std::optional<double> clip_budget_share;   // in (0, 1)
  // practical: share of n in phase 1 (default 1/4 when the final solver is clipped-gd, else 1/2)
  std::optional<double> first_fraction;
  // Per-phase inner solver of lipschitz_extension: "glm-one-stage" (default; docs/proofs/heavy-tailed.md §2.13) or
  // "double-output-perturbation" (Alg 4 with Alg 2, paper preset; W_0 = W ∩ B(w_loc, r_0) may be
  // a lens: certified through the Lagrangian of the ball constraint, heavy_tailed_lens.hpp).
  std::optional<InnerSolver> inner;
  // clipped_gd / dp_sgd, and the final clipped-gd phase (steps, step_size, clip of that phase)
  std::optional<int> steps;
  std::optional<double> step_size;
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp);
// HeavyTailedRequest's copy (copy_given) writes the fields of its options' names.
template <class O, class V>
  requires std::same_as<std::remove_cvref_t<O>, HeavyTailedOptions>
void visit_fields(O&& o, V&& v) {
  v("method", o.method);
  v("profile", o.profile);
  v("loss", o.loss);
  v("huber_kappa", o.huber_kappa);
  v("epsilon", o.privacy.epsilon);
  v("delta", o.privacy.delta);
  v("noise", o.run.noise);
  v("domain_radius", o.domain_radius);
  v("moment_order", o.moment_order);
  v("moment_bound", o.moment_bound);
  v("moment_bound_2", o.moment_bound_2);
  v("scale_share", o.scale_share);
  v("centre", o.centre);
  v("holdout", o.holdout);
  v("holdout_share", o.holdout_share);
  v("holdout_loss_bound", o.holdout_loss_bound);
  v("phases", o.phases);
  v("growth", o.growth);
  v("c_multiplier", o.c_multiplier);
  v("lambda_multiplier", o.lambda_multiplier);
  v("kappa", o.kappa);
  v("clip", o.clip);
  v("lambda", o.lambda);
  v("final_solver", o.final_solver);
  v("final_clip_rule", o.final_clip_rule);
  v("clip_tail_constant", o.clip_tail_constant);
  v("clip_budget_share", o.clip_budget_share);
  v("first_fraction", o.first_fraction);
  v("inner", o.inner);
  v("steps", o.steps);
  v("step_size", o.step_size);
}

// Sets moment_order, moment_bound and moment_bound_2 from a resolved bound (experiments, tests).
inline void set_moment(HeavyTailedOptions& o, const MomentBound& mb) {
  o.moment_order = mb.k;
  o.moment_bound = mb.G_k;
  o.moment_bound_2 = mb.G_2;
}

// Non-private internals for tests and simulations; never part of a release.
struct HeavyTailedTrace : TestHooks {
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
// `mb`: the resolved moment bound; `epsilon`: what the phases may spend (after the scale step).
std::vector<HeavyTailedPhase> plan_heavy_tailed(std::int64_t n, std::int64_t d,
                                                const HeavyTailedOptions& o, const MomentBound& mb,
                                                double epsilon);
// rate(m) = G_2/√m + G_k (d/(mε))^{1−1/k} (docs/proofs/heavy-tailed.md §0).
double heavy_tailed_rate(std::int64_t m, std::int64_t d, double epsilon, const MomentBound& mb);

// X: n × d features, y: labels (logistic and hinge: ±1, or {0, 1} mapped 0 -> -1). Throws
// InvalidArgument on bad input before any noise is drawn.
Release<Vector> fit_heavy_tailed(const ConstMatrixRef& X, const Eigen::Ref<const Vector>& y,
                                 const HeavyTailedOptions& o, Rng& rng, Budget* budget = nullptr,
                                 HeavyTailedTrace* trace = nullptr);

}  // namespace dpstats::optimize

template <>
struct dpstats::EnumNames<dpstats::optimize::HeavyTailedMethod> {
  using E = dpstats::optimize::HeavyTailedMethod;
  static constexpr std::string_view parameter = "method";
  static constexpr std::array<std::pair<E, std::string_view>, 5> names = {{
      {E::lipschitz_extension, "lipschitz-extension"},
      {E::output_perturbation, "output-perturbation"},
      {E::clipped_gd, "clipped-gd"},
      {E::dp_sgd, "dp-sgd"},
      {E::non_private, "non-private"},
  }};
};
template <>
struct dpstats::EnumNames<dpstats::optimize::FinalSolver> {
  using E = dpstats::optimize::FinalSolver;
  static constexpr std::string_view parameter = "final_solver";
  static constexpr std::array<std::pair<E, std::string_view>, 2> names = {{
      {E::clipped_gd, "clipped-gd"},
      {E::output_perturbation, "output-perturbation"},
  }};
};
template <>
struct dpstats::EnumNames<dpstats::optimize::FinalClipRule> {
  using E = dpstats::optimize::FinalClipRule;
  static constexpr std::string_view parameter = "final_clip_rule";
  static constexpr std::array<std::pair<E, std::string_view>, 2> names = {{
      {E::private_quantile, "private-quantile"},
      {E::public_bound, "public"},
  }};
};
template <>
struct dpstats::EnumNames<dpstats::optimize::InnerSolver> {
  using E = dpstats::optimize::InnerSolver;
  static constexpr std::string_view parameter = "inner";
  static constexpr std::array<std::pair<E, std::string_view>, 2> names = {{
      {E::glm_one_stage, "glm-one-stage"},
      {E::double_output_perturbation, "double-output-perturbation"},
  }};
};
