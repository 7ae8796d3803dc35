// Exponential mechanism / report-noisy-max over a finite candidate set.
//  * permute_and_flip (McKenna & Sheldon 2020): exact. Candidates are visited in a uniformly random
//    order and candidate i is accepted with probability exp(-ε (q* - q_i) / (c Δ)), c = 1 for
//    monotone quality functions and 2 otherwise, each Bernoulli drawn exactly. ε is shrunk by a
//    factor (1 - 2^-40) to absorb the rounding of the exponent, so the guarantee is exactly ε-DP.
//  * gumbel_max: floating-point Gumbel noise; research only (NoiseMode::fast_float).
#pragma once
#include <cstddef>
#include <span>

#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

struct ExponentialMechanismOptions {
  double epsilon = 1;
  double sensitivity = 1;  // of each quality score
  bool monotone = false;   // scores of neighbours all move in the same direction
};

// Returns the index of the selected candidate. `quality` must be non-empty and finite.
std::size_t permute_and_flip(std::span<const double> quality, const ExponentialMechanismOptions& o,
                             Rng& rng);
std::size_t gumbel_max(std::span<const double> quality, const ExponentialMechanismOptions& o,
                       Rng& rng);

LedgerEntry exponential_mechanism_entry(const ExponentialMechanismOptions& o, std::string purpose);

}  // namespace dpstats
