// "What happened" (dp_accounting's events), kept apart from "how we count it" (Budget).
// One entry per mechanism call: its name, sensitivity, noise scale and privacy loss.
//
// Units. `sensitivity` and `noise_scale` are in the units of the values the mechanism adds noise
// to. When a driver runs a mechanism on an integer encoding of the released quantity (an exact
// clipped sum counts in steps of width / Q), it states how much of the released quantity one of
// those units is, in `output_per_unit` (in_output_units below); the JSON output then shows
// sensitivity and noise scale in the released quantity's units and the encoding's own numbers
// under "lattice" (docs/guide.md, "Reading a ledger").
//
// A release's ledger is its plan (seam.hpp): every entry it charged before any noise, each the
// entry of the mechanism that draws it. A stage whose mechanism is built from an earlier stage's
// release (its clip or scale) is planned by a `reserved` entry of the same loss, which that
// mechanism's own entry replaces when the stage runs; one still reserved at seal never ran. A
// composite (privacy/composite.hpp) lists under `blocks` the entries of the mechanisms it ran
// (a parallel composite: one block per disjoint part of the data).
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
  double output_per_unit = 1;  // released-quantity units per unit of sensitivity / noise_scale
  // A release's ledger only (a Budget records neither): a planned charge whose mechanism is not
  // built yet (sensitivity and noise scale unknown); a composite's blocks (composite.hpp).
  bool reserved = false;
  std::vector<std::vector<LedgerEntry>> blocks;
};

// `entry` for a mechanism that runs on an encoding of the released quantity in which one unit is
// `output_per_unit` (> 0, finite) of it: e.g. width / (n Q) for a mean released from an exact
// sum of quantised values. Set at plan time, before the entry is charged.
LedgerEntry in_output_units(LedgerEntry entry, double output_per_unit);

using Ledger = std::vector<LedgerEntry>;

}  // namespace dpstats
