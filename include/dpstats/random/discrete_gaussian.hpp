// Discrete Gaussian on the integers, P(y) ∝ exp(-y^2 / (2 sigma^2)) with
// sigma^2 = sigma2_num / sigma2_den (Canonne, Kamath & Steinke 2020, Alg. 3). Exact.
#pragma once
#include <cstdint>

#include "dpstats/random/rng.hpp"

namespace dpstats {

// Requires sigma2_num >= 1, sigma2_den >= 1 and sigma^2 <= 2^62.
std::int64_t discrete_gaussian(Rng& rng, std::uint64_t sigma2_num, std::uint64_t sigma2_den);

}  // namespace dpstats
