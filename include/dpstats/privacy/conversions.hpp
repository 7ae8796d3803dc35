// Exact conversions between privacy-loss notions. Every function validates its arguments and
// throws InvalidArgument naming the parameter. Results are rounded in the conservative direction:
// a reported epsilon or delta is never below the exact value (floating-point error is covered by an
// explicit relative margin of about 1e-12), a reported rho or mu never above it.
#pragma once

namespace dpstats {

// ---- zCDP (Bun & Steinke 2016) ----
// pure epsilon-DP implies (epsilon^2 / 2)-zCDP (BS16 Prop. 1.4).
double pure_to_zcdp(double epsilon);
// The tight conversion rho-zCDP -> (epsilon, delta)-DP (Canonne, Kamath & Steinke 2020, Prop. 12
// / Asoodeh et al. 2021):
//   epsilon = inf_{a > 1} rho*a + (log(1/delta) + (a-1) log(1 - 1/a) - log a) / (a - 1).
// The infimum over a is found on a log-scale grid of a - 1 refined by golden-section search; any
// a gives a valid epsilon. Check value: rho = 0.5, delta = 1e-5 -> epsilon ≈ 4.7284.
// rho >= 0, delta in (0, 1).
double zcdp_to_epsilon(double rho, double delta);
// The smallest delta for a given epsilon under the same bound:
//   delta = inf_{a > 1} exp((a-1)(a*rho - epsilon)) / a * (1 - 1/a)^(a-1).
double zcdp_to_delta(double rho, double epsilon);
// The largest rho with zcdp_to_epsilon(rho, delta) <= epsilon (bisection; the returned rho is
// verified to satisfy it). epsilon > 0, delta in (0, 1).
double epsilon_delta_to_zcdp(double epsilon, double delta);

// ---- mu-GDP (Dong, Roth & Su 2019) ----
// Exact: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (second term in log space).
// mu >= 0, epsilon >= 0.
double gdp_to_delta(double mu, double epsilon);
// The smallest epsilon >= 0 with gdp_to_delta(mu, epsilon) <= delta.
double gdp_to_epsilon(double mu, double delta);
// The largest mu with gdp_to_delta(mu, epsilon) <= delta.
double epsilon_delta_to_gdp(double epsilon, double delta);

// Standard normal CDF, accurate in both tails (via erfc).
double normal_cdf(double x);
// Its inverse: the x with Phi(x) = p, p in (0, 1) (bisection to double precision; for public
// constants such as a confidence level's z, never for data).
double standard_normal_quantile(double p);
// log Phi(x), accurate for every x (erfc down to x = -36, the asymptotic series below).
double log_normal_cdf(double x);

}  // namespace dpstats
