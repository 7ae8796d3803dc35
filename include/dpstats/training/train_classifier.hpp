// Private training of a softmax classifier (docs/proofs/training.md): DP-SGD and the DP-Adam
// variants (PP, debiased PP, JME, joint clipping) with Poisson subsampling and per-example
// clipping, on the seam (seam.hpp): validate -> plan -> charge -> run -> seal.
//
// Loop (T = epochs · round(N/m) steps, q = m/N):
//   S_t  = Poisson(q) sample of the rows: row id is in S_t when AES-128 under a key drawn from
//          the given Rng, applied to (t, id), falls below floor(2^64 m/N) (keyed, so the same
//          global ids on one process or on ranks; docs/proofs/training.md §4)
//   (x̂_t, x2_t) = GradientRelease (gradient_release.hpp) on S_t at θ_{t-1}
//   dp-sgd:  θ_t = θ_{t-1} − lr x̂_t
//   Adam:    m_t = β1 m + (1−β1) x̂_t ;  v_t = β2 v + (1−β2) u_t,
//            u_t = x̂_t∘x̂_t (adam, dp-adam, dp-adam-debiased) or x2_t (jme, joint clip)
//            m̂ = m_t/(1−β1^t);  v̂ = v_t/(1−β2^t) − b  (b = first_noise_std² for debiased, else 0)
//            v̂ ← max(v̂, γ)       (clamp, post-processing)
//            θ_t = θ_{t-1} − lr m̂ / (sqrt(v̂) + ε_adam)
// At the end of every epoch the training loss is released privately: Σ_i min(loss_i, L) over all
// N rows plus Gaussian noise (add/remove sensitivity L, multiplier loss_noise_multiplier),
// divided by N. Test accuracy is computed on the public test set.
//
// Unknown scale (issues #15, 27; docs/proofs/training.md §3): the model is trained on features
// of about unit scale per coordinate, so that the clip, the learning rate and the initialisation
// are unit-free:
//  * `feature_scale` given (public): x / feature_scale;
//  * absent, and the table has enough rows for 3d private selections (the scale layer's
//    reliability rule on their rank error at n, d and the share, scale/reliability.hpp):
//    u_j = (x_j - m_j) / s_j with m_j, s_j the private per-column median and robust sd
//    (scale/column_scale.hpp, zCDP rho_s = scale_share x the target's rho, add/remove):
//    shift- and per-column unit-equivariant, with the intercept absorbing the centre;
//  * otherwise, only when the caller declares one_unit and gives no scale_share, and when the
//    rule passes for one selection: x / s, s = the private median row norm / sqrt(d)
//    (scale/norm_quantile.hpp, pure epsilon = 0.05 · epsilon, add/remove);
//  * otherwise the release abstains before anything is charged, saying how many rows, which
//    epsilon or scale_share would suffice, to give feature_scale, or (without one_unit) what
//    declaring one_unit would buy.
// A released estimate that the rule finds unusable makes the release abstain with its reason.
// Each is charged in the same ledger.
//
// Several ranks (options.run.comm; docs/proofs/training.md §4): each rank passes its rows (rank
// r's after those of ranks 0..r-1) and the same model; every step's clipped gradients are an
// exact lattice sum merged over ranks, rank 0 draws the key, the noise and the feature-scale
// selections, and every rank returns the single process's seeded release. Pass `budget` on
// rank 0 only. Non-private adam refuses P > 1. The returned classifier applies to the raw features (the
// map folded into the first layer's weights and bias).
//
// Privacy: add/remove neighbours, record level. Accounting (docs/proofs/accounting.md §7-§9):
// the tighter of the pld and rdp accounts of the ledger, in both noise modes.
//  * secure noise (default): the steps are the subsampled LATTICE Gaussian, counted by rdp on
//    the integer orders and by pld as the continuous Gaussian it is coupled to, plus a slack
//    below 1e-30 (PrivacyLoss::subsampled_discrete_gaussian); certified = true.
//  * fast_float (continuous Gaussian; research, certified = false).
// Non-private adam: epsilon = inf, certified = false, empty ledger.
#pragma once
#include <concepts>
#include <functional>
#include <optional>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/run_control.hpp"
#include "dpstats/training/classifier.hpp"
#include "dpstats/training/gradient_release.hpp"
#include "dpstats/release.hpp"

