// Noise calibration: sensitivity and a target loss in, noise scale out. Every returned scale is
// rounded up (never below the exact answer); every returned delta is an upper bound.
#pragma once

namespace dpstats {

// Laplace scale b = Δ / ε for pure ε-DP.
double laplace_scale(double l1_sensitivity, double epsilon);

// Analytic Gaussian mechanism (Balle & Wang 2018): the smallest sigma with
//   Phi(Δ/(2σ) - εσ/Δ) - e^ε Phi(-Δ/(2σ) - εσ/Δ) <= δ,
// found by bisection in log sigma. Check values at Δ = 1 (JME paper §1.5):
// σ(8, 1e-3) = 0.480014, σ(0.1, 1e-9) = 50.2098, σ(1, 1e-5) = 3.730632, σ(1, 1e-6) = 4.224679.
double analytic_gaussian_sigma(double l2_sensitivity, double epsilon, double delta);
// The delta of the continuous Gaussian mechanism with noise sigma at epsilon (= gdp_to_delta with
// mu = Δ/σ), epsilon >= 0.
double analytic_gaussian_delta(double l2_sensitivity, double sigma, double epsilon);

// The classic sigma = Δ sqrt(2 ln(1.25/δ)) / ε (Dwork & Roth Thm A.1). Proven only for ε < 1:
// throws InvalidArgument for ε >= 1 (docs/errata.md).
double classic_gaussian_sigma(double l2_sensitivity, double epsilon, double delta);

// sigma = Δ / sqrt(2 rho) for rho-zCDP.
double zcdp_gaussian_sigma(double l2_sensitivity, double rho);

// A rigorous upper bound on the delta(epsilon) of the 1-D discrete Gaussian N_Z(0, s^2) with
// integer sensitivity K (CKS20 Thm 7):
//   delta = P[Y > eps s^2/K - K/2] - e^eps P[Y > eps s^2/K + K/2],  Y ~ N_Z(0, s^2),
// where the discrete tail sums are summed explicitly near the threshold and the rest bounded by
// integrals (monotone integrand; midpoint/trapezoid bounds where it is convex), the normaliser by
// the Poisson-summation bound s sqrt(2 pi) <= Z <= s sqrt(2 pi) (1 + 2r/(1-r)), r = e^{-2 pi^2 s^2},
// plus a relative margin for floating-point error; the result is >= the exact delta. It is within
// ~1e-8 relative of the exact delta for s >= 0.8 when eps s / K >~ 1 (the usual regime); when
// eps s / K << 1 (delta close to the total variation distance) the quadrature bound on the far
// tail makes it looser, by up to ~1e-4 relative. K: an integer in [1, 2^52]; s > 0.
double discrete_gaussian_delta_upper(double epsilon, double K, double s);
// The smallest s (lattice units) with discrete_gaussian_delta_upper(epsilon, K, s) <= delta.
double discrete_gaussian_sigma(double K, double epsilon, double delta);

}  // namespace dpstats
