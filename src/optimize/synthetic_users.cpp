#include "dpstats/optimize/synthetic_users.hpp"

#include <cmath>

#include "dpstats/data/synthetic.hpp"

namespace dpstats::optimize {

Vector make_w_star(const UserTask& t, Rng& rng) {
  Vector w(t.d);
  for (auto& v : w) v = standard_normal(rng);
  return w * (t.w_norm / w.norm());
}

UserDataset make_user_task(const UserTask& t, const Vector& w_star, Rng& rng) {
  const std::int64_t N = t.n * t.m;
  RowMatrix X(N, t.d);
  Vector y(N);
  const double sd = 1 / std::sqrt(static_cast<double>(t.d));
  for (std::int64_t u = 0; u < t.n; ++u) {
    const double scale = 1 - t.scale_spread + 2 * t.scale_spread * rng.uniform01();
    Vector w = w_star;
    if (t.heterogeneity > 0)
      for (auto& v : w) v += t.heterogeneity * sd * standard_normal(rng);
    const bool adversary = u < t.adversaries;
    for (std::int64_t k = 0; k < t.m; ++k) {
      const std::int64_t i = u * t.m + k;
      for (std::int64_t j = 0; j < t.d; ++j) X(i, j) = sd * standard_normal(rng);
      const double norm = X.row(i).norm();
      if (norm > 1) X.row(i) /= norm;
      X.row(i) *= scale;
      const double z = X.row(i).dot(w);
      if (t.squared) {
        y[i] = z + (2 * rng.uniform01() - 1);
      } else {
        y[i] = rng.uniform01() < 1 / (1 + std::exp(-z)) ? 1.0 : -1.0;
      }
      if (adversary) {
        y[i] = -y[i];
        X.row(i) *= 100;
      }
    }
  }
  return UserDataset(std::move(X), std::move(y), t.m, 1 + t.scale_spread,
                     t.squared ? (1 + t.scale_spread) * t.w_norm + 1 : 1.0);
}

}  // namespace dpstats::optimize
