// Budget: an odometer over a Ledger that refuses any spend that would exceed the total.
// Algorithms charge the planned maximum, never the amount actually used (design.md §3).
//
// Accountants ("how we count it"):
//  * basic: pure and approximate losses; epsilons and deltas add.
//  * zcdp : rho adds (Bun & Steinke 2016); pure epsilon counts as epsilon^2/2; an approximate
//           (epsilon, delta) spend counts as delta-approximate epsilon^2/2-zCDP (BS16 §8); the
//           total is converted to (epsilon, delta) with the tight CKS20 formula.
//  * gdp  : mu^2 adds (Dong, Roth & Su 2019); the total converts exactly to (epsilon, delta).
#pragma once
#include <optional>

#include "dpstats/privacy/ledger.hpp"

namespace dpstats {

enum class Accountant { basic, zcdp, gdp };
const char* to_string(Accountant a);

class Budget {
 public:
  // `total` is the guarantee the whole run must satisfy. A pure or approximate total is the
  // (epsilon, delta) target; a zcdp total is a rho cap (with its delta slack), a gdp total a mu cap.
  Budget(PrivacyLoss total, Accountant accountant);

  // Records the spend, or throws BudgetExceeded (nothing recorded) if it would exceed the total.
  void spend(const LedgerEntry& entry);
  // Whether `entry` would fit, without recording it.
  bool fits(const LedgerEntry& entry) const;

  Accountant accountant() const { return accountant_; }
  const PrivacyLoss& total() const { return total_; }
  const Ledger& ledger() const { return ledger_; }

  // What has been spent, composed by the accountant, in the accountant's native unit
  // (basic: approximate or pure; zcdp: rho with delta; gdp: mu).
  PrivacyLoss spent() const;
  // The (epsilon, delta) guarantee of what has been spent. For zcdp and gdp the delta is the
  // total's delta (or `delta` when given) and epsilon is the tight conversion.
  PrivacyLoss spent_epsilon_delta(std::optional<double> delta = std::nullopt) const;

 private:
  PrivacyLoss compose(const Ledger& ledger) const;
  bool within(const PrivacyLoss& composed) const;

  PrivacyLoss total_;
  Accountant accountant_;
  Ledger ledger_;
};

}  // namespace dpstats
