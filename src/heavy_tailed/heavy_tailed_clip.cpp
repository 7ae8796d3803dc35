#include "dpstats/heavy_tailed/heavy_tailed_clip.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/quantile.hpp"

namespace dpstats::optimize {

double clip_tail_fraction(std::int64_t m, std::int64_t d, double epsilon, double c_p) {
  require(m >= 1 && d >= 1, "clip_tail_fraction: m and d must be >= 1");
  check_epsilon(epsilon);
  check_positive(c_p, "clip_tail_constant");
  return std::min(0.5, c_p * std::sqrt(static_cast<double>(d) / (static_cast<double>(m) * epsilon)));
}

GradientNormQuantile gradient_norm_grid(std::int64_t m, std::int64_t d, double epsilon, double G_k,
                                        double k, double G_2) {
  GradientNormQuantile q;
  q.lower = G_2 / 256;
  q.upper = std::max(2 * G_k * std::pow(static_cast<double>(m) * epsilon / static_cast<double>(d), 1 / k),
                     2 * q.lower);
  return q;
}

PrivateClip private_gradient_norm_clip(const RowMatrix& X, const Vector& y, std::int64_t begin,
                                       std::int64_t m, const GlmEnvelope& env, const Vector& w,
                                       const GradientNormQuantile& q, Rng& rng) {
  require(m >= 1 && begin >= 0 && begin + m <= X.rows(),
          fmt::format("rows [{}, {}) are not inside the data ({} rows)", begin, begin + m, X.rows()));
  require(q.tail > 0 && q.tail < 1, fmt::format("clip tail fraction must be in (0, 1), got {}", q.tail));
  require(q.lower > 0 && q.lower < q.upper && std::isfinite(q.upper),
          fmt::format("clip grid must satisfy 0 < lower < upper < inf, got [{}, {}]", q.lower, q.upper));
  // Quantile of log-norms on an evenly spaced log grid = a log-spaced grid of norms. Clamping to
  // the public range is per record, so the rank quality keeps sensitivity 1.
  QuantileOptions o;
  o.q = 1 - q.tail;
  o.lower = std::log(q.lower);
  o.upper = std::log(q.upper);
  o.candidates = q.candidates;
  o.epsilon = q.epsilon;
  std::vector<double> logs(static_cast<std::size_t>(m));
  const double inf = std::numeric_limits<double>::infinity();
  for (std::int64_t i = 0; i < m; ++i) {
    const auto row = X.row(begin + i);
    const double g = std::fabs(env.derivative(row.dot(w), y[begin + i], inf)) * row.norm();
    logs[static_cast<std::size_t>(i)] =
        std::log(std::clamp(std::isfinite(g) ? g : q.upper, q.lower, q.upper));
  }
  PrivateClip out;
  out.clip = std::exp(private_quantile(logs, o, rng));
  out.entry = gradient_norm_clip_entry(q);
  return out;
}

LedgerEntry gradient_norm_clip_entry(const GradientNormQuantile& q) {
  return private_quantile_entry(q.epsilon, "final-phase clip: (1 - p)-quantile of gradient norms");
}

}  // namespace dpstats::optimize
