// l2-Laplace noise: density ∝ exp(-||b||_2 / beta) on R^d, sampled as a Gamma(d, beta) radius
// times a uniform direction. Adding it to a vector of l2 sensitivity Δ with beta = Δ/ε is
// ε-DP (pure). Needed by the pure-DP heavy-tailed optimization card.
//
// The sampler is floating-point (a Gamma radius and a normalised Gaussian direction); the result
// is snapped to a power-of-two lattice. No exact lattice sampler for this density is known to
// us, so releases made with it report noise = "fast_float" and certified = false: see
// docs/threat-model.md.
#pragma once
#include <Eigen/Core>

#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

// One draw of l2-Laplace noise with scale beta in dimension d.
Eigen::VectorXd sample_l2_laplace(std::size_t dimension, double beta, Rng& rng);

class L2LaplaceMechanism {
 public:
  L2LaplaceMechanism(double l2_sensitivity, double epsilon, std::size_t dimension);
  Eigen::VectorXd apply(const Eigen::Ref<const Eigen::VectorXd>& value, Rng& rng) const;
  double beta() const { return beta_; }
  PrivacyLoss loss() const { return PrivacyLoss::pure(epsilon_); }
  LedgerEntry ledger_entry(std::string purpose) const;

 private:
  double sensitivity_, epsilon_;
  std::size_t dimension_;
  double beta_;
};

}  // namespace dpstats
