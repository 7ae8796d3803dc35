// Private training of a softmax classifier (card jme-continual-moments.md §2.8, §5.6): DP-SGD and
// the DP-Adam variants (PP, debiased PP, JME, joint clipping) with Poisson subsampling and
// per-example clipping, accounted by the subsampled-Gaussian RDP accountant (privacy/rdp.hpp).
//
// Loop (T = epochs · round(N/m) steps, q = m/N):
//   S_t  = Poisson(q) sample of the rows (exact Bernoulli(m/N) per row, the given Rng)
//   (x̂_t, x2_t) = GradientRelease (gradient_release.hpp) on S_t at θ_{t-1}
//   dp-sgd:  θ_t = θ_{t-1} − lr x̂_t
//   Adam:    m_t = β1 m + (1−β1) x̂_t ;  v_t = β2 v + (1−β2) u_t,
//            u_t = x̂_t∘x̂_t (adam, dp-adam, dp-adam-debiased) or x2_t (jme, joint clip)
//            m̂ = m_t/(1−β1^t);  v̂ = v_t/(1−β2^t) − b  (b = first_noise_std² for debiased, else 0)
//            v̂ ← max(v̂, γ)       (card §2.8 flag: clamp, post-processing)
//            θ_t = θ_{t-1} − lr m̂ / (sqrt(v̂) + ε_adam)
// At the end of every epoch the training loss is released privately: Σ_i min(loss_i, L) over all
// N rows plus Gaussian noise (add/remove sensitivity L, multiplier loss_noise_multiplier),
// divided by N; it is composed into the same RDP account. Test accuracy is computed on the
// public test set.
//
// Privacy: add/remove neighbours, record level. The guarantee (ε at the given δ, improved RDP
// conversion, integer orders) is computed from the noise multiplier of the mechanism that runs.
// certified = true for every private optimizer: each step is one subsampled Gaussian release of a
// vector whose add/remove sensitivity is computed for what is summed (gradient_release.hpp), and
// Adam's moments, debiasing and clamping are post-processing. What this does NOT implement is the
// paper's replace-one "free second moment" with a non-trivial factorization (card §4.6): see
// docs/guide.md. Non-private adam: epsilon = inf, certified = false.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/training/classifier.hpp"
#include "dpstats/training/gradient_release.hpp"
#include "dpstats/release.hpp"

namespace dpstats::optimize {

struct ClassifyOptions {
  ClassifyOptimizer optimizer = ClassifyOptimizer::dp_adam_jme;
  int epochs = 10;
  int batch_size = 256;              // expected Poisson batch size m (q = m / N)
  double learning_rate = 1e-3;       // card Table 4 (ε ≈ 1.7)
  double clip = 1;                   // ζ (card Table 4)
  double beta1 = 0.9, beta2 = 0.999;
  std::optional<double> adam_epsilon;  // default card Table 4: 1e-8 (adam, dp-adam), else 1e-6
  // Exactly one of: a target epsilon (the noise multiplier is calibrated), or a noise multiplier
  // (the epsilon is reported). Ignored for adam.
  std::optional<double> epsilon;
  std::optional<double> noise_multiplier;
  double delta = 1e-6;
  double lambda = 1;                 // JME scaling λ (card Table 4: 1)
  double tau = 0.5;                  // joint-clip scaling τ (card Table 4: 0.5)
  // v̂ clamp γ (card §2.8 flags: v̂ >= γ; γ unspecified). Default: 0 for adam / dp-adam (v̂ >= 0
  // already), and the variant's Adam epsilon (card Table 4: 1e-6) for debiased, JME, joint clip.
  std::optional<double> second_moment_floor;
  double loss_bound = 5;             // L: per-example loss clipped for the private train loss
  double loss_noise_multiplier = 200;
  int threads = 1;
  // Draw the next step's (data-independent) noise on a second thread while this step's gradients
  // are computed; same distribution, from a separate Rng (seeded from `rng` when it is seeded).
  bool noise_thread = true;
  NoiseMode noise = NoiseMode::secure;
};

struct EpochReport {
  int epoch = 0;                 // 1-based
  double train_loss = 0;         // the private (noisy) mean clipped loss (exact for adam)
  std::optional<double> test_accuracy;
  double seconds = 0;            // wall time of the epoch's training steps
  std::size_t examples = 0;      // examples processed by the epoch's steps
};

// A public evaluation set (e.g. the Fashion-MNIST test split).
struct EvalSet {
  const RowMatrix* X = nullptr;
  const std::vector<int>* y = nullptr;
};

// Trains `model` (its parameters are the start point) on rows X with labels y in 0..classes-1.
// diagnostics: optimizer, model, epochs, steps, sampling_rate, noise_multiplier (z_eff),
// sensitivity, first/second noise std, train_loss[epoch], test_accuracy[epoch],
// examples_per_second, rdp_order. `on_epoch` (optional) sees each epoch's report.
Release<Classifier> train_classifier(Classifier model, const ConstMatrixRef& X,
                                     const std::vector<int>& y, const ClassifyOptions& o, Rng& rng,
                                     EvalSet test = {},
                                     const std::function<void(const EpochReport&)>& on_epoch = {});

// The (ε, order) the run of `o` on N rows spends at o.delta for noise multiplier z (training steps
// and per-epoch loss releases composed).
struct ClassifyAccount {
  double epsilon = 0, order = 0, sampling_rate = 0;
  std::size_t steps = 0;
};
ClassifyAccount classify_account(const ClassifyOptions& o, Eigen::Index n, double noise_multiplier);
// The smallest noise multiplier with classify_account(o, n, z).epsilon <= *o.epsilon.
double classify_noise_multiplier(const ClassifyOptions& o, Eigen::Index n);

}  // namespace dpstats::optimize
