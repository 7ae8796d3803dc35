// Splitting a share over k pure-DP calls, and all-or-nothing charging (share.hpp).
#include "dpstats/scale/share.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"

namespace dpstats {

void check_share(const PrivacyLoss& share, std::string_view name) {
  if (share.kind == LossKind::pure) {
    check_epsilon(share.epsilon, fmt::format("{}.epsilon", name));
  } else if (share.kind == LossKind::zcdp) {
    check_positive(share.rho, fmt::format("{}.rho", name));
    require(share.delta == 0, "{}.delta must be 0 for a zcdp share, got {}", name,
            format_number(share.delta));
  } else {
    throw InvalidArgument(fmt::format(
        "{} must be a pure epsilon or a zcdp rho share, got a {} loss ({}); convert an "
        "(epsilon, delta) total to rho with epsilon_delta_to_zcdp first",
        name, to_string(share.kind), share.describe()));
  }
}

double per_call_epsilon(const PrivacyLoss& share, std::size_t calls) {
  check_share(share);
  require(calls >= 1, "calls must be >= 1, got {}", calls);
  const double k = static_cast<double>(calls);
  double e = share.kind == LossKind::pure ? share.epsilon / k
                                          : std::sqrt(2 * share.rho / k) * (1 - 0x1p-39);
  // Round down until k calls compose within the share exactly: fma gives the sign of
  // e k - epsilon without rounding; for rho, e^2/2 k is checked with a relative margin of 2^-40
  // over its rounding (a few ulps).
  if (share.kind == LossKind::pure) {
    while (e > 0 && std::fma(e, k, -share.epsilon) > 0) e = std::nextafter(e, 0.0);
  } else {
    while (e > 0 && e * e / 2 * k * (1 + 0x1p-40) > share.rho) e = std::nextafter(e, 0.0);
  }
  require(e > 0, "the share {} is too small for {} calls", share.describe(), calls);
  return e;
}

double units_epsilon(const PrivacyLoss& share, std::size_t units, std::size_t total) {
  check_share(share);
  require(units >= 1 && units <= total, "units must be in [1, total = {}], got {}", total, units);
  const double part = static_cast<double>(units) / static_cast<double>(total) * (1 - 0x1p-45);
  return share.kind == LossKind::pure ? per_call_epsilon(PrivacyLoss::pure(share.epsilon * part), 1)
                                      : per_call_epsilon(PrivacyLoss::zcdp(share.rho * part), 1);
}

}  // namespace dpstats
