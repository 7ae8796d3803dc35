// Budget: an odometer over a Ledger that refuses any spend that would exceed the total.
// Algorithms charge the planned maximum, never the amount actually used (design.md §3).
//
// Accountants ("how we count it"):
//  * basic: pure and approximate losses; epsilons and deltas add.
//  * zcdp : rho adds (Bun & Steinke 2016); pure epsilon counts as epsilon^2/2; an approximate
//           (epsilon, delta) spend counts as delta-approximate epsilon^2/2-zCDP (BS16 §8); the
//           total is converted to (epsilon, delta) with the tight CKS20 formula.
//  * gdp  : mu^2 adds (Dong, Roth & Su 2019); the total converts exactly to (epsilon, delta).
//  * rdp  : Renyi-DP curves add on accounting_rdp_orders() (rdp.hpp), converted with the improved
//           conversion. Pure epsilon counts as min(epsilon, alpha epsilon^2/2); approximate
//           (epsilon, delta) as delta-approximate min(epsilon, alpha epsilon^2/2); zcdp (rho,
//           delta) as delta-approximate alpha rho; gdp mu as alpha mu^2/2; subsampled_gaussian
//           (Poisson, add-remove) by MTZ19. Deltas add and are subtracted from the target delta
//           before the conversion, as for zcdp. docs/proofs/accounting.md §6.
//  * pld  : privacy-loss distributions compose (pld.hpp): pure epsilon and approximate
//           (epsilon, delta) by their dominating pairs (KOV15), gdp by the Gaussian pair,
//           subsampled_gaussian (Poisson, add-remove) by its two-direction PLD, an entry with a
//           NoiseCurve (ledger.hpp: Gaussian, Laplace, discrete Laplace) by its mechanism's own
//           pair; zcdp without a curve has no PLD. The epsilon is a pessimistic PLD read-out.
// Analyses (docs/proofs/accounting.md §10): the rdp and pld accountants report, at a delta, the
// smallest epsilon among their valid analyses and name it (spent_epsilon): rdp takes rdp, zcdp
// and basic; pld takes pld, rdp, zcdp and basic. An analysis is valid while it can count every
// entry (basic: pure and approximate; zcdp: those, zcdp, gdp and Gaussian curves; rdp: those
// and subsampled_gaussian); each is an upper bound, so their minimum is one, and refusals use it.
// Entries with a Gaussian curve count as rho = 1/(2 z^2) in the zcdp and rdp analyses.
// An accountant refuses (InvalidArgument) the loss kinds it cannot count: basic refuses zcdp,
// gdp and subsampled_gaussian entries, zcdp refuses gdp and subsampled_gaussian entries, gdp
// refuses everything but gdp entries, rdp and pld refuse an entry none of their analyses counts.
// `count` on an entry multiplies it (count identical calls; for subsampled_gaussian, the number
// of steps).
//
// Totals: basic takes a pure or approximate (epsilon, delta) target. zcdp takes a zcdp total (a rho
// cap; its delta caps the summed delta of approximate entries) or an approximate target with
// delta > 0, met when zcdp_to_epsilon(rho, delta - delta_spent) <= epsilon. gdp takes a gdp total
// (a mu cap) or an approximate target with delta > 0, met when gdp_to_delta(mu, epsilon) <= delta.
// rdp and pld take an approximate target with delta > 0, met when the accountant's epsilon at
// that delta is <= epsilon.
//
// Floating point: sums are exact (ExactSum) and rounded up when read; a spend is accepted when
// the composed quantity is within a relative 1e-12 of the total (see budget.cpp for why that is
// safe). spent() and spent_epsilon_delta() always report the composed values themselves.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "dpstats/privacy/composition.hpp"
#include "dpstats/privacy/ledger.hpp"

namespace dpstats {

enum class Accountant { basic, zcdp, gdp, rdp, pld };
class PrivacyLossDistribution;
const char* to_string(Accountant a);

// The (epsilon, delta) of what has been spent, and the analysis that gave that epsilon.
struct SpentEpsilon {
  double epsilon = 0;
  double delta = 0;
  Accountant analysis = Accountant::basic;
};

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
  // (basic: approximate or pure; zcdp: rho with delta; gdp: mu; rdp and pld: (epsilon, delta) at
  // the total's delta).
  PrivacyLoss spent() const;
  // The (epsilon, delta) guarantee of what has been spent. For zcdp and gdp the delta is the
  // total's delta (or `delta` when given; required when the total is a rho or mu cap) and epsilon
  // is the tight conversion (for zcdp with delta - delta_spent). For basic it is the summed
  // (epsilon, delta); passing `delta` there is an InvalidArgument. For rdp and pld the epsilon is
  // the accountant's upper bound at the total's delta (or `delta`).
  PrivacyLoss spent_epsilon_delta(std::optional<double> delta = std::nullopt) const;
  // The same with the analysis that gave the epsilon (for basic, zcdp and gdp: the accountant).
  SpentEpsilon spent_epsilon(std::optional<double> delta = std::nullopt) const;
  // rdp and pld: every analysis of the accountant at delta (+inf where it cannot count an entry
  // or the delta is spent), the accountant's own first.
  std::vector<SpentEpsilon> analyses(double delta) const;

 private:
  // Exact running sums in the accountant's units (epsilon, delta, rho, mu^2), each already
  // multiplied by the entries' counts.
  struct Sums {
    ExactSum epsilon, delta, rho, mu_squared;
    // rdp and pld: `epsilon` and `delta` are the basic analysis', `rho` and `approximate_delta`
    // the zcdp analysis' (approximate_delta is also the rdp analysis' delta).
    ExactSum approximate_delta;
    std::vector<double> rdp;                               // rdp: the curve on the orders
    std::shared_ptr<const PrivacyLossDistribution> pld;   // pld: the composed PLD
    bool lattice_coupled = false;  // pld: a discrete entry is in it (coupling slack, proofs §9)
    // rdp and pld: the analyses that can still count every entry.
    bool basic_ok = true, zcdp_ok = true, rdp_ok = true, pld_ok = true;
  };
  void add_analyses(Sums& out, const LedgerEntry& entry) const;  // rdp and pld
  void add_rdp(Sums& out, const LedgerEntry& entry) const;
  void add_pld(Sums& out, const LedgerEntry& entry) const;
  std::vector<SpentEpsilon> analyses_at(const Sums& s, double delta) const;  // rdp and pld
  SpentEpsilon epsilon_at(const Sums& s, double delta) const;                // their minimum
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
