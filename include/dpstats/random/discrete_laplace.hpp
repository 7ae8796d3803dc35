// Discrete Laplace on the integers, P(y) ∝ exp(-|y| / t) with t = scale_num / scale_den
// (Canonne, Kamath & Steinke 2020, Alg. 2). Exact.
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
