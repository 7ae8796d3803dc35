// "What happened" (dp_accounting's events), kept apart from "how we count it" (Budget).
// One entry per mechanism call: its name, sensitivity, noise scale and privacy loss.
#pragma once
#include <string>
#include <vector>

#include "dpstats/privacy/privacy_loss.hpp"

namespace dpstats {

struct LedgerEntry {
  std::string mechanism;    // "laplace", "gaussian", "stability_histogram", ...
  std::string purpose;      // what the call released, in the algorithm's vocabulary
  double sensitivity = 0;   // in the norm the mechanism uses (l1 for Laplace, l2 for Gaussian)
  double noise_scale = 0;   // Laplace scale b, Gaussian sigma, ... (0 when not applicable)
  PrivacyLoss loss;
  int count = 1;            // identical calls folded into one entry
};

using Ledger = std::vector<LedgerEntry>;

}  // namespace dpstats
