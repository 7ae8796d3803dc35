// Releases of user-given values with calibrated noise: the library side of `dpstats noise`,
// `dpstats.laplace` and `dpstats.gaussian`. The sensitivity is that of the whole vector in the
// mechanism's norm (l1 for Laplace, l2 for Gaussian): the largest change of `values` between
// neighbouring datasets. For a scalar the two coincide.
#pragma once
#include "dpstats/data/matrix.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats {

// The validate step shared by these releases and `dpstats account calibrate`: epsilon in the range
// every release takes ([1e-9, 1000], privacy/target.hpp) and the sensitivity in [1e-280, 1e250],
// what the lattice mechanisms represent; InvalidArgument naming the parameter and its range.
void check_noise_parameters(double sensitivity, double epsilon);

// Pure epsilon-DP. `budget`: an optional caller's Budget the release is also charged against.
Release<Vector> laplace_release(const Vector& values, double l1_sensitivity, double epsilon,
                                Rng& rng, NoiseMode noise = NoiseMode::secure,
                                Budget* budget = nullptr);
// (epsilon, delta)-DP, delta in (0, 1).
Release<Vector> gaussian_release(const Vector& values, double l2_sensitivity, double epsilon,
                                 double delta, Rng& rng, NoiseMode noise = NoiseMode::secure,
                                 Budget* budget = nullptr);

}  // namespace dpstats
