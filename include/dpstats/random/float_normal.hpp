// The library's one floating-point standard normal sampler (Box-Muller from 53-bit uniforms).
// For data generation, model initialisation, randomized smoothing and the fast_float research
// noise only: a floating-point sampler is not a secure mechanism (docs/threat-model.md); every
// private release with secure noise draws from the exact samplers instead.
#pragma once
#include "dpstats/random/rng.hpp"

namespace dpstats {

double standard_normal(Rng& rng);

}  // namespace dpstats
