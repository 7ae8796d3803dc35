// Gaussian mechanism, scalar and vector, safe against floating-point attacks.
//
// Secure mode (default): the input is rounded to a power-of-two lattice g·Z^d and exact discrete
// Gaussian noise N_Z(0, s^2) per coordinate (lattice units) is added. The lattice l2 sensitivity
// is K = Δ/g + sqrt(d) (rounding moves each coordinate by < 1 step; for d = 1 the integer
// floor(Δ/g) + 1), rounded up in floating point. Privacy of the integer
// release (Canonne, Kamath & Steinke 2020):
//   * rho-zCDP with rho = K^2 / (2 s^2) (CKS20 Thm 14), for any d;
//   * for d = 1 and a target (ε, δ): the exact discrete δ(ε) of CKS20 Thm 7 (integer K), bounded
//     above rigorously (see privacy/calibration.hpp) and calibrated to be <= δ;
//   * for d > 1 and a target (ε, δ): rho is chosen by the tight zCDP -> (ε, δ) conversion.
// g is chosen from public parameters only: the largest power of two <= Δ/(sqrt(d)·2^20), so that
// rounding costs at most a 2^-20 relative increase in noise, coarsened when the lattice noise
// s would exceed 2^30 (s^2 must stay below the sampler's 2^62). s^2 is an integer, rounded up
// (more noise only): past the calibrated value, then to a multiple of floor(s) + 1 (at most
// 2s more), which gives the sampler's acceptance test a small denominator. The lattice values
// are clamped to ±2^60 (input) and ±2^62 (output), so the returned doubles are post-processing
// of the exact integer release. rho() is always an upper bound on what runs.
//
// fast_float mode: continuous Gaussian from floating-point uniforms, calibrated with the analytic
// Gaussian mechanism (Balle & Wang 2018); research only; certified = false.
#pragma once
#include <Eigen/Core>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/random/discrete_gaussian.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats {

class GaussianMechanism {
 public:
  // rho-zCDP for l2 sensitivity Δ.
  static GaussianMechanism from_rho(double l2_sensitivity, double rho, std::size_t dimension = 1,
                                    NoiseMode mode = NoiseMode::secure);
  // (ε, δ)-DP for l2 sensitivity Δ; δ in (0, 1).
  static GaussianMechanism from_epsilon_delta(double l2_sensitivity, double epsilon, double delta,
                                              std::size_t dimension = 1,
                                              NoiseMode mode = NoiseMode::secure);
  // A given noise standard deviation (at least sigma); the loss is reported as rho.
  static GaussianMechanism from_sigma(double l2_sensitivity, double sigma,
                                      std::size_t dimension = 1,
                                      NoiseMode mode = NoiseMode::secure);

  double apply(double value, Rng& rng) const;
  Eigen::VectorXd apply(const Eigen::Ref<const Eigen::VectorXd>& value, Rng& rng) const;
  // The same, reading bits from a reader shared with other draws (no bits wasted between calls).
  double apply(double value, RandomBits& bits) const;
  // out[i] = apply(values[i]) for every i (no dimension check: a stream's coordinates). Spans of
  // at least kChunk entries are cut into chunks of kChunk, each noised with its own generator
  // from rng.split() drawn in chunk order — so a seeded run gives the same noise for any
  // `threads` — and the chunks run on `threads` threads. Generators that cannot split, and
  // shorter spans, are noised in order on the calling thread.
  static constexpr std::size_t kChunk = std::size_t{1} << 15;
  void apply_each(std::span<const double> values, std::span<double> out, Rng& rng,
                  int threads = 1) const;
  // The generators of apply_each's chunks for a span of n values: one per kChunk values, split
  // off rng in order; empty when n < kChunk or rng cannot split (then the span is noised in
  // order from rng itself). For callers that cut a stream into chunks themselves.
  static std::vector<std::unique_ptr<Rng>> chunk_generators(std::size_t n, Rng& rng);
  // out[i] = apply(values[i], bits) in order, on the calling thread: one chunk of apply_each.
  void apply_each(std::span<const double> values, std::span<double> out,
                  RandomBits& bits) const;

  double sigma() const { return sigma_; }              // effective noise standard deviation
  double granularity() const { return granularity_; }  // lattice step g (0 in fast_float mode)
  double sensitivity() const { return sensitivity_; }
  std::size_t dimension() const { return dimension_; }
  NoiseMode mode() const { return mode_; }
  // rho-zCDP of what runs (always valid).
  double rho() const { return rho_; }
  // The loss the mechanism was calibrated to: approximate (ε, δ) for from_epsilon_delta,
  // zcdp rho otherwise.
  PrivacyLoss loss() const { return loss_; }
  // The noise multiplier z of the continuous Gaussian this noise is coupled to: fast_float
  // sigma / sensitivity; secure sqrt(s^2 - kLatticeCouplingWidth^2) / K rounded down, for the
  // lattice variance s^2 and lattice l2 sensitivity K (docs/proofs/accounting.md §9), 0 when
  // s^2 <= kLatticeCouplingWidth^2.
  double coupled_noise_multiplier() const;
  LedgerEntry ledger_entry(std::string purpose) const;
  // The same entry stated as mu-GDP with mu = 1 / coupled_noise_multiplier(): exact for the
  // continuous Gaussian (fast_float), the coupled form of the lattice Gaussian (secure; counted by
  // the pld and rdp accountants, docs/proofs/accounting.md §9).
  LedgerEntry gdp_ledger_entry(std::string purpose) const;
  // What a plan charges for `count` calls of from_rho(Δ, rho) before Δ is known (it comes from an
  // earlier stage's release): the same mechanism and loss, `reserved` (seam.hpp).
  static LedgerEntry reserved_entry(double rho, std::string purpose, int count = 1);

 private:
  GaussianMechanism() = default;
  // Validated sensitivity and dimension, nothing calibrated yet.
  static GaussianMechanism unconfigured(double l2_sensitivity, std::size_t dimension,
                                        NoiseMode mode);
  double sensitivity_ = 0;
  std::size_t dimension_ = 1;
  NoiseMode mode_ = NoiseMode::secure;
  double granularity_ = 0;
  double lattice_sensitivity_ = 0;  // K, an upper bound on the lattice l2 sensitivity (secure)
  std::uint64_t lattice_variance_ = 0;  // s^2 of the lattice noise N_Z(0, s^2) (secure)
  std::optional<DiscreteGaussian> lattice_noise_;  // N_Z(0, s^2), s^2 = s2_num (secure mode)
  double sigma_ = 0, rho_ = 0;
  PrivacyLoss loss_;
};

}  // namespace dpstats
