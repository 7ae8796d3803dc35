// A Budget as JSON: the one file format behind Python's dpstats.Budget.save/load and the tool's
// --budget FILE. The file holds the total, the accountant and the full ledger; reading it replays
// every entry through Budget::spend, so the spent amount is always recomputed from the ledger
// (never read from the file) and a file whose ledger exceeds its total is refused.
//
//   {"format": "dpstats-budget", "version": 1, "accountant": "zcdp",
//    "total": {"kind": "approximate", "epsilon": 3.0, "delta": 1e-05},
//    "ledger": [ ...entries as in a release's "ledger"... ],
//    "spent": {"epsilon": ..., "delta": ..., "analysis": "rdp"}}   (informational; ignored when
//                                                                   read; budget.hpp "analyses")
#pragma once
#include <nlohmann/json.hpp>

#include "dpstats/privacy/budget.hpp"

namespace dpstats {

nlohmann::json loss_to_json(const PrivacyLoss& loss);
// A ledger entry's NoiseCurve (ledger.hpp): {"kind", "noise", "sensitivity", "lattice"}.
nlohmann::json curve_to_json(const NoiseCurve& curve);
PrivacyLoss loss_from_json(const nlohmann::json& j);  // InvalidArgument naming the bad field

nlohmann::json budget_to_json(const Budget& budget);
// InvalidArgument when the JSON is not a budget (naming the field), BudgetExceeded when its
// ledger does not fit its total.
Budget budget_from_json(const nlohmann::json& j);

Accountant parse_accountant(std::string_view name);  // "basic" | "zcdp" | "gdp"

}  // namespace dpstats
