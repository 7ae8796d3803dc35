// Noise calibration. Every scale is rounded up: a returned scale is never below the exact answer
// (divisions are corrected with an exact fma residual; iterative searches return the verified end
// of their bracket; floating-point error in the delta formulas is bounded by explicit margins).
#include "dpstats/privacy/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numbers>

#include "dpstats/error.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats {
namespace {

constexpr double kLogSqrt2Pi = 0.91893853320467274178;  // log(sqrt(2 pi))

// Relative error bound for exp(L)-type quantities whose exponents have total magnitude
// `magnitude` (see conversions.cpp).
double fp_margin(double magnitude) { return 1e-12 + 16 * DBL_EPSILON * (std::fabs(magnitude) + 1); }

// a / b rounded up (a, b > 0): the fma residual q*b - a is exact in sign.
double div_up(double a, double b) {
  const double q = a / b;
  return std::fma(q, b, -a) < 0 ? std::nextafter(q, INFINITY) : q;
}

// A few-ulp upward correction for a value computed by several correctly rounded operations.
double round_up(double x) { return x * (1 + 8 * DBL_EPSILON); }

void check_sensitivity(double s, const char* name) { check_positive(s, name); }

// ---- discrete Gaussian tails (CKS20 Thm 7) ----
// f(y) = exp(-y^2 / (2 s^2)); all sums below are divided by s sqrt(2 pi), so that the continuous
// tail integral is the normal survival function Q.

struct LogBounds {
  double lo, hi;
};

// log Q(x) = log P[N(0,1) > x].
double log_q(double x) { return log_normal_cdf(-x); }

// Bounds on log( sum_{y >= m} f(y) / (s sqrt(2 pi)) ) for an integer m >= 0.
// Terms y = m .. M-1 are summed explicitly (f is decreasing on [0, inf)) until f is convex (y >= s)
// and the terms are negligible, or 8192 of them; the remainder from M on is bounded by integrals:
// where f is convex, by the midpoint and trapezoid rules,
//   f(M)/2 + int_M^inf f <= sum_{y>=M} f(y) <= int_{M-1/2}^inf f,
// otherwise by monotonicity,  int_M^inf f <= sum <= f(M) + int_M^inf f.
LogBounds log_tail_sum(double m, double s) {
  const double two_s2 = 2 * s * s;
  const double log_ref = -m * m / two_s2 - std::log(s) - kLogSqrt2Pi;  // log f(m)/(s sqrt(2 pi))
  const double to_convex = m < s + 1 ? std::min(8192.0, std::ceil(s + 1 - m)) : 0;
  const long n_max = static_cast<long>(std::min(8192.0, to_convex + 4096));
  const long n_min = static_cast<long>(to_convex) + 16;
  double sum = 0;  // sum of f(y) / f(m) for y in [m, M)
  long n = 0;
  while (n < n_max) {
    const double di = static_cast<double>(n);
    const double term = std::exp(-di * (2 * m + di) / two_s2);
    sum += term;
    ++n;
    if (n >= n_min && term < 1e-18 * sum) break;
  }
  const double M = m + static_cast<double>(n);
  auto rel = [&](double log_value) { return std::exp(log_value - log_ref); };
  const double log_fM = -M * M / two_s2 - std::log(s) - kLogSqrt2Pi;
  double rem_hi, rem_lo;
  if (M - 0.5 >= s) {
    rem_hi = rel(log_q((M - 0.5) / s));
    rem_lo = rel(log_fM) / 2 + rel(log_q(M / s));
  } else {
    rem_hi = rel(log_fM) + rel(log_q(M / s));
    rem_lo = rel(log_q(M / s));
  }
  const double x = M / s;
  const double margin = fp_margin(std::fabs(log_ref) + x * x + static_cast<double>(n));
  return {log_ref + std::log(sum + rem_lo) - margin, log_ref + std::log(sum + rem_hi) + margin};
}

// Bounds on log P[Y >= m], Y ~ N_Z(0, s^2), for any integer m. By Poisson summation the
// normaliser is Z = sum_y f(y) = s sqrt(2 pi) sum_{k in Z} r^{k^2}, r = e^{-2 pi^2 s^2}, so
// s sqrt(2 pi) (1 + 2r) <= Z <= s sqrt(2 pi) (1 + 2r/(1-r))  (all terms positive; k^2 >= k).
LogBounds log_prob_at_least(double m, double s) {
  const double c = 2 * std::numbers::pi * std::numbers::pi * s * s;
  const double r = std::exp(-c);
  const double log_z_lo = std::log1p(2 * r) * (1 - 4 * DBL_EPSILON);
  const double log_z_hi = std::log1p(2 * r / -std::expm1(-c)) * (1 + 4 * DBL_EPSILON);
  if (m >= 0) {
    const LogBounds t = log_tail_sum(m, s);
    return {t.lo - log_z_hi, t.hi - log_z_lo};
  }
  // P[Y >= m] = 1 - P[Y <= m - 1] = 1 - P[Y >= 1 - m] by symmetry.
  const LogBounds t = log_tail_sum(1 - m, s);
  const double margin = fp_margin(0);
  const double upper_tail_hi = t.hi - log_z_lo;
  const double lo = upper_tail_hi < 0 ? std::log1p(-std::exp(upper_tail_hi)) - margin : -INFINITY;
  const double hi = std::log1p(-std::exp(t.lo - log_z_hi)) + margin;
  return {lo, std::min(hi, 0.0)};
}

}  // namespace

