// PrivacyTarget: the guarantee a caller asks one release to meet. epsilon has no default: a
// release without an explicit epsilon is an error, in the library as in the tool and Python.
#pragma once
#include "dpstats/privacy/privacy_loss.hpp"

namespace dpstats {

struct PrivacyTarget {
  double epsilon = 0;  // > 0, finite; 0 means "not given" and is refused
  double delta = 0;    // [0, 1); 0 asks for pure DP

  // pure(epsilon) when delta == 0, approximate(epsilon, delta) otherwise.
  PrivacyLoss loss() const;
};

enum class DeltaRule {
  any,       // delta in [0, 1)
  positive,  // delta in (0, 1): the method needs an approximate target (Gaussian noise)
};

// InvalidArgument naming epsilon or delta, its value and the valid range.
void validate(const PrivacyTarget& target, DeltaRule rule = DeltaRule::any);

}  // namespace dpstats
