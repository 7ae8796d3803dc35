// Budget: an odometer over a Ledger that refuses any spend that would exceed the total.
// Algorithms charge the planned maximum, never the amount actually used (design.md §3).
//
// Accountants ("how we count it"):
//  * basic: pure and approximate losses; epsilons and deltas add.
//  * zcdp : rho adds (Bun & Steinke 2016); pure epsilon counts as epsilon^2/2; an approximate
//           (epsilon, delta) spend counts as delta-approximate epsilon^2/2-zCDP (BS16 §8); the
//           total is converted to (epsilon, delta) with the tight CKS20 formula.
//  * gdp  : mu^2 adds (Dong, Roth & Su 2019); the total converts exactly to (epsilon, delta).
// An accountant refuses (InvalidArgument) the loss kinds it cannot count: basic refuses zcdp and
// gdp entries, zcdp refuses gdp entries, gdp refuses everything but gdp entries. `count` on an
// entry multiplies it (count identical calls).
//
// Totals: basic takes a pure or approximate (epsilon, delta) target. zcdp takes a zcdp total (a rho
// cap; its delta caps the summed delta of approximate entries) or an approximate target with
// delta > 0, met when zcdp_to_epsilon(rho, delta - delta_spent) <= epsilon. gdp takes a gdp total
// (a mu cap) or an approximate target with delta > 0, met when gdp_to_delta(mu, epsilon) <= delta.
//
// Floating point: sums are exact (ExactSum) and rounded up when read; a spend is accepted when
// the composed quantity is within a relative 1e-12 of the total (see budget.cpp for why that is
// safe). spent() and spent_epsilon_delta() always report the composed values themselves.
#pragma once
#include <optional>

#include "dpstats/privacy/composition.hpp"
#include "dpstats/privacy/ledger.hpp"

namespace dpstats {

enum class Accountant { basic, zcdp, gdp };
const char* to_string(Accountant a);

// The largest double r with part + r <= total exactly (total >= part >= 0): the rest of a budget
// after a share `part`, so that the shares of a split never add up to more than the whole.
double remainder_after(double total, double part);

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
  // total's delta (or `delta` when given; required when the total is a rho or mu cap) and epsilon
  // is the tight conversion (for zcdp with delta - delta_spent). For basic it is the summed
  // (epsilon, delta); passing `delta` there is an InvalidArgument.
  PrivacyLoss spent_epsilon_delta(std::optional<double> delta = std::nullopt) const;

 private:
  // Exact running sums in the accountant's units (epsilon, delta, rho, mu^2), each already
  // multiplied by the entries' counts.
  struct Sums {
    ExactSum epsilon, delta, rho, mu_squared;
  };
  // `sums` plus `entry`; throws InvalidArgument for a malformed entry or a kind the accountant
  // cannot count.
  Sums add(const Sums& sums, const LedgerEntry& entry) const;
  PrivacyLoss compose(const Sums& sums) const;
  bool within(const PrivacyLoss& composed) const;

  PrivacyLoss total_;
  Accountant accountant_;
  Ledger ledger_;
  Sums sums_;
};

}  // namespace dpstats
