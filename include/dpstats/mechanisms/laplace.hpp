// Laplace mechanism, scalar and vector, safe against floating-point attacks (Mironov 2012).
//
// Secure mode (default): the input is clamped to ±2^60·g and rounded to a power-of-two lattice
// g·Z^d, and exact discrete Laplace noise (in lattice units) is added. Rounding can move two
// neighbouring inputs apart by at most one lattice step per coordinate, so the lattice l1
// sensitivity is K = floor(Δ/g) + d; the discrete Laplace scale t >= K/ε (in lattice units) makes
// the integer release exactly ε-DP, and the double returned is post-processing of it (the
// lattice value is clamped to ±2^62 first, which also makes the sampler's own clamp at
// ±(2^63 - 1) invisible).
//  * g, from public parameters only: the largest power of two <= Δ/(d·2^20), so that rounding
//    costs at most a 2^-20 relative increase in noise; for tiny ε, coarsened until
//    Δ/(ε g) <= 2^50 (the rounding then costs d·g/Δ, still small unless d/ε is astronomical).
//  * t = t_num / 2^j, t_num = ceil(K 2^j/ε (1 + 2^-48)) + 1, with the largest j <= 20 that keeps
//    t_num < 2^56; if even j = 0 does not (d/ε >= ~2^55), the constructor throws.
//
// fast_float mode: continuous Laplace from floating-point uniforms; research only; releases made
// with it report noise = "fast_float" and certified = false.
#pragma once
#include <Eigen/Core>
#include <optional>

#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/random/discrete_laplace.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats {

class LaplaceMechanism {
 public:
  // ε-DP for inputs whose l1 distance between neighbours is at most `l1_sensitivity`.
  // `dimension` is the length of the vectors it will be applied to (1 for scalars).
  LaplaceMechanism(double l1_sensitivity, double epsilon, std::size_t dimension = 1,
                   NoiseMode mode = NoiseMode::secure);

  double apply(double value, Rng& rng) const;
  Eigen::VectorXd apply(const Eigen::Ref<const Eigen::VectorXd>& value, Rng& rng) const;
  // The same, reading bits from a reader shared with other draws (no bits wasted between calls).
  double apply(double value, RandomBits& bits) const;

  double noise_scale() const { return scale_; }              // effective Laplace scale b >= Δ/ε
  double granularity() const { return granularity_; }  // lattice step g (0 in fast_float mode)
  double sensitivity() const { return sensitivity_; }
  std::size_t dimension() const { return dimension_; }
  NoiseMode mode() const { return mode_; }
  PrivacyLoss loss() const { return PrivacyLoss::pure(epsilon_); }
  LedgerEntry ledger_entry(std::string purpose) const;
  // What a plan charges for `count` calls of the mechanism at `epsilon` before its sensitivity is
  // known (an earlier stage's release): the same mechanism and loss, `reserved` (seam.hpp).
  static LedgerEntry reserved_entry(double epsilon, std::string purpose, int count = 1);

 private:
  double sensitivity_, epsilon_;
  std::size_t dimension_;
  NoiseMode mode_;
  double granularity_ = 0;
  std::optional<DiscreteLaplace> lattice_noise_;  // scale t = t_num / t_den >= K/ε (secure mode)
  double scale_ = 0;
};

}  // namespace dpstats
