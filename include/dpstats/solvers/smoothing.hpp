// Randomized (convolution) smoothing for non-smooth losses (docs/proofs/user-level.md §2.5, P8):
// f_r(x, z) = E_{u ~ Unif(B(0,1))} f(x + r·u, z) is convex, L-Lipschitz and (L√d/r)-smooth when f
// is convex and L-Lipschitz on X + B(0, r), and E_u ∇f(x + r·u, z) = ∇f_r(x, z). The gradient
// oracle draws a fresh u per item and call; each perturbed (sub)gradient counts as one
// evaluation. The perturbation is a utility device, not a privacy mechanism, so it
// uses the ordinary floating-point samplers of the given Rng.
#pragma once
#include <cstdint>

#include "dpstats/solvers/loss.hpp"
#include "dpstats/user_level/user_data.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::optimize {

// u = r·U^{1/d}·g/‖g‖ with g ~ N(0, I_d), U ~ Unif(0, 1): uniform in the ball of radius r (P8).
Vector sample_ball(std::int64_t d, double r, Rng& rng);

// (1/m)·Σ_k ∇f(x + r·u_k; z_{u,k}) with fresh u_k ~ Unif(B(0,1)): an unbiased estimate of the
// smoothed user gradient ∇F̂_r(x, Z_u), every term of norm <= L. r = 0 is the plain user gradient.
Vector smoothed_user_mean_gradient(const UserDataset& data, const Loss& loss, const Vector& x,
                                   std::int64_t user, double r, Rng& rng,
                                   GradientCounter& counter);

}  // namespace dpstats::optimize
