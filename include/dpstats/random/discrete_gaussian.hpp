// Discrete Gaussian on the integers, P(y) ∝ exp(-y^2 / (2 sigma^2)) with
// sigma^2 = sigma2_num / sigma2_den (Canonne, Kamath & Steinke 2020, Alg. 3). Exact: all
// arithmetic is on integers below 2^128 (a 256-bit square where needed). The only departure
// from the exact law is a proposal whose acceptance probability is below exp(-2^124), which is
// rejected without drawing (a total-variation change below exp(-2^124)).
#pragma once
#include <cstdint>

#include "dpstats/random/rng.hpp"

namespace dpstats {

// Requires sigma2_num >= 1, sigma2_den >= 1, sigma^2 <= 2^62 and, with the fraction reduced and
// t = floor(sigma) + 1, 2 · sigma2_num · sigma2_den · t^2 < 2^128 (always true for
// sigma2_den = 1, the lattice mechanisms' case).
std::int64_t discrete_gaussian(Rng& rng, std::uint64_t sigma2_num, std::uint64_t sigma2_den);
std::int64_t discrete_gaussian(RandomBits& bits, std::uint64_t sigma2_num,
                               std::uint64_t sigma2_den);

}  // namespace dpstats
