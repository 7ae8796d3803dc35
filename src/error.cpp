#include "dpstats/error.hpp"

#include <fmt/format.h>

namespace dpstats {

std::string format_number(double x) { return fmt::format("{}", x); }

void check_epsilon(double epsilon, std::string_view name) {
  require(std::isfinite(epsilon) && epsilon > 0,
          fmt::format("{} must be a finite number > 0, got {}", name, epsilon));
}

void check_delta(double delta, std::string_view name) {
  require(std::isfinite(delta) && delta >= 0 && delta < 1,
          fmt::format("{} must be in [0, 1), got {}", name, delta));
}

void check_delta_positive(double delta, std::string_view name) {
  require(std::isfinite(delta) && delta > 0 && delta < 1,
          fmt::format("{} must be in (0, 1), got {}", name, delta));
}

void check_positive(double x, std::string_view name) {
  require(std::isfinite(x) && x > 0, fmt::format("{} must be a finite number > 0, got {}", name, x));
}

void check_finite(double x, std::string_view name) {
  require(std::isfinite(x), fmt::format("{} must be finite, got {}", name, x));
}

}  // namespace dpstats
