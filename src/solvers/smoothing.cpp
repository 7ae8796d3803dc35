#include "dpstats/solvers/smoothing.hpp"

#include <cmath>

#include "dpstats/random/float_normal.hpp"
#include "dpstats/error.hpp"

namespace dpstats::optimize {

namespace {
// Uniform in the open interval (0, 1).
double open_uniform(Rng& rng) {
  double u = 0;
  while (u == 0) u = rng.uniform01();
  return u;
}
}  // namespace

Vector sample_ball(std::int64_t d, double r, Rng& rng) {
  require(d >= 1, "ball dimension must be >= 1");
  require(r >= 0 && std::isfinite(r), "ball radius must be finite and >= 0");
  Vector g(d);
  double norm = 0;
  while (norm == 0) {
    for (std::int64_t i = 0; i < d; ++i) g[i] = dpstats::standard_normal(rng);
    norm = g.norm();
  }
  const double radius = r * std::pow(open_uniform(rng), 1.0 / static_cast<double>(d));
  return g * (radius / norm);
}

Vector smoothed_user_mean_gradient(const UserDataset& data, const Loss& loss, const Vector& x,
                                   std::int64_t user, double r, Rng& rng,
                                   GradientCounter& counter) {
  const std::int64_t m = data.items_per_user();
  Vector g = Vector::Zero(x.size());
  Vector point(x.size());
  for (std::int64_t k = 0; k < m; ++k) {
    point = x;
    if (r > 0) point += sample_ball(x.size(), r, rng);
    loss.add_gradient(point, data.features(user, k), data.label(user, k), 1.0, g, counter);
  }
  return g / static_cast<double>(m);
}

}  // namespace dpstats::optimize
