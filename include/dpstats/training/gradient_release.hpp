// The per-step private release of DP-SGD and the DP-Adam variants of
// docs/proofs/training.md §1 (with C = I, the trivial factorization: docs/proofs/training.md shows the
// paper's CIFAR runs used it, and only C = I composes with subsampling amplification, §4.6).
//
// Neighbouring relation: add/remove one training example (the relation of the Poisson-subsampled
// Gaussian accountant, privacy/rdp.hpp). Per step, one vector Gaussian mechanism (the secure
// lattice GaussianMechanism) releases a sum over the Poisson batch whose add/remove l2
// sensitivity is computed for what is summed:
//
//  * dp-sgd, dp-adam, dp-adam-debiased: Σ_i c_i g_i, c_i = min(1, ζ/||g_i||); sensitivity ζ.
//  * dp-adam-jme (docs/proofs/training.md): per-example squares, the covered variant for m > 1):
//      ( Σ_i c_i g_i ,  √λ Σ_i (c_i g_i)∘(c_i g_i) ),
//    one example moves it by at most ζ sqrt(1 + λζ²) (||c g|| <= ζ and ||(cg)∘(cg)|| <= ζ², card
//    §4.6: under add/remove the second moment is not free); moments::noise_scales computes it.
//  * dp-adam-joint-clip (docs/proofs/training.md): c_i clips the concatenation (g_i, √τ g_i∘g_i) to ζ, then
//      ( Σ_i c_i g_i ,  √τ Σ_i c_i g_i∘g_i ),  sensitivity ζ.
// The sums are exact lattice sums (docs/proofs/training.md §4): each example's clipped vector v_i
// (the part above; its norm is at most ball = ζ, or ζ sqrt(1 + λζ²) for JME) is scaled to the
// grid 2^b / ball (b = exact::ball_bits(B) for at most B rows in a batch), each coordinate is
// rounded to an integer, and the integers are added exactly (BatchGradients::lattice_sum). So a
// batch's sum does not depend on the order, the threads or how the rows are split over ranks,
// and one example moves the integer sum by at most 2^b (1 + e)^2 + sqrt(D)/2 in l2 (D = P, or 2P
// with a second part; e = (D + 32) 2^-52 covers the floating-point norms and products): the
// mechanism runs at s = that · ball 2^-b + B ball 2^-50 (the conversion to value units). At
// D = 2 · 102k and B = 60000 (b = 30), s is 2·10^-7 relative above ball.
// The noise std is z·s (z the noise multiplier), so every step is the subsampled Gaussian with
// multiplier z_eff = 1/sqrt(2 rho) >= z of the mechanism that runs (lattice rounding included).
//
// Outputs, normalised by the public expected batch size m = qN (post-processing):
//   first  = noisy Σ c_i g_i / m                        (the gradient; Adam's first-moment input)
//   second = noisy Σ (second part) / (√λ or √τ) / m²    (JME / joint clip: Adam's second-moment
//            input; at m = 1 it is x∘x + noise as in Alg. 2; for m > 1 dividing by m² keeps it on
//            the scale of first∘first, see docs/guide.md)
// For PP (dp-adam) the second-moment input is first∘first (post-processing); for debiased PP the
// bias first_noise_std()² is subtracted from v̂ by the optimizer (C = I, bias-corrected EMA
// weights sum to 1: docs/proofs/training.md).
#pragma once
#include <span>

#include "dpstats/names.hpp"
#include "dpstats/registry.hpp"
#include <cmath>
#include <optional>
#include <string>

#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/training/classifier.hpp"

namespace dpstats::optimize {

enum class ClassifyOptimizer { adam, dp_sgd, dp_adam, dp_adam_debiased, dp_adam_jme, dp_adam_joint_clip };
}  // namespace dpstats::optimize

template <>
struct dpstats::EnumNames<dpstats::optimize::ClassifyOptimizer> {
  using O = dpstats::optimize::ClassifyOptimizer;
  static constexpr std::string_view parameter = "optimizer";
  static constexpr std::array<std::pair<O, std::string_view>, 6> names = {
      {{O::adam, "adam"}, {O::dp_sgd, "dp-sgd"}, {O::dp_adam, "dp-adam"},
       {O::dp_adam_debiased, "dp-adam-debiased"}, {O::dp_adam_jme, "dp-adam-jme"},
       {O::dp_adam_joint_clip, "dp-adam-joint-clip"}}};
};

