// The seam every algorithm runs through: validate -> plan -> charge -> run -> seal.
//
//  * validate: the driver checks every option, strings included, before any data is read or
//    noise drawn.
//  * plan:     the driver builds every mechanism and its noise scale from public values only;
//              the plan's charges are those mechanisms' own LedgerEntry values at the planned
//              maximum. This is where a missing scale is estimated (dpstats/scale/).
//  * charge:   ReleaseBudget::charge records the charges against this release's target and,
//              when the caller passed one, the caller's Budget -- all or nothing, before any
//              noise is drawn.
//  * run:      the algorithm's loop.
//  * seal:     the only code that writes a Release's guarantee, ledger, status, `seeded` and
//              `noise`. The guarantee is read from the release's Budget, never from options.
//
// Abstention (the one convention): status `abstained`, an empty estimate, the reason in
// diagnostics["abstained"], and the ledger of everything charged (an abstention is itself a
// private output and its budget is spent).
#pragma once
#include <cmath>
#include <optional>
#include <type_traits>
#include <string>

#include "dpstats/privacy/budget.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats {

class ReleaseBudget {
 public:
  // `target`: what this release may spend, counted by `accountant`. `caller`: an optional Budget
  // (not owned, must outlive this object) against which this release is composed with others.
  ReleaseBudget(PrivacyLoss target, Accountant accountant, Budget* caller = nullptr);
  // A release that spends nothing and claims no guarantee (non-private reference methods).
  static ReleaseBudget non_private();

  // Records every entry in this release's Budget and in the caller's, or throws BudgetExceeded
  // (from either) with nothing recorded anywhere. The caller's Budget receives the entries
  // themselves when its accountant can count them, otherwise the increase of this release's
  // (epsilon, delta) as one approximate entry.
  void charge(const Ledger& planned);
  void charge(const LedgerEntry& planned) { charge(Ledger{planned}); }
  // Whether charge(planned) would succeed.
  bool fits(const Ledger& planned) const;

  bool is_private() const { return own_.has_value(); }
  const Budget& budget() const;  // InvalidArgument for a non-private release

 private:
  ReleaseBudget() = default;
  Budget caller_after(const Ledger& planned, bool* by_increase) const;
  Budget charged_or_refused(const Ledger& planned, const Budget& mine, bool* by_increase) const;

  std::optional<Budget> own_;
  Ledger increased_;  // the entries charged on the caller as one increase each
  Budget* caller_ = nullptr;
};

// What the run itself establishes about a release (everything else comes from the budget).
struct SealFacts {
  bool certified = true;  // false when no proof covers what ran (besides noise mode and hooks)
  Neighbouring neighbouring = Neighbouring::replace_one;
  PrivacyUnit unit = PrivacyUnit::record;
  NoiseMode noise = NoiseMode::secure;
  bool noiseless = false;                  // TestHooks::noiseless was set
  std::optional<std::string> abstained = std::nullopt;  // the reason, when the release abstains
};

// The guarantee a budget's spend supports, as every release states it.
PrivacyGuarantee guarantee_of(const ReleaseBudget& account, const SealFacts& facts);

namespace seal_detail {
// Whether a numeric estimate (a number, an Eigen object, a container of numbers) holds a NaN or
// an infinity; other estimate types are never flagged.
template <class T>
bool non_finite(const T& v) {
  if constexpr (std::is_arithmetic_v<T>) {
    return !std::isfinite(static_cast<double>(v));
  } else if constexpr (requires { v.allFinite(); }) {
    return !v.allFinite();
  } else if constexpr (requires { v.begin(); v.end(); }) {
    for (const auto& e : v)
      if (non_finite(e)) return true;
    return false;
  } else {
    return false;
  }
}
// The reason a release whose estimate overflowed abstains (issue #21: never "ok" with inf).
inline constexpr const char* kOverflowReason =
    "the estimate is beyond the largest double (+-1.8e308): the data's magnitude is too large for "
    "this statistic; rescale the data (e.g. change their unit)";
}  // namespace seal_detail

// The only writer of a Release's guarantee, ledger, status, `seeded` and `noise`. An abstaining
// release gets an empty estimate (T{}) whatever `estimate` was. A numeric estimate that
// overflowed to inf or NaN abstains with seal_detail::kOverflowReason (post-processing of the
// noisy estimate, so private).
template <class T>
Release<T> seal(T estimate, const ReleaseBudget& account, const SealFacts& facts, const Rng& rng,
                nlohmann::json diagnostics = nlohmann::json::object()) {
  Release<T> r;
  r.privacy = guarantee_of(account, facts);
  const bool overflow = !facts.abstained && seal_detail::non_finite(estimate);
  r.status = facts.abstained || overflow ? Status::abstained : Status::ok;
  r.estimate = facts.abstained || overflow ? T{} : std::move(estimate);
  r.seeded = rng.seeded();
  r.noise = facts.noise;
  if (account.is_private()) r.ledger = account.budget().ledger();
  r.diagnostics = std::move(diagnostics);
  if (facts.abstained) r.diagnostics["abstained"] = *facts.abstained;
  if (overflow) r.diagnostics["abstained"] = seal_detail::kOverflowReason;
  return r;
}

}  // namespace dpstats
