// User-level private convex optimisation (docs/proofs/user-level.md): Alg 1 (phased SGD with outlier-iterate removal and output
// perturbation), Alg 3 with Alg 2 inside and its smoothed non-smooth variant (accelerated.hpp),
// their data-free schedules, and the baselines, behind one entry point.
//
// Alg 1, profile `paper` (docs/proofs/user-level.md §2.2, Thm B.1 as printed, with the fixes in docs/errata.md): C groups per
// phase, a Laplace(20/ε) test on the concentration score, the randomized outlier filter and
// Gaussian output perturbation σ_i = 100·τ_i·ln²(n/δ)/(εC). Certified as the paper profile: the
// proof is the paper's, whose Lemma B.2 constant is unstated (docs/errata.md). It refuses unless
// every phase has N_i >= 1 group member, which needs n of order 10^5–10^6.
//
// Alg 1, profile `practical` (our proof, certified): the same phases on disjoint users, but the
// test and filter are replaced by clipping each group's displacement x̃_{i,j} − x_{i−1} to norm τ_i
// and releasing the exact clipped sum (exact_sum.hpp) with the secure Gaussian at ρ-zCDP, where
// (ε, δ) → ρ by the tight conversion. One user is in one group of one phase, so the phase release
// has sensitivity ≈ 2τ_i/C_i and phases compose in parallel. τ_i = c_τ·η_i·L·T_i; with c_τ = 1
// (default) the clip never binds, since T_i projected steps move at most η_i·L·T_i.
#pragma once
#include <concepts>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/names.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/profile.hpp"
#include "dpstats/release.hpp"
#include "dpstats/run_control.hpp"
#include "dpstats/solvers/dp_sgd.hpp"
#include "dpstats/test_hooks.hpp"

