#include "dpstats/random/float_normal.hpp"

#include <cmath>
#include <numbers>

namespace dpstats {

double standard_normal(Rng& rng) {
  const double u = 1.0 - rng.uniform01();  // (0, 1]
  const double v = rng.uniform01();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * v);
}

}  // namespace dpstats
