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
#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>

#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/scale/reliability.hpp"

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

// The share an estimate of a public parameter takes when the caller gives none (issue 27 finding
// 2; docs/proofs/scale.md §9). `usable_at(s)` is the rule's verdict (reliability.hpp) on the
// estimate's rank errors when it is planned with share s of the budget: a function of public
// values only (n, d, epsilon, delta, the method), never of the data, and monotone (a larger share
// never has a larger rank error). The share is the smallest one whose verdict is usable, times
// `margin`, within [floor, cap]; when even `cap` is not usable the release abstains before
// anything is charged, with the cap's reason (the rows, the epsilon or the public option that
// would suffice). In a dry run the estimates are noted at the cap: the n at which the plan finds a
// usable share is the release's threshold (dry_run.hpp, note_checks_settled).
struct SharePolicy {
  double floor = 0.1;   // never below this (the fixed default before plans: large tables keep it)
  double cap = 0.5;     // never above this (the rest of the budget is the release's own)
  double margin = 2;    // the share chosen is margin x the smallest usable one (rank errors halved)
};

struct PlannedShare {
  double share = 0;         // the share to use (the cap when not usable)
  bool usable = false;      // false: abstain before charging (reliability says why)
  double needed = 0;        // the smallest usable share (0 when not usable)
  Reliability reliability;  // the verdict at `share`
  SharePolicy policy;
  // {"value", "source": "planned", "usable", "smallest_usable", "rule"}.
  nlohmann::json json() const;
};

PlannedShare plan_share(const std::function<Reliability(double share)>& usable_at,
                        const SharePolicy& policy = {});

// The abstention reason of a plan that found no usable share: the rule's reason at the cap, and
// that nothing was read, drawn or charged.
std::string planned_abstention(const PlannedShare& p);

}  // namespace dpstats