namespace dpstats::optimize {

struct ClassifyOptions {
  ClassifyOptimizer optimizer = ClassifyOptimizer::dp_adam_jme;
  // Private optimizers: epsilon required (> 0), delta in (0, 1) required. With noise_multiplier
  // unset the noise is calibrated so that the whole run spends at most epsilon; with it set the
  // run uses it and must fit within epsilon (BudgetExceeded otherwise). Ignored for adam.
  PrivacyTarget privacy;
  std::optional<double> noise_multiplier;
  RunControl run;                    // threads, noise mode
  int epochs = 10;
  int batch_size = 256;              // expected Poisson batch size m (q = m / n_public)
  // The public number of training rows N (issue 28): the sampling rate is q = batch_size / N,
  // the run has epochs · round(N / batch_size) steps and the train loss is divided by N. Required
  // for the private optimizers: under add/remove neighbouring the exact row count is private, so
  // nothing the release states may depend on it (a dataset's published size, or a round number
  // near it). The table may hold any number of rows up to lattice_rows(N); adam (non-private)
  // takes the row count when it is absent.
  std::optional<std::int64_t> n_public;
  // On the scaled features (unit-free). Absent: max(1e-3, 0.5 / T), T the planned steps (Adam
  // moves each parameter by about T lr; a short run on a small table needs a larger rate).
  std::optional<double> learning_rate;
  // ζ: per-example gradient clip of the model on the scaled features u (unit-free: for the
  // logistic model ||g_i|| = sqrt(||u_i||^2 + 1) ||p_i - e_i||, and ||u_i|| is about sqrt(d), so
  // 1 clips most examples: normalised DP-SGD; docs/proofs/training.md §3).
  double clip = 1;
  // s: the public scale the features are divided by. Absent: estimated privately (see above).
  std::optional<double> feature_scale;
  // Share of the budget for the absent scale, in (0, 0.5]: of rho for the per-column scales
  // (a given share is theirs only). Absent: per-column at a share planned from n, d and the
  // budget within [0.1, 0.5] (scale/share.hpp plan_share, docs/proofs/scale.md §9), else (with
  // one_unit only) the global median row norm at 0.05 of epsilon; stated in
  // diagnostics["scale_share"].
  std::optional<double> scale_share;
  // The caller's public declaration that every feature column is in one unit (pixels, counts of
  // one kind): the absent scale may then be one private scale for every column (the median row
  // norm / sqrt(d)) where the per-column plan does not pass. Without it the plan never takes one
  // scale: nothing public tells one unit from several, and on columns in mm and g one scale
  // trains the majority class (issue 27 finding 4; docs/proofs/training.md §3).
  bool one_unit = false;
  double beta1 = 0.9, beta2 = 0.999;
  std::optional<double> adam_epsilon;  // default: 1e-8 (adam, dp-adam), else 1e-6
  double lambda = 1;                 // JME scaling λ
  double tau = 0.5;                  // joint-clip scaling τ
  // v̂ clamp γ. Default: 0 for adam / dp-adam (v̂ >= 0 already), and the variant's Adam epsilon
  // for debiased, JME, joint clip.
  std::optional<double> second_moment_floor;
  // Holdout (solvers/holdout.hpp): about a fraction in (0, 0.5] of the rows, held out by a
  // secret keyed hash of each row (its values and label), is not trained on; the released
  // model's mean clipped loss on them is released by a Gaussian at holdout_share x the target's
  // rho (in the plan's ledger) and stated in diagnostics["holdout"] with its 95% intervals.
  std::optional<double> holdout;
  double holdout_share = 0.05;       // in (0, 0.5]
  double loss_bound = 5;             // L (nats): per-example loss clipped for the private losses
  double loss_noise_multiplier = 200;
  // Draw the next step's (data-independent) noise on a second thread while this step's gradients
  // are computed; same distribution, from a separate Rng (seeded from `rng` when it is seeded).
  bool noise_thread = true;
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp).
// The model's shape and start point are the caller's (train_classifier.cpp adds them).
// ClassifyRequest's copy (copy_given) writes the fields of its options' names.
template <class O, class V>
  requires std::same_as<std::remove_cvref_t<O>, ClassifyOptions>
void visit_fields(O&& o, V&& v) {
  v("optimizer", o.optimizer);
  v("epsilon", o.privacy.epsilon);
  v("delta", o.privacy.delta);
  v("noise_multiplier", o.noise_multiplier);
  v("noise", o.run.noise);
  v("epochs", o.epochs);
  v("batch_size", o.batch_size);
  v("n_public", o.n_public);
  v("learning_rate", o.learning_rate);
  v("clip", o.clip);
  v("feature_scale", o.feature_scale);
  v("scale_share", o.scale_share);
  v("one_unit", o.one_unit);
  v("beta1", o.beta1);
  v("beta2", o.beta2);
  v("adam_epsilon", o.adam_epsilon);
  v("lambda", o.lambda);
  v("tau", o.tau);
  v("second_moment_floor", o.second_moment_floor);
  v("holdout", o.holdout);
  v("holdout_share", o.holdout_share);
  v("holdout_loss_bound", o.loss_bound);
  v("loss_noise_multiplier", o.loss_noise_multiplier);
}

struct EpochReport {
  int epoch = 0;                 // 1-based
  double train_loss = 0;         // the private (noisy) mean clipped loss (exact for adam)
  std::optional<double> test_accuracy;
  // Not released (the caller's progress and benchmarks only): the wall time of the epoch's steps
  // and the exact number of examples they processed (the sum of the Poisson batch sizes).
  double seconds = 0;
  std::size_t examples = 0;
};

// A public evaluation set (e.g. the Fashion-MNIST test split).
// test_accuracy is then an exact statistic of it, which the guarantee covers only because the
// set is public. `training_rows`: the caller knows the set is the training data (the tool: the
// same file); the release then says test_accuracy is not private (so it does when X is the
// training matrix itself, in memory).
struct EvalSet {
  const RowMatrix* X = nullptr;
  const std::vector<int>* y = nullptr;
  bool training_rows = false;
};

// The most rows a private run's table may hold for n_public = N: max(2N, 2^22 - 1), below 2^40.
// Public: it sets the lattice of the gradient and loss sums (docs/proofs/training.md §4), which
// must not depend on the exact row count. A larger table is refused before any noise is drawn.
std::int64_t lattice_rows(std::int64_t n_public);

// Trains `model` (its parameters are the start point, for the scaled features) on rows X with
// labels y in 0..classes-1. diagnostics: optimizer, model, epochs, steps, n_public,
// sampling_rate, noise_multiplier (z_eff), sensitivity, first/second noise std, feature_scale
// (and its source and cost), train_loss[epoch], test_accuracy[epoch], accountant, epsilon_rdp,
// epsilon_pld. No timing and no batch total enters the release (on_epoch sees them).
// `on_epoch` (optional) sees each epoch's report. `budget`: the caller's optional Budget.
Release<Classifier> train_classifier(Classifier model, const ConstMatrixRef& X,
                                     const std::vector<int>& y, const ClassifyOptions& o, Rng& rng,
                                     Budget* budget = nullptr, EvalSet test = {},
                                     const std::function<void(const EpochReport&)>& on_epoch = {});

// The account of a run of `o` on n rows (the public n_public) at noise multiplier z (every entry
// the run charges: the feature-scale quantile when feature_scale is absent, the steps, the
// per-epoch loss releases).
// Secure noise: the rdp accountant (integer orders for the lattice steps); pld_epsilon is the
// continuous-Gaussian analysis of the same run (a diagnostic, NOT a guarantee for the lattice
// sampler). fast_float: the tighter of pld and rdp.
struct ClassifyAccount {
  double epsilon = 0, sampling_rate = 0;
  double pld_epsilon = 0, rdp_epsilon = 0;
  Accountant accountant = Accountant::rdp;
  Ledger ledger;  // the chosen accountant's ledger
  std::size_t steps = 0;
};
// `features`: the number of columns d (its per-column scale entries are in the account when the
// plan standardises each column); 0 counts the global feature scale, which only one_unit without
// scale_share plans (otherwise 0 is refused when the scale is estimated). A plan that abstains
// counts no feature scale (the release would charge nothing).
ClassifyAccount classify_account(const ClassifyOptions& o, Eigen::Index n, double noise_multiplier,
                                 Eigen::Index features = 0);
// The smallest noise multiplier (to a relative 1e-4, rounded up) with
// classify_account(o, n, z, features).epsilon <= o.privacy.epsilon.
double classify_noise_multiplier(const ClassifyOptions& o, Eigen::Index n,
                                 Eigen::Index features = 0);

}  // namespace dpstats::optimize