namespace dpstats::optimize {
// The classify optimizers, read by the tool and the Python module.
std::span<const MethodInfo> classify_optimizers();
const char* to_string(ClassifyOptimizer o);
bool is_private(ClassifyOptimizer o);
bool has_second_release(ClassifyOptimizer o);  // jme, joint clip

struct GradientReleaseConfig {
  ClassifyOptimizer optimizer = ClassifyOptimizer::dp_adam_jme;
  Eigen::Index parameters = 0;   // P
  double clip = 1;               // ζ
  double noise_multiplier = 1;   // z (target; the mechanism runs at z_eff >= z)
  double expected_batch = 256;   // m = qN
  Eigen::Index max_batch = 65536;  // B: the most rows a batch may have (N under Poisson sampling)
  double lambda = 1;             // JME scaling (the paper's Table 4: 1)
  double tau = 0.5;              // joint-clip scaling (the paper's Table 4: 0.5)
  NoiseMode noise = NoiseMode::secure;
};

class GradientRelease {
 public:
  explicit GradientRelease(const GradientReleaseConfig& c);
  // One step. `second` is resized and filled only when has_second_release(optimizer).
  void release(const BatchGradients& batch, Rng& rng, Vector& first, Vector& second) const;
  // The same in two parts, so that the (data-independent) noise of the next step can be drawn on
  // another thread while this step's gradients are computed: draw_noise returns the mechanism's
  // integer lattice noise (secure mode; exactly what mechanism().apply would add, read back from
  // apply(0)) or its continuous noise (fast_float); release() then adds it to the rounded sum
  // exactly as GaussianMechanism::apply does. Empty for adam.
  Vector draw_noise(Rng& rng) const;
  void release(const BatchGradients& batch, const Vector& noise, Vector& first,
               Vector& second) const;
  // The parts of release() on several ranks: lattice_sum (every rank, its own rows; integers to
  // add exactly over ranks), noisy_sum (rank 0: the noise added to the total in value units),
  // normalise (every rank: first, second from the broadcast noisy sum).
  Vector lattice_sum(const BatchGradients& batch) const;
  Vector noisy_sum(const Vector& lattice, const Vector& noise) const;
  void normalise(const Vector& noisy, Vector& first, Vector& second) const;
  double unit() const { return ball_ * std::ldexp(1.0, -bits_); }  // one lattice step
  // Clipping weights of the step: w1 on g_i and w2 on g_i∘g_i (w2 empty unless JME/joint clip).
  void clip_weights(const BatchGradients& batch, Vector& w1, Vector& w2) const;

  double sensitivity() const { return sensitivity_; }       // add/remove l2 sensitivity s
  double noise_multiplier() const;                           // z_eff of the mechanism that runs
  double first_noise_std() const;                            // noise std of one entry of `first`
  double second_noise_std() const;                           // ... of `second` (0 if none)
  // The mechanism of a private optimizer (throws for adam).
  const GaussianMechanism& mechanism() const;
  // The ledger entry of `steps` Poisson(q) steps of this release: subsampled_gaussian at z_eff
  // (fast_float), or at the configured noise_multiplier marked discrete (secure: the lattice
  // noise's coupled multiplier is at least that, docs/proofs/accounting.md §9). Throws for adam.
  LedgerEntry ledger_entry(std::string purpose, double sampling_rate, int steps) const;
  const GradientReleaseConfig& config() const { return c_; }

 private:
  GradientReleaseConfig c_;
  double sensitivity_ = 0;
  double second_scale_ = 1;  // √λ (JME) or √τ (joint clip)
  double ball_ = 1;          // the per-example norm bound the lattice is scaled to
  int bits_ = 1;             // b: the grid 2^b / ball
  std::optional<GaussianMechanism> mech_;  // empty for non-private adam
};

}  // namespace dpstats::optimize
