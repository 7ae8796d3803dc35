#include "dpstats/synthetic/gaussian_cluster.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "dpstats/synthetic/shifted_cluster.hpp"
#include "dpstats/error.hpp"

namespace dpstats {

Vector unit_sphere_point(std::int64_t d, Rng& rng) {
  Vector g(d);
  double norm = 0;
  do {
    for (std::int64_t j = 0; j < d; ++j) g[j] = standard_normal(rng);
    norm = g.norm();
  } while (norm == 0);
  return g / norm;
}

RowMatrix gaussian_cluster(double R, std::int64_t n, std::int64_t d, double sigma, double frac_in,
                           Rng& rng, Vector* centre) {
  require(n >= 1 && d >= 1, fmt::format("n and d must be >= 1, got n = {}, d = {}", n, d));
  check_positive(R, "R");
  require(sigma >= 0 && std::isfinite(sigma), fmt::format("sigma must be >= 0, got {}", sigma));
  require(frac_in >= 0 && frac_in <= 1, fmt::format("frac_in must be in [0, 1], got {}", frac_in));
  const Vector mu = unit_sphere_point(d, rng) * (R / 2);
  if (centre) *centre = mu;
  const auto n_in = static_cast<std::int64_t>(std::floor(frac_in * static_cast<double>(n)));
  RowMatrix X(n, d);
  for (std::int64_t i = 0; i < n_in; ++i)
    for (std::int64_t j = 0; j < d; ++j) X(i, j) = mu[j] + sigma * standard_normal(rng);
  for (std::int64_t i = n_in; i < n; ++i) {
    const double radius = R * std::pow(rng.uniform01(), 1.0 / static_cast<double>(d));
    X.row(i) = unit_sphere_point(d, rng).transpose() * radius;
  }
  return X;
}

double gamma_draw(double shape, Rng& rng) {
  check_positive(shape, "shape");
  if (shape < 1) {  // boost: Gamma(a) = Gamma(a + 1) · U^(1/a)
    const double u = 1.0 - rng.uniform01();
    return gamma_draw(shape + 1, rng) * std::pow(u, 1.0 / shape);
  }
  const double dd = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * dd);
  for (;;) {
    double x, v;
    do {
      x = standard_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = 1.0 - rng.uniform01();
    if (std::log(u) < 0.5 * x * x + dd - dd * v + dd * std::log(v)) return dd * v;
  }
}

RowMatrix heavy_tailed(double nu, std::int64_t n, std::int64_t d, Rng& rng) {
  require(n >= 1 && d >= 1, fmt::format("n and d must be >= 1, got n = {}, d = {}", n, d));
  check_positive(nu, "nu");
  RowMatrix X(n, d);
  for (std::int64_t i = 0; i < n; ++i) {
    const double w = 2.0 * gamma_draw(nu / 2.0, rng);  // χ²_ν
    const double s = 1.0 / std::sqrt(w / nu);
    for (std::int64_t j = 0; j < d; ++j) X(i, j) = standard_normal(rng) * s;
  }
  return X;
}

namespace {

// Continued fraction for I_x(a, b) (modified Lentz), valid for x < (a + 1)/(a + b + 2).
double beta_cf(double x, double a, double b) {
  const double tiny = 1e-300;
  double c = 1, dd = 1 - (a + b) * x / (a + 1);
  if (std::abs(dd) < tiny) dd = tiny;
  dd = 1 / dd;
  double h = dd;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    dd = 1 + aa * dd;
    if (std::abs(dd) < tiny) dd = tiny;
    c = 1 + aa / c;
    if (std::abs(c) < tiny) c = tiny;
    dd = 1 / dd;
    h *= dd * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    dd = 1 + aa * dd;
    if (std::abs(dd) < tiny) dd = tiny;
    c = 1 + aa / c;
    if (std::abs(c) < tiny) c = tiny;
    dd = 1 / dd;
    const double del = dd * c;
    h *= del;
    if (std::abs(del - 1) < 1e-16) break;
  }
  return h;
}

}  // namespace

double regularized_incomplete_beta(double x, double a, double b) {
  check_positive(a, "a");
  check_positive(b, "b");
  require(x >= 0 && x <= 1, fmt::format("x must be in [0, 1], got {}", x));
  if (x == 0 || x == 1) return x;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                           a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_cf(x, a, b) / a;
  return 1 - std::exp(log_front) * beta_cf(1 - x, b, a) / b;
}

double fisher_f_cdf(double x, double d1, double d2) {
  check_positive(d1, "d1");
  check_positive(d2, "d2");
  if (x <= 0) return 0;
  if (!std::isfinite(x)) return 1;
  return regularized_incomplete_beta(d1 * x / (d1 * x + d2), d1 / 2, d2 / 2);
}

double fisher_f_quantile(double p, double d1, double d2) {
  require(p > 0 && p < 1, fmt::format("p must be in (0, 1), got {}", p));
  double lo = 0, hi = 1;
  while (fisher_f_cdf(hi, d1, d2) < p) {
    hi *= 2;
    require(std::isfinite(hi), "fisher_f_quantile: quantile too large");
  }
  for (int it = 0; it < 200 && hi - lo > 4 * std::numeric_limits<double>::epsilon() * hi; ++it) {
    const double mid = (lo + hi) / 2;
    (fisher_f_cdf(mid, d1, d2) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace dpstats
