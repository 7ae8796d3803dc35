// Noise calibration: sensitivity and a target loss in, noise scale out.
#pragma once

namespace dpstats {

// Laplace scale b = Δ / ε for pure ε-DP.
double laplace_scale(double l1_sensitivity, double epsilon);

// Analytic Gaussian mechanism (Balle & Wang 2018): the smallest sigma with
//   Phi(Δ/(2σ) - εσ/Δ) - e^ε Phi(-Δ/(2σ) - εσ/Δ) <= δ,
// found by bisection in log sigma. Check values at Δ = 1 (card jme-continual-moments.md §1.5):
// σ(8, 1e-3) = 0.480014, σ(0.1, 1e-9) = 50.2098, σ(1, 1e-5) = 3.730632, σ(1, 1e-6) = 4.224679.
double analytic_gaussian_sigma(double l2_sensitivity, double epsilon, double delta);
// The delta of the continuous Gaussian mechanism with noise sigma at epsilon.
double analytic_gaussian_delta(double l2_sensitivity, double sigma, double epsilon);

// The classic sigma = Δ sqrt(2 ln(1.25/δ)) / ε (Dwork & Roth Thm A.1). Proven only for ε < 1:
// throws InvalidArgument for ε >= 1 (card prime-robust-private-mean.md pitfall 4.4).
double classic_gaussian_sigma(double l2_sensitivity, double epsilon, double delta);

// sigma = Δ / sqrt(2 rho) for rho-zCDP.
double zcdp_gaussian_sigma(double l2_sensitivity, double rho);

// A rigorous upper bound on the delta(epsilon) of the 1-D discrete Gaussian N_Z(0, s^2) with
// integer sensitivity K (CKS20 Thm 7):
//   delta = P[Y > eps s^2/K - K/2] - e^eps P[Y > eps s^2/K + K/2],  Y ~ N_Z(0, s^2),
// where the discrete tail sums are bounded by integrals (monotone integrand) and the normaliser
// by the Poisson-summation bound; the result is >= the exact delta.
double discrete_gaussian_delta_upper(double epsilon, double K, double s);
// The smallest s (lattice units) with discrete_gaussian_delta_upper(epsilon, K, s) <= delta.
double discrete_gaussian_sigma(double K, double epsilon, double delta);

}  // namespace dpstats
