// Exact geometric samplers.
#pragma once
#include <cstdint>

#include "dpstats/random/bernoulli.hpp"

namespace dpstats {

// Number of failures before the first success, P(G = k) = (1 - q) q^k with q = exp(-num/den).
// Exact; requires num >= 1, den >= 1. Returns min(G, 2^64 - 1): G itself is unbounded.
std::uint64_t geometric_exp(Rng& rng, std::uint64_t num, std::uint64_t den);
std::uint64_t geometric_exp(RandomBits& bits, std::uint64_t num, std::uint64_t den);

// floor(t · E) for E ~ Exponential(1) and t = t_num / t_den, i.e. geometric with ratio
// q = exp(-1/t) (P(floor(tE) >= k) = exp(-k/t)), clamped to 2^64 - 1. Exact; requires
// t_num >= 1, t_den >= 1. The building block of the discrete Laplace and Gaussian samplers.
std::uint64_t exponential_floor(RandomBits& bits, std::uint64_t t_num, std::uint64_t t_den);

}  // namespace dpstats
