// The seam every algorithm runs through: validate -> plan -> charge -> run -> seal.
//
//  * validate: the driver checks every option, strings included, before any data is read or
//    noise drawn.
//  * plan:     the driver lists every charge the release will make, from public values only: the
//              entries of the mechanisms it builds now, and for a stage whose clip or scale comes
//              from an earlier stage's release, its mechanism's reserved entry (the same loss, from
//              the mechanism's `reserved_entry`: the cost never depends on the data). This is
//              where a missing scale is planned (dpstats/scale/).
//  * charge:   ReleaseBudget::charge records the whole plan against this release's target and,
//              when the caller passed one, the caller's Budget -- once, all or nothing, before
//              any noise is drawn.
//  * run:      the algorithm's loop. A stage presents its mechanisms' own entries before they draw
//              (ReleaseBudget::claim): each takes its planned place, or the run stops with a
//              std::logic_error (a mechanism that was not planned never draws).
//  * seal:     the only code that writes a Release's guarantee, ledger, status, `seeded` and
//              `noise`. The guarantee is read from the release's Budget, never from options.
//
// Abstention (the one convention): status `abstained`, an empty estimate, the reason in
// diagnostics["abstained"], and the ledger of everything charged (an abstention is itself a
// private output and its budget is spent; a reserved entry that never ran says so).
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

  // Records the release's whole plan in this release's Budget and in the caller's, or throws
  // BudgetExceeded (from either) with nothing recorded anywhere. The caller's Budget receives the
  // entries themselves when its accountant can count them, otherwise this release's (epsilon,
  // delta) as one approximate entry. A release is charged once: a second call is a
  // std::logic_error (a stage charged after another has drawn would make a refusal partial).
  void charge(const Ledger& plan);
  void charge(const LedgerEntry& plan) { charge(Ledger{plan}); }
  bool charged() const { return charged_; }

  // A stage's mechanisms present their entries before they draw: each takes the place of the
  // first planned entry not claimed yet with the same mechanism, loss and count that is reserved
  // (it gets the mechanism's purpose, sensitivity and noise scale) or, final at plan time, has the
  // same purpose. A std::logic_error, with nothing
  // recorded, when one has no such place. On an account not charged yet, `entries` are first
  // charged as the whole plan (a one-stage release, e.g. the scale layer called on its own).
  void claim(const Ledger& entries);
  void claim(const LedgerEntry& entry) { claim(Ledger{entry}); }
  bool is_private() const { return own_.has_value(); }
  const Budget& budget() const;  // InvalidArgument for a non-private release
  // The plan with what the stages claimed (a release's ledger; empty for a non-private release).
  const Ledger& ledger() const { return ledger_; }

 private:
  ReleaseBudget() = default;
  Budget caller_after(const Ledger& plan, const Budget& mine) const;

  std::optional<Budget> own_;
  Ledger ledger_;
  std::vector<bool> claimed_;  // per entry of ledger_
  Budget* caller_ = nullptr;
  bool charged_ = false;
};

// What the run itself establishes about a release (everything else comes from the budget).
struct SealFacts {
  // Every release states whether a proof covers what ran (besides noise mode and hooks): there
  // is no default.
  explicit SealFacts(bool certified_) : certified(certified_) {}
  bool certified;
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
  r.ledger = account.ledger();
  r.diagnostics = std::move(diagnostics);
  if (facts.abstained) r.diagnostics["abstained"] = *facts.abstained;
  if (overflow) r.diagnostics["abstained"] = seal_detail::kOverflowReason;
  return r;
}

}  // namespace dpstats
