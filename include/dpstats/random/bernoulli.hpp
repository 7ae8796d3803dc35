// Exact Bernoulli samplers: no floating-point rounding ever enters a decision. Doubles are used
// only as a fast pre-check whose error margin is proven; undecided cases fall back to exact
// integer arithmetic on the same uniform bits.
#pragma once
#include <cstdint>

#include "dpstats/random/rng.hpp"

namespace dpstats {

__extension__ typedef unsigned __int128 u128;

// Bernoulli(num / den), exact. Requires den >= 1 and num <= den.
bool bernoulli_rational(Rng& rng, u128 num, u128 den);

// Bernoulli(exp(-num / den)), exact (Canonne, Kamath & Steinke 2020, Alg. 1). Requires den >= 1.
bool bernoulli_exp(Rng& rng, u128 num, u128 den);

// Bernoulli(exp(-gamma)) for a finite double gamma >= 0, exact: a double is a dyadic rational.
bool bernoulli_exp(Rng& rng, double gamma);

}  // namespace dpstats
