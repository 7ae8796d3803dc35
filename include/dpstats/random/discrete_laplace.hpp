// Discrete Laplace on the integers, P(y) ∝ exp(-|y| / t) with t = scale_num / scale_den. Exact.
// The structure of Canonne, Kamath & Steinke 2020, Alg. 2 (a geometric magnitude with
// P(|Y| >= y) = exp(-y/t), a fair sign, (negative, 0) rejected), with the magnitude drawn as
// floor(t·E) by von Neumann's exact exponential (geometric.hpp) in place of CKS's uniform accepted
// by Bernoulli(exp(-U/t)) plus a Bernoulli(exp(-1)) loop: the same law from fewer random bits.
#pragma once
#include <cstdint>

#include "dpstats/random/bernoulli.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

// Requires scale_num >= 1, scale_den >= 1, scale_num < 2^56. Returns the exact sample clamped to
// [-(2^63 - 1), 2^63 - 1] (reaching the clamp has probability below exp(-2^63 / t)); callers that
// need exactness there clamp their own output further (see mechanisms/laplace.hpp).
std::int64_t discrete_laplace(Rng& rng, std::uint64_t scale_num, std::uint64_t scale_den);

// The same sampler with its parameters validated and its constants prepared once.
class DiscreteLaplace {
 public:
  DiscreteLaplace(std::uint64_t scale_num, std::uint64_t scale_den);
  std::int64_t operator()(RandomBits& bits) const;
  std::int64_t operator()(Rng& rng) const;
  std::uint64_t scale_num() const { return num_; }
  std::uint64_t scale_den() const { return den_; }

 private:
  std::uint64_t num_, den_;
};

}  // namespace dpstats
