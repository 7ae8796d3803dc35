// dpstats budget init FILE --epsilon E [--delta D] [--accountant basic|zcdp|gdp|rdp|pld] [--rho R]
// dpstats budget show FILE
// A budget file holds one total and the ledger of every release charged to it (--budget FILE on
// every command that releases).
#include <cmath>

#include "budget_file.hpp"
#include "cli.hpp"
#include "options_cli.hpp"
#include "dpstats/error.hpp"
#include "dpstats/privacy/budget_json.hpp"

namespace dpstats::cli {
namespace {

struct BudgetArgs {
  std::string file;
  std::optional<double> epsilon, delta, rho, mu;
  std::string accountant = "basic";
};

PrivacyLoss total_of(const BudgetArgs& a) {
  const int given = (a.epsilon ? 1 : 0) + (a.rho ? 1 : 0) + (a.mu ? 1 : 0);
  require(given == 1, "give exactly one total: --epsilon (with --delta), --rho or --mu");
  if (a.rho) return PrivacyLoss::zcdp(*a.rho, a.delta.value_or(0));
  if (a.mu) return PrivacyLoss::gdp(*a.mu);
  const double delta = a.delta.value_or(0);
  return delta > 0 ? PrivacyLoss::approximate(*a.epsilon, delta) : PrivacyLoss::pure(*a.epsilon);
}

nlohmann::ordered_json show(const std::string& command, const std::string& file, const Budget& b) {
  nlohmann::ordered_json out = {{"command", command}, {"file", file}};
  const auto j = budget_to_json(b);
  out["accountant"] = j["accountant"];
  out["total"] = j["total"];
  if (j.contains("spent")) out["spent"] = j["spent"];
  const auto acc = b.accountant();
  if ((acc == Accountant::rdp || acc == Accountant::pld) && !b.ledger().empty()) {
    // every analysis the smallest epsilon was chosen from (null: cannot count the ledger)
    nlohmann::ordered_json all;
    for (const auto& a : b.analyses(b.total().delta))
      all[to_string(a.analysis)] = std::isfinite(a.epsilon) ? nlohmann::json(a.epsilon) : nullptr;
    out["analyses"] = all;
  }
  out["ledger_entries"] = b.ledger().size();  // one release may charge several
  out["ledger"] = j["ledger"];
  return out;
}

}  // namespace

void add_budget_command(CLI::App& app) {
  auto a = std::make_shared<BudgetArgs>();
  auto* cmd = app.add_subcommand("budget", "Create or show a budget file (see --budget)");
  cmd->require_subcommand(1);
  auto* init = cmd->add_subcommand("init", "Create a budget file with a total");
  // Its options are declared once (src/options.cpp, command "budget init").
  add_declared(init, "budget init", "file", a->file)->required();
  add_declared(init, "budget init", "epsilon", a->epsilon);
  add_declared(init, "budget init", "delta", a->delta);
  add_declared(init, "budget init", "rho", a->rho);
  add_declared(init, "budget init", "mu", a->mu);
  add_declared(init, "budget init", "accountant", a->accountant)
      ->check(CLI::IsMember({"basic", "zcdp", "gdp", "rdp", "pld"}));
  init->callback([a] {
    const Budget b(total_of(*a), parse_accountant(a->accountant));
    create_budget_file(a->file, b);
    print_json(show("budget init", a->file, b));
  });
  auto* sh = cmd->add_subcommand("show", "Print a budget file's total, spend and ledger");
  sh->add_option("FILE", a->file, "the budget file")->required();
  sh->callback([a] {
    BudgetFile f(a->file);
    print_json(show("budget show", a->file, *f.get()));
  });
}

}  // namespace dpstats::cli
