#include "dpstats/privacy/target.hpp"

#include <cmath>

#include "dpstats/error.hpp"

namespace dpstats {

PrivacyLoss PrivacyTarget::loss() const {
  return delta == 0 ? PrivacyLoss::pure(epsilon) : PrivacyLoss::approximate(epsilon, delta);
}

void validate(const PrivacyTarget& t, DeltaRule rule) {
  require(t.epsilon != 0, "epsilon is required: the privacy-loss bound of this release, a number "
                          "> 0 (smaller is more private; 0.1 to 10 is usual)");
  check_epsilon(t.epsilon, "epsilon");
  if (rule == DeltaRule::positive) {
    require(t.delta != 0, "delta is required for this method (it adds Gaussian noise): a "
                          "probability in (0, 1), usually well below 1/n");
    check_delta_positive(t.delta, "delta");
  } else {
    check_delta(t.delta, "delta");
  }
}

}  // namespace dpstats
