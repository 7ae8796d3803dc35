// Discrete Laplace on the integers, P(y) ∝ exp(-|y| / t) with t = scale_num / scale_den
// (Canonne, Kamath & Steinke 2020, Alg. 2). Exact.
#pragma once
#include <cstdint>

#include "dpstats/random/rng.hpp"

namespace dpstats {

// Requires scale_num >= 1, scale_den >= 1, scale_num < 2^56.
std::int64_t discrete_laplace(Rng& rng, std::uint64_t scale_num, std::uint64_t scale_den);

}  // namespace dpstats
