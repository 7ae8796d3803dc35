#include "dpstats/mechanisms/bounded_laplace.hpp"

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/draw_log.hpp"
#include "dpstats/random/discrete_laplace.hpp"

namespace dpstats {
namespace {

// P(|xi| > tau - K) / P(|xi| <= tau) with P(|xi| >= m) = 2a^m/(1+a), a = e^(-1/t).
double bounded_delta(std::int64_t t, std::int64_t tau, std::int64_t sens) {
  const double tt = static_cast<double>(t);
  const double a = std::exp(-1 / tt);
  const double tail = 2 * std::exp(-static_cast<double>(tau - sens + 1) / tt) / (1 + a);
  const double outside = 2 * std::exp(-static_cast<double>(tau + 1) / tt) / (1 + a);
  return tail / (1 - outside) * (1 + 1e-9);
}

}  // namespace

BoundedLaplaceMechanism::BoundedLaplaceMechanism(std::int64_t scale, std::int64_t bound,
                                                 std::int64_t sensitivity)
    : scale_(scale), bound_(bound), sensitivity_(sensitivity) {
  require(scale >= 1 && scale < (std::int64_t{1} << 56),
          "bounded Laplace: scale must be in [1, 2^56), got {}", scale);
  require(sensitivity >= 1 && sensitivity < bound && bound < (std::int64_t{1} << 62),
          "bounded Laplace: need 1 <= sensitivity < bound < 2^62, got sensitivity {} and bound {}",
          sensitivity, bound);
  delta_ = bounded_delta(scale, bound, sensitivity);
}

std::int64_t BoundedLaplaceMechanism::noise(Rng& rng) const {
  const DiscreteLaplace lap(static_cast<std::uint64_t>(scale_), 1);
  DrawLog::note("bounded_laplace", static_cast<double>(scale_));
  std::int64_t xi = 0;
  do {  // the draw is independent of the data, so is the number of rejections
    xi = lap(rng);
  } while (xi > bound_ || xi < -bound_);
  return xi;
}

PrivacyLoss BoundedLaplaceMechanism::loss() const {
  const double eps = static_cast<double>(sensitivity_) / static_cast<double>(scale_);
  return PrivacyLoss::approximate(std::nextafter(eps, 2 * eps), delta_);
}

LedgerEntry BoundedLaplaceMechanism::ledger_entry(std::string purpose) const {
  return {"bounded_laplace", std::move(purpose), static_cast<double>(sensitivity_),
          static_cast<double>(scale_), loss(), 1};
}

}  // namespace dpstats
