// Splitting a share of the caller's budget over k identical pure-DP selections
// (docs/proofs/scale.md §0). Charging goes through the seam's ReleaseBudget (all or nothing).
//
// A share is the PrivacyLoss the caller gives one scale estimate:
//  * pure epsilon: each of the k calls gets epsilon / k (basic composition);
//  * zcdp rho: each call gets the epsilon with epsilon^2 / 2 = rho / k (pure epsilon-DP is
//    epsilon^2/2-zCDP, and zCDP adds), the unit Budget's zcdp accountant counts it in.
// Other kinds (approximate, gdp) are refused: a caller converts its (epsilon, delta) total to a rho
// share first (privacy/conversions.hpp).
#pragma once
#include <cstddef>
#include <string_view>

#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"

namespace dpstats {

// Checks a share (kind pure or zcdp, positive and finite); `name` is the option's name.
void check_share(const PrivacyLoss& share, std::string_view name = "loss");

// The per-call epsilon of k pure-DP calls that together stay within `share` (rounded down).
double per_call_epsilon(const PrivacyLoss& share, std::size_t calls);

// The pure epsilon of one call that takes `units` of `share` split into `total` equal units
// (1 <= units <= total): pure, units/total of epsilon; zcdp, the epsilon with epsilon^2/2 =
// units/total of rho. Each is shrunk by 2^-45 before rounding down, so calls whose units add up
// to at most `total` compose within the share (basic or zCDP composition, docs/proofs/scale.md §0).
double units_epsilon(const PrivacyLoss& share, std::size_t units, std::size_t total);

}  // namespace dpstats
