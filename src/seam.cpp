#include "dpstats/seam.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"
#include "dpstats/privacy/composite.hpp"

namespace dpstats {
namespace {

// What a Budget records of a planned entry: its charge, without the release's stage state.
LedgerEntry charge_of(LedgerEntry e) {
  e.reserved = false;
  e.blocks.clear();
  return e;
}

bool counts_all(const Budget& budget, const Ledger& entries) {
  try {
    Budget probe(budget.total(), budget.accountant());
    for (const auto& e : entries) probe.fits(charge_of(e));
  } catch (const BudgetExceeded&) {
    return true;
  } catch (const InvalidArgument&) {
    return false;  // a loss kind this accountant cannot count
  }
  return true;
}

bool same_loss(const PrivacyLoss& a, const PrivacyLoss& b) {
  return a.kind == b.kind && a.epsilon == b.epsilon && a.delta == b.delta && a.rho == b.rho &&
         a.mu == b.mu && a.sampling_rate == b.sampling_rate &&
         a.noise_multiplier == b.noise_multiplier && a.sampling == b.sampling &&
         a.neighbouring == b.neighbouring && a.discrete == b.discrete;
}

bool same_charge(const LedgerEntry& a, const LedgerEntry& b) {
  return a.mechanism == b.mechanism && a.count == b.count && same_loss(a.loss, b.loss);
}

// What a budget has spent, in the units `dpstats budget show` prints it: (epsilon, delta) for an
// (epsilon, delta) total, the accountant's own unit (rho, mu) otherwise.
std::string spent_text(const Budget& b) {
  if (b.ledger().empty()) return "nothing";
  const bool states_epsilon = b.total().kind == LossKind::pure ||
                              b.total().kind == LossKind::approximate;
  return states_epsilon ? b.spent_epsilon_delta().describe() : b.spent().describe();
}

[[noreturn]] void not_planned(const LedgerEntry& e, const char* why) {
  throw std::logic_error(fmt::format("the {} entry '{}' ({} x {}) {}", e.mechanism, e.purpose,
                                     e.count, e.loss.describe(), why));
}

}  // namespace

ReleaseBudget::ReleaseBudget(PrivacyLoss target, Accountant accountant, Budget* caller)
    : own_(Budget(target, accountant)), caller_(caller) {}

ReleaseBudget ReleaseBudget::non_private() {
  if (dry_run_active()) dry_run_stop({}, std::nullopt);  // a dry run of a non-private method
  return ReleaseBudget();
}

const Budget& ReleaseBudget::budget() const {
  require(own_.has_value(), "a non-private release has no budget");
  return *own_;
}

Budget ReleaseBudget::caller_after(const Ledger& plan, const Budget& mine) const {
  Budget next = *caller_;
  if (plan.empty()) return next;
  try {
    if (counts_all(next, plan)) {
      for (const auto& e : plan) next.spend(charge_of(e));
    } else {
      PrivacyLoss spent = mine.spent_epsilon_delta();
      if (mine.total().kind == LossKind::pure) spent.delta = 0;
      next.spend(release_entry(spent));
    }
  } catch (const BudgetExceeded&) {
    throw BudgetExceeded(fmt::format(
        "budget exceeded: this release {} does not fit in the caller's budget: total {} ({} "
        "accountant), already spent {} before it; nothing was charged",
        spent_text(mine), caller_->total().describe(), to_string(caller_->accountant()),
        spent_text(*caller_)));
  }
  return next;
}

void ReleaseBudget::charge(const Ledger& plan) {
  require(own_.has_value(), "a non-private release cannot be charged");
  if (charged_) {
    throw std::logic_error("a release charges its whole plan once, before any noise: a second "
                           "charge would make a refusal partial");
  }
  Budget mine = *own_;
  for (const auto& e : plan) mine.spend(charge_of(e));  // throws BudgetExceeded: nothing recorded
  const Budget caller = caller_ ? caller_after(plan, mine) : mine;  // a refusal throws here
  if (dry_run_active()) dry_run_stop(plan, std::move(mine));  // nothing recorded, nothing drawn
  if (caller_) *caller_ = caller;
  own_ = std::move(mine);
  ledger_ = plan;
  claimed_.assign(plan.size(), false);
  charged_ = true;
}

void ReleaseBudget::claim(const Ledger& entries) {
  if (!charged_) charge(entries);
  std::vector<bool> taken = claimed_;
  std::vector<std::size_t> at;
  for (const auto& e : entries) {
    std::size_t i = 0;
    // A reserved entry takes the mechanism built for it; an entry final at plan time, only itself.
    while (i < ledger_.size() &&
           (taken[i] || !same_charge(ledger_[i], e) ||
            (!ledger_[i].reserved && ledger_[i].purpose != e.purpose)))
      ++i;
    if (i == ledger_.size()) not_planned(e, "is not in the release's plan: nothing uncharged may draw");
    taken[i] = true;
    at.push_back(i);
  }
  for (std::size_t k = 0; k < at.size(); ++k) {
    ledger_[at[k]] = entries[k];
    ledger_[at[k]].reserved = false;
  }
  claimed_ = std::move(taken);
}

PrivacyGuarantee guarantee_of(const ReleaseBudget& account, const SealFacts& facts) {
  PrivacyGuarantee g;
  g.neighbouring = facts.neighbouring;
  g.unit = facts.unit;
  g.certified = facts.certified && facts.noise == NoiseMode::secure && !facts.noiseless &&
                account.is_private();
  if (!account.is_private()) {
    g.epsilon = std::numeric_limits<double>::infinity();
    return g;
  }
  const Budget& b = account.budget();
  g.accountant = b.accountant();
  if (b.ledger().empty()) return g;  // nothing released through noise: (0, 0)
  const PrivacyLoss spent = b.spent_epsilon_delta();
  g.epsilon = spent.epsilon;
  g.delta = spent.delta;
  if (b.accountant() == Accountant::zcdp) g.rho = b.spent().rho;
  return g;
}

}  // namespace dpstats
