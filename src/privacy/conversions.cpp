// Conversions between privacy-loss notions. Every reported epsilon or delta is rounded in the
// conservative direction: floating-point error is bounded by an explicit relative margin (see
// `fp_margin`), so a reported epsilon or delta is never below the exact value.
#include "dpstats/privacy/conversions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <numbers>

#include "dpstats/error.hpp"

namespace dpstats {
namespace {

constexpr double kLogSqrt2Pi = 0.91893853320467274178;  // log(sqrt(2 pi))

// Relative error bound for a value computed as exp(L) (or a product of erfc/exp factors) whose
// exponent has magnitude `magnitude`: exp amplifies the absolute error of L (≈ |L| ulp) into a
// relative error; 1e-12 covers the few-ulp error of erfc/log1p/expm1 with a wide margin.
constexpr double kRelMargin = 1e-12;
double fp_margin(double magnitude) {
  return kRelMargin + 16 * DBL_EPSILON * (std::fabs(magnitude) + 1);
}

double round_up(double x) { return x + std::fabs(x) * 4 * DBL_EPSILON; }

struct Minimum {
  double t, value;
};

// Minimises a function of t over [lo, hi]: a coarse grid first (robust even if the function were
// not unimodal), then golden-section search between the neighbours of the best grid point.
template <class F>
Minimum minimise(F f, double lo, double hi) {
  constexpr int kGrid = 240;
  const double step = (hi - lo) / kGrid;
  Minimum best{lo, f(lo)};
  for (int i = 1; i <= kGrid; ++i) {
    const double t = lo + i * step;
    const double v = f(t);
    if (v < best.value) best = {t, v};
  }
  double a = std::max(lo, best.t - step), b = std::min(hi, best.t + step);
  const double g = (std::sqrt(5.0) - 1) / 2;
  double x1 = b - g * (b - a), x2 = a + g * (b - a);
  double f1 = f(x1), f2 = f(x2);
  for (int it = 0; it < 200 && b - a > 1e-13 * (1 + std::fabs(a)); ++it) {
    if (f1 < f2) {
      b = x2, x2 = x1, f2 = f1;
      x1 = b - g * (b - a), f1 = f(x1);
    } else {
      a = x1, x1 = x2, f1 = f2;
      x2 = a + g * (b - a), f2 = f(x2);
    }
  }
  // Any point gives a valid bound; report the smallest value seen.
  if (f1 < best.value) best = {x1, f1};
  if (f2 < best.value) best = {x2, f2};
  return best;
}

// The Rényi order is a = 1 + e^t; t ranges over a bracket wide enough for every rho in
// [1e-30, 1e30] and delta in [1e-300, 1).
constexpr double kTLo = -60, kTHi = 80;

// log(a) and log(1 - 1/a) for a = 1 + e^t, without cancellation.
double log_order(double t) { return t > 0 ? t + std::log1p(std::exp(-t)) : std::log1p(std::exp(t)); }

void check_rho(double rho) {
  require(std::isfinite(rho) && rho >= 0, fmt::format("rho must be a finite number >= 0, got {}", rho));
}

void check_mu(double mu) {
  require(std::isfinite(mu) && mu >= 0, fmt::format("mu must be a finite number >= 0, got {}", mu));
}

void check_epsilon_nonneg(double epsilon) {
  require(std::isfinite(epsilon) && epsilon >= 0,
          fmt::format("epsilon must be a finite number >= 0, got {}", epsilon));
}

}  // namespace

double normal_cdf(double x) {
  require(!std::isnan(x), "normal_cdf: x must not be NaN");
  return 0.5 * std::erfc(-x * std::numbers::sqrt2 / 2);
}

double standard_normal_quantile(double p) {
  require(p > 0 && p < 1, "standard_normal_quantile: p must be in (0, 1), got {}", format_number(p));
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double log_normal_cdf(double x) {
  require(!std::isnan(x), "log_normal_cdf: x must not be NaN");
  if (x > 0) return std::log1p(-0.5 * std::erfc(x * std::numbers::sqrt2 / 2));
  if (x >= -36) return std::log(0.5 * std::erfc(-x * std::numbers::sqrt2 / 2));
  if (std::isinf(x)) return -INFINITY;
  // Asymptotic (enveloping) series Phi(x) = phi(x)/|x| (1 - 1/x^2 + 3/x^4 - ...): for x < -36 the
  // first omitted term 10395/x^12 is below 3e-15.
  const double z = 1 / (x * x);
  const double series = 1 - z * (1 - 3 * z * (1 - 5 * z * (1 - 7 * z * (1 - 9 * z))));
  return -0.5 * x * x - std::log(-x) - kLogSqrt2Pi + std::log(series);
}

// ---------------------------------------------------------------- zCDP

double pure_to_zcdp(double epsilon) {
  check_epsilon_nonneg(epsilon);
  return round_up(epsilon * epsilon / 2);
}

double zcdp_to_epsilon(double rho, double delta) {
  check_rho(rho);
  check_delta_positive(delta);
  if (rho == 0) return 0;
  const double log_inv_delta = -std::log(delta);
  // With a = 1 + e^t: eps(a) = rho a + (log(1/delta) - log a) / (a - 1) + log(1 - 1/a), and
  // log(1 - 1/a) = -log1p(e^-t).
  auto terms = [&](double t) {
    const double e_t = std::exp(t);
    return std::array<double, 3>{rho * (1 + e_t), (log_inv_delta - log_order(t)) / e_t,
                                 -std::log1p(1 / e_t)};
  };
  auto eps_at = [&](double t) {
    const auto x = terms(t);
    return x[0] + x[1] + x[2];
  };
  const Minimum best = minimise(eps_at, kTLo, kTHi);
  // Rounding error of the sum at the chosen order: a few ulp of the terms' magnitudes.
  const auto x = terms(best.t);
  const double magnitude = std::fabs(x[0]) + std::fabs(x[1]) + std::fabs(x[2]);
  return std::max(0.0, best.value + kRelMargin * magnitude);
}

double zcdp_to_delta(double rho, double epsilon) {
  check_rho(rho);
  check_epsilon_nonneg(epsilon);
  if (rho == 0) return 0;
  // log delta(a) = (a-1)(a rho - eps) - log a + (a-1) log(1 - 1/a).
  auto terms = [&](double t) {
    const double e_t = std::exp(t);
    return std::array<double, 3>{e_t * ((1 + e_t) * rho - epsilon), -log_order(t),
                                 -e_t * std::log1p(1 / e_t)};
  };
  auto log_delta_at = [&](double t) {
    const auto x = terms(t);
    return x[0] + x[1] + x[2];
  };
  const Minimum best = minimise(log_delta_at, kTLo, kTHi);
  if (best.value >= 0) return 1;
  const auto x = terms(best.t);
  const double magnitude = std::fabs(x[0]) + std::fabs(x[1]) + std::fabs(x[2]);
  // The bound is positive; one that underflows is reported as the smallest positive double.
  return std::clamp(std::exp(best.value) * (1 + fp_margin(magnitude)), DBL_TRUE_MIN, 1.0);
}

namespace {
double epsilon_delta_to_zcdp_uncached(double epsilon, double delta) {
  check_epsilon(epsilon);
  check_delta_positive(delta);
  // epsilon <= rho + 2 sqrt(rho log(1/delta)) is sufficient (BS16 Prop. 1.3), so this rho is a
  // valid starting point of the bracket; the tight conversion allows more.
  const double L = -std::log(delta);
  const double root = epsilon / (std::sqrt(L + epsilon) + std::sqrt(L));
  double lo = root * root * (1 - 1e-9);
  if (lo == 0) return 0;  // epsilon so small that rho underflows: rho = 0 is the valid answer
  while (zcdp_to_epsilon(lo, delta) > epsilon) lo /= 2;  // never more than once or twice
  double hi = lo * 2;
  while (zcdp_to_epsilon(hi, delta) <= epsilon) lo = hi, hi *= 2;
  for (int it = 0; it < 200 && hi - lo > 1e-13 * lo; ++it) {
    const double mid = std::sqrt(lo * hi);
    (zcdp_to_epsilon(mid, delta) <= epsilon ? lo : hi) = mid;
  }
  return lo;  // verified: zcdp_to_epsilon(lo, delta) <= epsilon
}
}  // namespace

// A bisection over zcdp_to_epsilon (~1 ms); callers that fit repeatedly at one budget (audits,
// studies, training loops) ask for the same value again, so the last answer is kept per thread.
double epsilon_delta_to_zcdp(double epsilon, double delta) {
  thread_local bool cached = false;
  thread_local double last_epsilon = 0, last_delta = 0, last_rho = 0;
  if (!cached || epsilon != last_epsilon || delta != last_delta) {
    last_rho = epsilon_delta_to_zcdp_uncached(epsilon, delta);  // validates first
    last_epsilon = epsilon;
    last_delta = delta;
    cached = true;
  }
  return last_rho;
}

// ---------------------------------------------------------------- GDP

double gdp_to_delta(double mu, double epsilon) {
  check_mu(mu);
  check_epsilon_nonneg(epsilon);
  if (mu == 0) return 0;
  const double a = mu / 2 - epsilon / mu;
  const double b = -mu / 2 - epsilon / mu;
  // delta = Phi(a) - e^eps Phi(b); the second term in log space so that e^eps never overflows.
  // For mu > 0 the exact delta is positive: a bound that underflows is reported as the smallest
  // positive double.
  const double log_first = log_normal_cdf(a);
  if (log_first == -INFINITY) return DBL_TRUE_MIN;
  const double log_second = epsilon + log_normal_cdf(b);
  // Upper bound: inflate the first term, deflate the second, each by its rounding margin (the
  // relative error of erfc in the lower tail grows like x^2 ulp; exp(L) adds |L| ulp).
  const double hi_first = log_first + fp_margin((a < 0 ? a * a : 0) + std::fabs(log_first));
  const double lo_second = log_second - fp_margin(b * b + epsilon + std::fabs(log_second));
  if (lo_second >= hi_first) return DBL_TRUE_MIN;
  const double delta = std::exp(hi_first) * -std::expm1(lo_second - hi_first);
  return std::clamp(delta, DBL_TRUE_MIN, 1.0);
}

double gdp_to_epsilon(double mu, double delta) {
  check_mu(mu);
  check_delta_positive(delta);
  if (gdp_to_delta(mu, 0) <= delta) return 0;
  double lo = 0, hi = std::max(1.0, mu * mu);
  while (gdp_to_delta(mu, hi) > delta) lo = hi, hi *= 2;
  for (int it = 0; it < 200 && hi - lo > 1e-13 * hi; ++it) {
    const double mid = (lo + hi) / 2;
    (gdp_to_delta(mu, mid) > delta ? lo : hi) = mid;
  }
  return hi;  // verified: gdp_to_delta(mu, hi) <= delta
}

double epsilon_delta_to_gdp(double epsilon, double delta) {
  check_epsilon(epsilon);
  check_delta_positive(delta);
  // gdp_to_delta is increasing in mu; bracket the largest mu with delta(mu) <= delta.
  double lo = 1, hi = 1;
  if (gdp_to_delta(lo, epsilon) > delta) {
    while (gdp_to_delta(lo, epsilon) > delta) hi = lo, lo /= 2;
  } else {
    while (gdp_to_delta(hi, epsilon) <= delta) lo = hi, hi *= 2;
  }
  for (int it = 0; it < 200 && hi - lo > 1e-13 * lo; ++it) {
    const double mid = (lo + hi) / 2;
    (gdp_to_delta(mid, epsilon) <= delta ? lo : hi) = mid;
  }
  return lo;  // verified: gdp_to_delta(lo, epsilon) <= delta
}

}  // namespace dpstats
