#include "dpstats/privacy/target.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"

namespace dpstats {
namespace {

// The epsilon a release may target: below kMinEpsilon the noise exceeds what the lattice samplers
// can draw (their scale ~ sensitivity/epsilon must stay below 2^56 lattice steps, and epsilon^2
// must not underflow in the zCDP conversion); above kMaxEpsilon the release protects nothing
// (e^1000) and the conversions to rho overflow. Checked here, in every validate step, so a user
// sees this range, never an internal quantity (issue #21).
constexpr double kMinEpsilon = 1e-9;
constexpr double kMaxEpsilon = 1e3;

}  // namespace

PrivacyLoss PrivacyTarget::loss() const {
  return delta == 0 ? PrivacyLoss::pure(epsilon) : PrivacyLoss::approximate(epsilon, delta);
}

void validate(const PrivacyTarget& t, DeltaRule rule) {
  require(t.epsilon != 0, "epsilon must be > 0, got 0 or none (it is required: the privacy-loss "
                          "bound of this release; smaller is more private, 0.1 to 10 is usual)");
  check_epsilon(t.epsilon, "epsilon");
  require(t.epsilon >= kMinEpsilon && t.epsilon <= kMaxEpsilon,
          fmt::format("epsilon must be in [{}, {}], got {} (below, the noise would exceed what "
                      "the samplers can draw; above, the release would protect nothing)",
                      kMinEpsilon, kMaxEpsilon, t.epsilon));
  if (rule == DeltaRule::positive) {
    require(t.delta != 0, "delta is required for this method (it adds Gaussian noise): a "
                          "probability in (0, 1), usually well below 1/n");
    check_delta_positive(t.delta, "delta");
  } else {
    check_delta(t.delta, "delta");
  }
}

}  // namespace dpstats
