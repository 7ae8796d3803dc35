#include "dpstats/synthetic/shifted_cluster.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <utility>

#include "dpstats/error.hpp"

namespace dpstats {

RowMatrix shifted_cluster(std::int64_t n, std::int64_t d, double alpha, double shift, Rng& rng) {
  require(n >= 1 && d >= 1, fmt::format("n and d must be >= 1, got n = {}, d = {}", n, d));
  require(alpha >= 0 && alpha < 0.5, fmt::format("alpha must be in [0, 0.5), got {}", alpha));
  check_finite(shift, "shift");
  RowMatrix X(n, d);
  const auto bad = static_cast<std::int64_t>(std::floor(alpha * static_cast<double>(n)));
  for (std::int64_t i = 0; i < n; ++i) {
    const double centre = i < bad ? shift : 0.0;
    for (std::int64_t j = 0; j < d; ++j) X(i, j) = centre + standard_normal(rng);
  }
  for (std::int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates over rows
    const auto k = static_cast<std::int64_t>(rng.uniform_below(static_cast<std::uint64_t>(i + 1)));
    if (k != i) X.row(i).swap(X.row(k));
  }
  return X;
}

}  // namespace dpstats
