#include "dpstats/seam.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "dpstats/error.hpp"

namespace dpstats {
namespace {

// The increase of a release's (epsilon, delta) from `before` to `after`, as one approximate
// entry. Summed over a release's charges it telescopes to the release's own (epsilon, delta),
// so a caller counting it with basic composition is charged exactly what the release states.
LedgerEntry increase_entry(const PrivacyLoss& before, const PrivacyLoss& after) {
  auto up = [](double a, double b) {  // a - b rounded up, >= 0 (exact when it can be)
    if (a <= b) return 0.0;
    const double r = a - b;
    const double err = (a - r) - b;  // a - b = r + err exactly (a >= b >= 0)
    return err > 0 ? std::nextafter(r, std::numeric_limits<double>::infinity()) : r;
  };
  LedgerEntry e;
  e.mechanism = "release";
  e.purpose = "one release, composed by its own accountant";
  e.loss = PrivacyLoss::approximate(up(after.epsilon, before.epsilon),
                                    std::min(1.0, up(after.delta, before.delta)));
  return e;
}

bool counts_all(const Budget& budget, const Ledger& entries) {
  try {
    Budget probe(budget.total(), budget.accountant());
    for (const auto& e : entries) probe.fits(e);
  } catch (const BudgetExceeded&) {
    return true;
  } catch (const InvalidArgument&) {
    return false;  // a loss kind this accountant cannot count
  }
  return true;
}

}  // namespace

ReleaseBudget::ReleaseBudget(PrivacyLoss target, Accountant accountant, Budget* caller)
    : own_(Budget(target, accountant)), caller_(caller) {}

ReleaseBudget ReleaseBudget::non_private() { return ReleaseBudget(); }

const Budget& ReleaseBudget::budget() const {
  require(own_.has_value(), "a non-private release has no budget");
  return *own_;
}

Budget ReleaseBudget::caller_after(const Ledger& planned, bool* by_increase) const {
  Budget next = *caller_;
  *by_increase = !counts_all(next, planned);
  if (!*by_increase) {
    for (const auto& e : planned) next.spend(e);
    return next;
  }
  // The increase is measured on the entries charged by increase only: entries the caller counted
  // themselves are composed there already, and a telescoping sum is only the release's own
  // guarantee when every one of its terms is an increase (a release charged in several steps
  // may mix both kinds).
  Budget mine(own_->total(), own_->accountant());
  for (const auto& e : increased_) mine.spend(e);
  const auto before = increased_.empty() ? PrivacyLoss::approximate(0, 0) : mine.spent_epsilon_delta();
  for (const auto& e : planned) mine.spend(e);
  const bool has_delta = own_->total().kind != LossKind::pure;
  auto after = mine.spent_epsilon_delta();
  if (!has_delta) after.delta = 0;
  next.spend(increase_entry(before, after));
  return next;
}

// caller_after, with a refusal that states what the caller had spent before this release (not
// the release's own entries charged so far in the scratch copy).
Budget ReleaseBudget::charged_or_refused(const Ledger& planned, const Budget& mine,
                                         bool* by_increase) const {
  try {
    return caller_after(planned, by_increase);
  } catch (const BudgetExceeded&) {
    throw BudgetExceeded(fmt::format(
        "budget exceeded: this release ({}) does not fit in the caller's budget: total {} ({} "
        "accountant), already spent {} before it; nothing was charged",
        mine.spent().describe(), caller_->total().describe(), to_string(caller_->accountant()),
        caller_->spent().describe()));
  }
}

void ReleaseBudget::charge(const Ledger& planned) {
  require(own_.has_value(), "a non-private release cannot be charged");
  Budget mine = *own_;
  for (const auto& e : planned) mine.spend(e);  // throws BudgetExceeded: nothing recorded
  if (caller_) {
    bool by_increase = false;
    Budget theirs = charged_or_refused(planned, mine, &by_increase);
    *caller_ = std::move(theirs);
    if (by_increase) increased_.insert(increased_.end(), planned.begin(), planned.end());
  }
  own_ = std::move(mine);
}

bool ReleaseBudget::fits(const Ledger& planned) const {
  try {
    ReleaseBudget probe = *this;
    Budget caller_copy = caller_ ? *caller_ : Budget(PrivacyLoss::pure(1), Accountant::basic);
    if (caller_) probe.caller_ = &caller_copy;
    probe.charge(planned);
    return true;
  } catch (const BudgetExceeded&) {
    return false;
  }
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