double laplace_scale(double l1_sensitivity, double epsilon) {
  check_sensitivity(l1_sensitivity, "l1_sensitivity");
  check_epsilon(epsilon);
  return div_up(l1_sensitivity, epsilon);
}

double analytic_gaussian_delta(double l2_sensitivity, double sigma, double epsilon) {
  check_sensitivity(l2_sensitivity, "l2_sensitivity");
  check_positive(sigma, "sigma");
  require(std::isfinite(epsilon) && epsilon >= 0,
          fmt::format("epsilon must be a finite number >= 0, got {}", epsilon));
  // The delta depends on mu = Δ/σ only and increases with it: round mu up.
  return gdp_to_delta(div_up(l2_sensitivity, sigma), epsilon);
}

double analytic_gaussian_sigma(double l2_sensitivity, double epsilon, double delta) {
  check_sensitivity(l2_sensitivity, "l2_sensitivity");
  check_epsilon(epsilon);
  check_delta_positive(delta);
  // The largest mu = Δ/σ with delta(mu) <= delta (bisection, verified end), then σ = Δ/mu rounded
  // up by a few ulps so that analytic_gaussian_delta(Δ, σ, ε), which rounds Δ/σ up, is <= delta.
  const double mu = epsilon_delta_to_gdp(epsilon, delta);
  return round_up(div_up(l2_sensitivity, mu));
}

double classic_gaussian_sigma(double l2_sensitivity, double epsilon, double delta) {
  check_sensitivity(l2_sensitivity, "l2_sensitivity");
  check_epsilon(epsilon);
  check_delta_positive(delta);
  require(epsilon < 1,
          fmt::format("epsilon must be < 1 for the classic Gaussian mechanism (Dwork & Roth Thm A.1), "
                      "got {}; use analytic_gaussian_sigma for epsilon >= 1",
                      epsilon));
  return round_up(l2_sensitivity * std::sqrt(2 * std::log(1.25 / delta)) / epsilon);
}

double zcdp_gaussian_sigma(double l2_sensitivity, double rho) {
  check_sensitivity(l2_sensitivity, "l2_sensitivity");
  check_positive(rho, "rho");
  return round_up(l2_sensitivity / std::sqrt(2 * rho));
}

double discrete_gaussian_delta_upper(double epsilon, double K, double s) {
  check_epsilon(epsilon);
  require(std::isfinite(K) && K >= 1 && K == std::floor(K) && K <= 0x1p52,
          fmt::format("K must be an integer in [1, 2^52], got {}", K));
  check_positive(s, "s");
  // delta = max over integers T of P[Y >= T] - e^eps P[Y >= T + K], attained at T* = the smallest
  // integer > a = eps s^2/K - K/2 (any T gives a lower bound, the hockey-stick divergence of the
  // set {y >= T}). The computed a carries a rounding error of a few ulp of its magnitude, so every
  // integer T that can be T* is tried and the largest upper bound is returned.
  const double c = epsilon * s * s / K;
  const double a = c - K / 2;
  const double err = 8 * DBL_EPSILON * (std::fabs(c) + K);
  const double t_lo = std::floor(a - err) + 1, t_hi = std::floor(a + err) + 1;
  double delta = 0;
  for (double t = t_lo; t <= t_hi; t += 1) {
    const double log_first = log_prob_at_least(t, s).hi;
    const double log_second_raw = epsilon + log_prob_at_least(t + K, s).lo;
    const double log_second =
        log_second_raw - 4 * DBL_EPSILON * (epsilon + std::fabs(log_second_raw));
    if (log_first == -INFINITY || log_second >= log_first) continue;
    // A positive bound that underflows is reported as the smallest positive double.
    delta = std::max({delta, std::exp(log_first) * -std::expm1(log_second - log_first),
                      DBL_TRUE_MIN});
  }
  return std::min(1.0, round_up(delta));
}

double discrete_gaussian_sigma(double K, double epsilon, double delta) {
  require(std::isfinite(K) && K >= 1 && K == std::floor(K) && K <= 0x1p52,
          fmt::format("K must be an integer in [1, 2^52], got {}", K));
  check_epsilon(epsilon);
  check_delta_positive(delta);
  // Start from the continuous answer, which the discrete one approaches for large s.
  const double s0 = K * analytic_gaussian_sigma(1, epsilon, delta);
  double lo = s0 / 2, hi = s0 * 1.01;
  while (discrete_gaussian_delta_upper(epsilon, K, lo) <= delta) hi = lo, lo /= 2;
  while (discrete_gaussian_delta_upper(epsilon, K, hi) > delta) lo = hi, hi *= 2;
  for (int it = 0; it < 200 && hi - lo > 1e-12 * lo; ++it) {
    const double mid = std::sqrt(lo * hi);
    (discrete_gaussian_delta_upper(epsilon, K, mid) > delta ? lo : hi) = mid;
  }
  return hi;  // verified: discrete_gaussian_delta_upper(epsilon, K, hi) <= delta
}

}  // namespace dpstats
