// "What happened" (dp_accounting's events), kept apart from "how we count it" (Budget).
// One entry per mechanism call: its name, sensitivity, noise scale and privacy loss.
//
// Units. `sensitivity` and `noise_scale` are in the units of the values the mechanism adds noise
// to. When a driver runs a mechanism on an integer encoding of the released quantity (an exact
// clipped sum counts in steps of width / Q), it states how much of the released quantity one of
// those units is, in `output_per_unit` (in_output_units below); the JSON output then shows
// sensitivity and noise scale in the released quantity's units and the encoding's own numbers
// under "lattice" (docs/guide.md, "Reading a ledger").
#pragma once
#include <string>
#include <vector>

#include "dpstats/privacy/privacy_loss.hpp"

namespace dpstats {

// The noise one mechanism call drew, when an accountant can count the mechanism itself rather
// than its stated loss (docs/proofs/accounting.md §10). Filled only by the mechanism objects'
// ledger_entry functions; `none` for every other entry (and for budget files written before).
//  * gaussian: N(0, noise^2) per coordinate on a vector of l2 sensitivity `sensitivity`. With
//    `lattice`, the noise is the lattice Gaussian and noise / sensitivity is the multiplier z_c of
//    the continuous Gaussian it couples to (§9): counted as that Gaussian plus the coupling slack.
//  * laplace: continuous Laplace of scale `noise` on one coordinate of sensitivity `sensitivity`.
//  * discrete_laplace: P(x) ~ exp(-|x| / noise) on the integers, one coordinate, integer
//    (lattice) sensitivity `sensitivity`.
enum class NoiseKind { none, gaussian, laplace, discrete_laplace };
struct NoiseCurve {
  NoiseKind kind = NoiseKind::none;
  double noise = 0;
  double sensitivity = 0;
  bool lattice = false;
};
const char* to_string(NoiseKind k);

struct LedgerEntry {
  std::string mechanism;    // "laplace", "gaussian", "stability_histogram", ...
  std::string purpose;      // what the call released, in the algorithm's vocabulary
  double sensitivity = 0;   // in the norm the mechanism uses (l1 for Laplace, l2 for Gaussian)
  double noise_scale = 0;   // Laplace scale b, Gaussian sigma, ... (0 when not applicable)
  PrivacyLoss loss;
  int count = 1;            // identical calls folded into one entry
  double output_per_unit = 1;  // released-quantity units per unit of sensitivity / noise_scale
  NoiseCurve curve = {};       // the mechanism's own curve, when it has one (above)
};

// `entry` for a mechanism that runs on an encoding of the released quantity in which one unit is
// `output_per_unit` (> 0, finite) of it: e.g. width / (n Q) for a mean released from an exact
// sum of quantised values. Set at plan time, before the entry is charged.
LedgerEntry in_output_units(LedgerEntry entry, double output_per_unit);

using Ledger = std::vector<LedgerEntry>;

}  // namespace dpstats
