// Exact geometric samplers.
#pragma once
#include <cstdint>

#include "dpstats/random/bernoulli.hpp"

namespace dpstats {

// Number of failures before the first success, P(G = k) = (1 - q) q^k with q = exp(-num/den).
// Exact; requires num >= 1, den >= 1. Returns min(G, 2^64 - 1): G itself is unbounded.
std::uint64_t geometric_exp(Rng& rng, std::uint64_t num, std::uint64_t den);
std::uint64_t geometric_exp(RandomBits& bits, std::uint64_t num, std::uint64_t den);

}  // namespace dpstats
