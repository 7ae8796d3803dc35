// l2-Laplace noise: density ∝ exp(-||b||_2 / beta) on R^d (docs/proofs/substrate.md §4).
// Adding it to a vector of l2 sensitivity Δ with beta = Δ/ε is ε-DP (pure).
//
// Secure mode (default; certified): an exact lattice version, proof in docs/threat-model.md
// ("l2-Laplace on a lattice").
//  1. The value is clamped to ±2^60·g per coordinate (a box projection: l2-nonexpansive) and
//     rounded to the power-of-two lattice gZ^d, g = 2^floor(log2(Δ/(√d·2^20))) (coarsened when
//     d/ε is huge). Two neighbours' lattice points are within K = Δ/g + √d in l2.
//  2. Integer noise z has P(z) ∝ exp(-a·⌈‖z‖₂⌉) on Z^d with a rational a = A/2^55 <= ε/(K + 1):
//     ⌈‖·‖⌉ is within 1 of a norm, so the density ratio of neighbours is <= exp(a(K + 1)) <= e^ε;
//     the normaliser is translation-invariant on Z^d and cancels.
//  3. z is drawn exactly by rejection from a product of discrete Laplaces P(z) ∝ exp(-b‖z‖₁),
//     b = B/2^55 with B = floor(A/√d) (integer square root), accepted with probability
//     exp(-(a⌈‖z‖₂⌉ - b‖z‖₁)) <= 1: a rational exponent, decided by the exact Bernoulli(exp(-x)).
//     Acceptance ≈ d!·V_d/(2√d)^d: 35% at d = 5, 0.6% at d = 20, 2e-4 at d = 32. Proposals with a
//     coordinate of magnitude >= 2^58 are rejected (their mass is below 2d·exp(-2^14): the
//     constructor keeps the proposal scale below 2^44).
//  For d > 32 (kExactMaxDimension) the secure mode is the per-coordinate lattice Laplace calibrated
//  to the l1 sensitivity √d·Δ (mechanisms/laplace.hpp, certified): E‖noise‖ is then ≈ √2·dΔ/ε
//  instead of dΔ/ε; sampler() says which one ran.
//
// fast_float mode (explicit opt-in): a Gamma(d, beta) radius times a normalised Gaussian direction
// from floating-point uniforms, snapped to a lattice; research only; certified = false.
#pragma once
#include <Eigen/Core>
#include <optional>
#include <string>

#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats {

// One floating-point draw of l2-Laplace noise with scale beta in dimension d (fast_float only).
Eigen::VectorXd sample_l2_laplace(std::size_t dimension, double beta, Rng& rng);

// Exact integer noise P(z) ∝ exp(-(a_num/2^55)·⌈‖z‖₂⌉) on Z^d, by rejection from discrete
// Laplaces (see the header). Requires 1 <= d <= 32, a_num >= 1, and proposal scale
// 2^55/floor(a_num/√d) <= 2^44. `proposals` (optional) counts the proposals drawn.
class LatticeL2Laplace {
 public:
  static constexpr int kDenominatorBits = 55;
  LatticeL2Laplace(std::size_t dimension, std::uint64_t a_num);
  void sample(RandomBits& bits, std::int64_t* out, std::uint64_t* proposals = nullptr) const;
  std::uint64_t a_num() const { return a_num_; }
  std::uint64_t b_num() const { return b_num_; }

 private:
  std::size_t d_;
  std::uint64_t a_num_, b_num_;
};

class L2LaplaceMechanism {
 public:
  static constexpr std::size_t kExactMaxDimension = 32;
  L2LaplaceMechanism(double l2_sensitivity, double epsilon, std::size_t dimension,
                     NoiseMode mode = NoiseMode::secure);
  Eigen::VectorXd apply(const Eigen::Ref<const Eigen::VectorXd>& value, Rng& rng) const;
  // Effective l2-Laplace scale (lattice: g·2^55/A >= Δ/ε); for the d > 32 fallback, the
  // per-coordinate Laplace scale >= √d·Δ/ε.
  double beta() const { return beta_; }
  // E‖noise‖₂ (d·beta for l2-Laplace; ≈ √(2d)·beta for the per-coordinate fallback).
  double expected_norm() const;
  double granularity() const { return granularity_; }
  double sensitivity() const { return sensitivity_; }
  std::size_t dimension() const { return dimension_; }
  NoiseMode mode() const { return mode_; }
  // "lattice_l2_laplace", "coordinate_laplace" (d > 32) or "float_gamma_radius" (fast_float).
  std::string sampler() const;
  bool certified() const { return mode_ == NoiseMode::secure; }
  PrivacyLoss loss() const { return PrivacyLoss::pure(epsilon_); }
  LedgerEntry ledger_entry(std::string purpose) const;
  // What a plan charges for `count` calls at `epsilon` before the sensitivity is known (an
  // earlier stage's release): the same mechanism and loss, `reserved` (seam.hpp).
  static LedgerEntry reserved_entry(double epsilon, std::string purpose, int count = 1);
  // Proposals drawn by the last apply() on this thread's calls (diagnostics for benchmarks).
  std::uint64_t last_proposals() const { return last_proposals_; }

 private:
  double sensitivity_, epsilon_;
  std::size_t dimension_;
  NoiseMode mode_;
  double beta_ = 0, granularity_ = 0;
  std::optional<LatticeL2Laplace> exact_;
  std::optional<LaplaceMechanism> coordinate_;
  mutable std::uint64_t last_proposals_ = 0;
};

}  // namespace dpstats
