// "DP Mean", the known-covariance baseline of the PRIME paper (card prime-robust-private-mean.md
// §2.11): half the budget finds a private range with q_range (§2.2), the data are clipped to the
// box x̄ + [-B/2, B/2]^d (D12), and the other half releases their mean with Gaussian noise of l2
// sensitivity B·sqrt(d)/n (replace-one). Not robust: under an α-fraction of corruption its error
// is about α·‖μ_bad − μ‖.
#pragma once
#include "dpstats/data/matrix.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats {

struct DpMeanOptions {
  double epsilon = 1;
  double delta = 1e-6;   // > 0: the range step is a stability histogram
  double sigma = 1;      // known scale of the data (the paper's covariance is I)
  double zeta = 0.1;     // failure probability of the range step (card §2.2)
  double range_share = 0.5;  // budget share of the range step (card §2.11: one half)
  NoiseMode noise = NoiseMode::secure;
  int threads = 1;
};

// Abstains (status "abstained", empty estimate) when the range step finds no populated bin in
// some coordinate; the abstention is itself a private output.
Release<Vector> dp_mean(const ConstMatrixRef& X, const DpMeanOptions& options, Rng& rng);

}  // namespace dpstats
