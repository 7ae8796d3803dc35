// A dry run (issue 30 item 3): a release's plan, seen before any ε is spent.
//
// Inside a DryRun scope, a release runs its ordinary validate -> plan steps and stops at charge:
// ReleaseBudget::charge checks the plan against the release's target and the caller's Budget
// (a refusal is the usual BudgetExceeded), then records the plan here and throws DryRunStop
// instead of recording anything -- nothing is charged and, since every release charges before it
// draws (seam.hpp), no noise is drawn (a DryRun caller passes a NoDrawRng to prove it). A
// non-private release stops the same way with an empty plan.
//
// While planning, each scale-layer estimate notes the facts its reliability rule will judge
// (scale/reliability.hpp: rank error, tolerance, alpha), computed by the same function its run
// uses; rows_needed() solves that rule for n, so the dry run's "needs >= N rows" is the threshold
// at which the real run's estimate passes the rank check (the released cell's position and
// spread are data: a dry run cannot see them).
//
// The scope is per thread (a release plans on the thread that calls it) and nests nowhere: a
// second DryRun on a thread is a std::logic_error.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/reliability.hpp"

namespace dpstats {

// The reliability rule's rank part (scale/reliability.hpp) solved for n: the fewest rows for which
// t <= (tolerance - alpha) n, i.e. ceil(t / (tolerance - alpha)); +infinity when alpha >=
// tolerance (f.n is not read). `assess` judges the rank error by it and a dry run prints it, so
// the two cannot disagree. (Declared here rather than in reliability.hpp, which every consumer
// includes; defined in src/scale/reliability.cpp.)
double rows_needed(const SelectionFacts& f);

// A planned estimate whose usability depends on the rows (facts.n is not set).
struct PlannedCheck {
  std::string estimate;  // "clip bounds (3 columns)", "the 0.5 quantile of the row norms", ...
  SelectionFacts facts;
  // Under add/remove the rule reads a lower confidence bound of a Laplace count of the rows, not
  // n: about margin rows lower (its noise scale x ln(1/beta)); 0 under replace-one.
  double margin = 0;
  // The purpose of one of the estimate's ledger entries: a check whose entry the release did not
  // plan (an estimate a consumer considered and then left for another) is dropped at the stop.
  std::string purpose;
  // The rows (or users) this estimate needs: rows_needed(facts) + margin, rounded up.
  double rows() const;
};

// Thrown by ReleaseBudget::charge (and ReleaseBudget::non_private) inside a DryRun; deliberately
// not a std::exception, so that no handler of errors takes it for one.
struct DryRunStop {};

// Records a planned check in this thread's DryRun (once per distinct check); nothing outside one.
void note_planned_check(PlannedCheck check);

// A share planned from n (scale/share.hpp) sets the n at which a release's estimates pass: the
// real run at n finds a usable share exactly when the estimates pass at the cap, the largest
// share a plan gives (docs/proofs/scale.md §9). So the plan's trial verdicts note nothing
// (`quietly`), its estimates are noted once at the cap (`settled`), and later notes of those
// estimates (at the share chosen for the declared rows) are ignored. Both run `f` as is outside
// a DryRun.
void note_checks_quietly(const std::function<void()>& f);
void note_checks_settled(const std::function<void()>& f);

// A release that abstains on public values before it charges anything (its plan finds an estimate
// unusable at these rows): records the reason and throws DryRunStop. The tool and Python call it
// when a dry-run release reaches them abstained. A std::logic_error outside a DryRun.
[[noreturn]] void dry_run_abstained(const std::string& reason);

// Records the plan and the release's Budget after it (none for a non-private release) in this
// thread's DryRun and throws DryRunStop (seam.cpp). A std::logic_error outside a DryRun.
[[noreturn]] void dry_run_stop(const Ledger& plan, std::optional<Budget> spend);

class DryRun {
 public:
  DryRun();
  ~DryRun();
  DryRun(const DryRun&) = delete;
  DryRun& operator=(const DryRun&) = delete;
  // Ends the dry run on this thread (the destructor does too): releases run for real again. What
  // was recorded stays readable.
  void close();

  bool stopped() const { return stopped_; }
  const Ledger& plan() const { return plan_; }
  const std::vector<PlannedCheck>& checks() const { return checks_; }
  // What the release would spend (its own Budget after the plan); empty for a non-private one.
  const std::optional<Budget>& spend() const { return spend_; }

  // The plan as JSON (the same for the tool and Python): the stages (the ledger entries in
  // order), what they spend, each check with its rows needed and, when n_hint is given, the
  // verdict per check and overall. `remedy`: the public option(s) that replace the estimates
  // ("--bounds", "scale="), quoted in the advice.
  nlohmann::json json(std::optional<std::int64_t> n_hint, const std::string& remedy) const;

 private:
  friend void dry_run_stop(const Ledger&, std::optional<Budget>);
  friend void dry_run_abstained(const std::string&);
  friend void note_planned_check(PlannedCheck);
  friend void note_checks_quietly(const std::function<void()>&);
  friend void note_checks_settled(const std::function<void()>&);
  bool stopped_ = false;
  int quiet_ = 0;                     // > 0 inside note_checks_quietly
  std::vector<std::string> settled_;  // estimates noted by note_checks_settled
  Ledger plan_;
  std::vector<PlannedCheck> checks_;
  std::optional<Budget> spend_;
  std::optional<std::string> abstained_;
};

// Whether a DryRun is open on this thread.
bool dry_run_active();

// The generator a dry run passes: any draw is a std::logic_error (a dry run draws nothing).
class NoDrawRng final : public Rng {
 public:
  std::uint64_t next_u64() override;
  bool seeded() const noexcept override { return false; }
};

}  // namespace dpstats
