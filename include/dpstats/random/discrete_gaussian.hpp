// Discrete Gaussian on the integers, P(y) ∝ exp(-y^2 / (2 sigma^2)) with
// sigma^2 = sigma2_num / sigma2_den (Canonne, Kamath & Steinke 2020, Alg. 3). Exact: all
// arithmetic is on integers below 2^128 (a 256-bit square where needed). The only departure
// from the exact law is that a proposal whose acceptance probability is below exp(-2^124) is
// rejected without drawing (a total-variation change below exp(-2^124)).
// For sigma^2 >= 2^20 (the lattice mechanisms' range) the same law is drawn by the binned sampler
// of binned_discrete_gaussian.hpp, about four times faster; below that, by CKS20 Alg. 3.
#pragma once
#include <cstdint>
#include <memory>

#include "dpstats/random/bernoulli.hpp"
#include "dpstats/random/binned_discrete_gaussian.hpp"
#include "dpstats/random/discrete_laplace.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

// Requires sigma2_num >= 1, sigma2_den >= 1, sigma^2 <= 2^62 and, with the fraction reduced and
// t = floor(sigma) + 1, 2 · sigma2_num · sigma2_den · t^2 < 2^128 (always true for
// sigma2_den = 1, the lattice mechanisms' case). When sigma^2 is an integer multiple of t the
// acceptance exponent (|Y| - sigma^2/t)^2 / (2 sigma^2) has the small denominator 2 sigma^2,
// which makes the acceptance test cheaper; the lattice mechanisms round their variance up to
// such a value.
std::int64_t discrete_gaussian(Rng& rng, std::uint64_t sigma2_num, std::uint64_t sigma2_den);

// The same sampler with its parameters validated and its constants prepared once.
class DiscreteGaussian {
 public:
  // Which algorithm draws: the binned one where eligible (automatic), or CKS20 Alg. 3 always
  // (kept selectable for tests and benchmarks; both draw the same law exactly).
  enum class Sampler { automatic, cks };
  DiscreteGaussian(std::uint64_t sigma2_num, std::uint64_t sigma2_den,
                   Sampler sampler = Sampler::automatic);
  std::int64_t operator()(RandomBits& bits) const {
    return binned_ ? (*binned_)(bits) : cks(bits);
  }
  std::int64_t operator()(Rng& rng) const;
  // The Laplace proposal's scale t = floor(sigma) + 1.
  std::uint64_t proposal_scale() const { return proposal_.scale_num(); }

 private:
  struct Parameters;
  static Parameters checked(std::uint64_t sigma2_num, std::uint64_t sigma2_den);
  DiscreteGaussian(const Parameters& p, Sampler sampler);
  std::int64_t cks(RandomBits& bits) const;  // CKS20 Alg. 3

  std::uint64_t num_, den_;   // sigma^2 = num / den, reduced when needed
  u128 scaled_t_;             // t · den
  std::uint64_t centre_;      // sigma^2 / t when it is an integer (den = 1, t | num), else 0
  DiscreteLaplace proposal_;  // scale t
  BernoulliExp accept_;       // denominator 2 num (integer centre) or 2 num den t^2
  std::shared_ptr<const BinnedDiscreteGaussian> binned_;  // set when eligible: draws instead
};

}  // namespace dpstats
