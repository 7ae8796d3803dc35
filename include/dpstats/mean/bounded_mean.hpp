// Bounded mean with user-given bounds: every coordinate is clipped to [lower, upper], summed
// exactly (mean/clipped_sum.hpp) and released with calibrated noise.
//   delta = 0: Laplace, pure ε-DP, l1 sensitivity d·(upper - lower)/n.
//   delta > 0: Gaussian, (ε, δ)-DP, l2 sensitivity sqrt(d)·(upper - lower)/n.
// Neighbouring: replace-one with public n (the card's primary model, prime §0).
#pragma once
#include "dpstats/data/matrix.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats {

struct BoundedMeanOptions {
  double lower = 0;
  double upper = 1;
  double epsilon = 1;
  double delta = 0;
  NoiseMode noise = NoiseMode::secure;
  int threads = 1;
};

Release<Vector> bounded_mean(const ConstMatrixRef& X, const BoundedMeanOptions& options, Rng& rng);

}  // namespace dpstats