namespace dpstats::optimize {

enum class UserLevelMethod {
  phased_sgd,     // Alg 1
  accelerated,    // Alg 3 (Alg 2 inside): accelerated phased ERM, outlier-gradient removal
  nonsmooth,      // randomized smoothing + Alg 3 (docs/proofs/user-level.md §2.5)
  dp_gd_user,     // B0: full-batch DP-GD, per-user clipped mean gradients (recommended)
  dp_gd_filter,   // DP-GD with a soft filter around a private centre (filter.hpp)
  dp_sgd_user,    // B1: one pass of DP-SGD over disjoint user batches
  dp_sgd_group,   // item-level DP-SGD + group privacy
  non_private,    // one-pass SGD, no privacy
};

// Public problem constants (never estimated from data).
struct ProblemConstants {
  double L = 1, R = 2;              // Lipschitz constant, domain diameter
  std::optional<double> beta;       // smoothness
  std::int64_t d = 1;
};

struct Alg1Options {
  Profile profile = Profile::practical;
  std::optional<double> q, p, eta;  // paper: q = 0.1, p = J + 3/2, η = R/(L√(dmnε))
  std::optional<int> num_phases;    // cap on l (paper: voids the proof → certified = false)
  std::optional<int> groups;        // practical: C_i (default ⌊√n_i⌋, at least 1)
  double c_tau = 1;                 // practical: τ_i = c_τ·η_i·L·T_i (utility only)
  std::optional<double> rho;        // practical: zCDP of each phase (default: from (ε, δ));
                                    // fit_user_level passes what the scale estimates left
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp).
template <class V>
void visit_fields(const Alg1Options& o, V& v) {
  v("profile", o.profile);
  v("q", o.q);
  v("p", o.p);
  v("eta", o.eta);
  v("num_phases", o.num_phases);
  v("groups", o.groups);
  v("c_tau", o.c_tau);
  v("rho", o.rho);
}

struct Alg1Phase {
  std::int64_t n_i = 0, groups = 0, N_i = 0, T_i = 0;
  double eta_i = 0, tau_i = 0, sigma_i = 0;
};

struct Alg1Plan {
  Profile profile = Profile::paper;
  double J = 0, p = 0, q = 0, eta = 0, C_raw = 0;
  std::int64_t C = 0, l = 0;
  double n_condition_lhs = 0, n_condition_rhs = 0;  // n^{1−q} >= 100/(1−2^{−q})·ln(n/δ)/ε
  double rho = 0;                                   // practical: zCDP per phase
  std::vector<Alg1Phase> phases;
  std::int64_t gradient_evaluations = 0;            // Σ_i C_i·N_i·m (no halting)
  std::int64_t users_used = 0;
  bool feasible = true;
  bool certified = true;
  std::string refusal;                              // why it is infeasible
  std::vector<std::string> warnings;
};

// Data-free: every schedule value from public (n, m, ε, δ, constants). Never throws for an
// infeasible schedule (feasible = false, refusal says why); throws InvalidArgument for bad inputs.
Alg1Plan plan_alg1(std::int64_t n, std::int64_t m, double epsilon, double delta,
                   const ProblemConstants& k, const Alg1Options& o = {});

// Alg 3 (docs/proofs/user-level.md §2.3–2.5; accelerated.hpp runs it). Profiles:
//  * paper: Thm C.3 constants, AboveThreshold gate (Lap(8/ε), Lap(16/ε)), the P6 coin filter at
//    radius 2τ and σ_i = 1000·τ·√T_i·ln(nde^ε/δ)/(εn_i); certified as the paper profile (the
//    Lemma C.2 constant is unstated, docs/errata.md). Refuses below n ≈ 2·10^6 at (1, 1e-6).
//  * practical (our proof, certified): the same phased ERM + AC-SA schedule on disjoint users,
//    the gate and coin filter replaced by an exact clipped sum of the K_i sampled users' mean
//    gradients (clip τ, sensitivity ≈ 2τ/K_i) released by the secure Gaussian at ρ/T_i-zCDP per
//    step (adaptive composition over the phase; phases parallel; no amplification claimed).
struct Alg3Options {
  Profile profile = Profile::practical;
  std::optional<double> q, p, lambda;     // paper: q = 0.1, Thm C.3 p and λ; practical: q = 1, λ = 0
  std::optional<int> num_phases;          // cap on l (utility only: the risk proof no longer applies)
  double c_tau = 1;                       // paper: τ = c_τ·2L√(2ln(2/γ)/m) (utility only, σ ∝ τ)
  std::optional<int> steps;               // practical: T_i (default 20)
  std::optional<double> clip;             // practical: τ, the per-user clip (default L/(4√m))
  std::optional<double> smoothness;       // practical: AC-SA's L_f (default τ·T²/(8R)), utility only
  std::optional<std::int64_t> users_per_step;  // practical: K_i (default n_i: full batch)
  std::optional<double> smoothing_radius; // nonsmooth: r (default R√d/(εn√m), Thm D.3)
  std::optional<double> rho;              // practical: zCDP of each phase (default: from (ε, δ))
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp);
// UserLevelRequest's copy (copy_given) writes the fields of its options' names.
template <class O, class V>
  requires std::same_as<std::remove_cvref_t<O>, Alg3Options>
void visit_fields(O&& o, V&& v) {
  v("profile", o.profile);
  v("q", o.q);
  v("p", o.p);
  v("lambda", o.lambda);
  v("num_phases", o.num_phases);
  v("c_tau", o.c_tau);
  v("steps", o.steps);
  v("clip", o.clip);
  v("smoothness", o.smoothness);
  v("users_per_step", o.users_per_step);
  v("smoothing_radius", o.smoothing_radius);
  v("rho", o.rho);
}

struct Alg3Phase {
  std::int64_t n_i = 0, T_i = 0, K_i = 0, K_laplace = 0;
  std::int64_t stage_length = 0;          // restarted AC-SA: N_s = ⌈2√2·√(L_f/μ)⌉ (T_i if μ = 0)
  double lambda_i = 0, K_raw = 0, sigma_i = 0;
  double L_f = 0;                         // β + λ_i (paper) or the practical L_f + λ_i
  double sensitivity = 0;                 // l2 sensitivity of the per-step mean gradient
};
struct Alg3Plan {
  Profile profile = Profile::paper;
  bool nonsmooth = false;
  double q = 0, p = 0, lambda = 0, tau = 0, gamma = 0;
  double beta = 0;                        // β (smooth) or β_r = L√d/r (nonsmooth)
  double smoothing_radius = 0;            // r (nonsmooth only)
  double rho = 0;                         // practical: zCDP of each phase
  std::int64_t l = 0;
  double n_condition_lhs = 0, n_condition_rhs = 0;  // n^{1−q} > 100·ln(20nmde^ε/δ)/(ε(1−2^{−q}))
  std::vector<Alg3Phase> phases;
  double gradient_evaluations = 0;        // Σ T_i·K_i·m over all l phases (no halting)
  std::int64_t users_used = 0;
  bool feasible = true;       // false when some phase has n_i below the Laplace tail (line 7)
  bool certified = true;
  std::string refusal;        // the first such phase
  std::vector<std::string> warnings;
};
// Data-free. Paper: β is required unless nonsmooth (then β_r = L√d/r, λ = (L/R)/√(mn)).
Alg3Plan plan_accelerated(std::int64_t n, std::int64_t m, double epsilon, double delta,
                          const ProblemConstants& k, const Alg3Options& o, bool nonsmooth = false);
// The paper schedule (docs/proofs/user-level.md §2.4, §2.7): plan_accelerated with profile paper and this q.
Alg3Plan plan_alg3(std::int64_t n, std::int64_t m, double epsilon, double delta,
                   const ProblemConstants& k, std::optional<double> q = std::nullopt);

// What tests may look at (non-private; never in a release). `noiseless` switches every draw off.
struct UserLevelTrace : TestHooks {
  UserHook on_user;                      // (phase or step, group, user) on every read of a user
  std::vector<int> phase_passed;         // Alg 1 paper: test outcome per phase
  std::vector<std::int64_t> kept;        // Alg 1 paper: |S_i| per phase
  std::vector<Vector> group_iterates;    // Alg 1: x̃_{i,j} of the last phase run
  std::vector<std::int64_t> step_kept;   // Alg 3 paper: |S_t| per executed step
  std::vector<Vector> released_gradients;  // Alg 3: ĝ per executed step (noise included)
};

// Public parameters (docs/guide.md "Public parameters"):
//  * domain_radius (kind a, required): X = B(0, domain_radius), the ball the weights live in.
//  * feature_bound (kind b): rows are clipped to this norm; absent (and the data not already
//    bounded), it is estimated privately from scale_share of the budget by the scale layer
//    (scale/norm_quantile.hpp): the median over users of each user's 0.9-quantile row norm (one
//    value per user, user-level sensitivity 1). When the scale layer gives that estimate no rank
//    guarantee (status insufficient_data or degenerate: too few users for the share) the release
//    abstains with the reason; only the estimates were charged.
//  * label_bound (kind b, squared and huber only): labels clipped to [-B, B]; absent, estimated
//    the same way from |y|. Logistic and hinge take labels in {-1, +1} ({0, 1} is mapped 0 -> -1).
//  * clip, step_size, steps: derived from L = feature_bound (and R) when absent (kind c).
//  * centre (kind b): absent, the fit standardises its features privately and fits an intercept
//    whenever their scale is unknown (no feature_bound, data not bounded, no custom domain or
//    x0) and the users are enough for the private location's guarantee (scale/location.hpp, one
//    row per user, scale_share of rho on top of the bounds' share); otherwise it fits x . w with
//    no intercept, diagnostics["centring"] says why, and a private offset check
//    (solvers/standardize.hpp, a quarter of scale_share of rho, after the bounds' estimate)
//    abstains when a column (or a regression label) lies far from 0. true: always centre (abstain
//    when the users are too few); false: never, and no check. When centred, the estimate is (w_1..w_d, b) in
//    the user's units (solvers/standardize.hpp), domain_radius bounds the weights of the
//    standardised features and the intercept, and feature_bound is estimated on them.
struct UserLevelOptions {
  UserLevelMethod method = UserLevelMethod::dp_gd_user;
  GlmKind loss = GlmKind::logistic;
  PrivacyTarget privacy;                 // epsilon required; delta in (0, 1) required
  Profile profile = Profile::practical;  // phased-sgd, accelerated, nonsmooth
  RunControl run;
  double domain_radius = 0;              // required (> 0) unless `domain` is given
  std::shared_ptr<const Domain> domain;
  std::optional<Vector> x0;              // default: the domain's centre
  std::optional<double> feature_bound;   // A; absent: the data's own bound, else estimated
  std::optional<double> label_bound;     // B (squared, huber); absent: estimated
  double scale_share = 0.15;             // share of rho spent on the absent bounds, (0, 1)
                                         // (and as much again on the centring, when it runs)
  std::optional<bool> centre;            // absent: centre when the feature scale is unknown
  double clip_report_share = 0.01;       // share of rho for the private count of clipped users
  // Holdout (solvers/holdout.hpp; practical profile and non-private): a fraction in (0, 0.5] of
  // the users, held out by a secret keyed hash of their ids, is not fitted on; each one's mean
  // loss of the released model over its rows (the user's units), clipped to holdout_loss_bound,
  // is summed and released by a Gaussian at holdout_share of rho (charged before the method
  // runs), stated in diagnostics["holdout"] with its 95% intervals.
  std::optional<double> holdout;
  double holdout_share = 0.05;
  double holdout_loss_bound = 5;
  // Gradient methods (B0, B1, group): steps (B0) or batches (B1, group), η, clip.
  std::optional<int> steps;              // default 20 (B0), 50 (B1), ⌈nm/(n/…)⌉ (group)
  std::optional<double> step_size;       // default 4R/(c·T)
  std::optional<double> clip;            // default L/(4√m) (B0, B1), L (group)
  Alg1Options alg1;                      // alg1.profile is set from `profile`
  Alg3Options alg3;                      // accelerated and nonsmooth; alg3.profile from `profile`
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp).
// A `domain` or `x0` object enters as whether one is given.
template <class V>
void visit_fields(const UserLevelOptions& o, V& v) {
  v("method", o.method);
  v("loss", o.loss);
  v("epsilon", o.privacy.epsilon);
  v("delta", o.privacy.delta);
  v("profile", o.profile);
  v("noise", o.run.noise);
  v("domain_radius", o.domain_radius);
  v("domain_or_x0_given", o.domain || o.x0);
  v("feature_bound", o.feature_bound);
  v("label_bound", o.label_bound);
  v("scale_share", o.scale_share);
  v("centre", o.centre);
  v("clip_report_share", o.clip_report_share);
  v("holdout", o.holdout);
  v("holdout_share", o.holdout_share);
  v("holdout_loss_bound", o.holdout_loss_bound);
  v("steps", o.steps);
  v("step_size", o.step_size);
  v("clip", o.clip);
  v("alg1", o.alg1);
  v("alg3", o.alg3);
}

// The defaults above resolved for this data (public sizes and constants only).
ProblemConstants problem_constants(const UserDataset& data, const Loss& loss,
                                   const Domain& domain);

// Fits the model; the Release's estimate is the weight vector (then the intercept, when centred:
// diagnostics["intercept"] = true), privacy.unit = user,
// diagnostics hold public values only (gradient_evaluations, schedule, σ's, estimated bounds).
Release<Vector> fit_user_level(const UserDataset& data, const UserLevelOptions& o, Rng& rng,
                               Budget* budget = nullptr, UserLevelTrace* trace = nullptr);

}  // namespace dpstats::optimize

template <>
struct dpstats::EnumNames<dpstats::optimize::UserLevelMethod> {
  using E = dpstats::optimize::UserLevelMethod;
  static constexpr std::string_view parameter = "method";
  static constexpr std::array<std::pair<E, std::string_view>, 8> names = {{
      {E::dp_gd_user, "dp-gd-user"},
      {E::dp_gd_filter, "dp-gd-filter"},
      {E::dp_sgd_user, "dp-sgd-user"},
      {E::dp_sgd_group, "dp-sgd-group"},
      {E::phased_sgd, "phased-sgd"},
      {E::accelerated, "accelerated"},
      {E::nonsmooth, "nonsmooth"},
      {E::non_private, "non-private"},
  }};
};
