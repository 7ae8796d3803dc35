// A dry run (dpstats/dry_run.hpp): a release stops at its charge with nothing recorded, its
// generator refuses any draw, and the scale layer notes the rank checks of the estimates a plan
// charges (those it does not charge are dropped).
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/scale/clip_bounds.hpp"
#include "dpstats/seam.hpp"

namespace dpstats {
namespace {

TEST(DryRun, StopsAtTheChargeWithNothingRecorded) {
  Budget caller(PrivacyLoss::pure(1), Accountant::basic);
  DryRun run;
  ReleaseBudget account(PrivacyLoss::pure(0.5), Accountant::basic, &caller);
  const LaplaceMechanism m(1.0, 0.5);
  EXPECT_THROW(account.charge(m.ledger_entry("a count")), DryRunStop);
  EXPECT_TRUE(run.stopped());
  ASSERT_EQ(run.plan().size(), 1u);
  EXPECT_EQ(run.plan()[0].purpose, "a count");
  ASSERT_TRUE(run.spend().has_value());
  EXPECT_DOUBLE_EQ(run.spend()->spent_epsilon_delta().epsilon, 0.5);
  EXPECT_TRUE(caller.ledger().empty());
  EXPECT_FALSE(account.charged());
}

TEST(DryRun, ATooSmallBudgetIsRefusedAsInTheRealRun) {
  Budget caller(PrivacyLoss::pure(0.1), Accountant::basic);
  DryRun run;
  ReleaseBudget account(PrivacyLoss::pure(0.5), Accountant::basic, &caller);
  EXPECT_THROW(account.charge(LaplaceMechanism(1.0, 0.5).ledger_entry("a count")), BudgetExceeded);
  EXPECT_FALSE(run.stopped());
  EXPECT_TRUE(caller.ledger().empty());
}

TEST(DryRun, DrawsNothingAndClosesForRealReleases) {
  NoDrawRng none;
  EXPECT_THROW(none.next_u64(), std::logic_error);
  {
    DryRun run;
    EXPECT_TRUE(dry_run_active());
    EXPECT_THROW(DryRun(), std::logic_error);  // one per thread
    run.close();
    EXPECT_FALSE(dry_run_active());
  }
  ReleaseBudget account(PrivacyLoss::pure(0.5), Accountant::basic);
  account.charge(LaplaceMechanism(1.0, 0.5).ledger_entry("a count"));
  EXPECT_TRUE(account.charged());
}

TEST(DryRun, ClipBoundsNoteTheRowsTheirRunChecks) {
  ClipBoundsOptions o;
  o.loss = PrivacyLoss::pure(0.3);
  DryRun run;
  const Ledger entries = private_clip_bounds_entries(o, 2);
  ASSERT_EQ(run.checks().size(), 2u);  // the anchor and the scans
  for (const PlannedCheck& c : run.checks()) {
    EXPECT_GT(c.facts.rank_error, 0);
    EXPECT_EQ(c.rows(), rows_needed(c.facts));  // replace-one: no count margin
  }
  // A plan that charges them keeps them; the JSON states the verdict at a declared n.
  EXPECT_THROW(dry_run_stop(entries, std::nullopt), DryRunStop);
  ASSERT_EQ(run.checks().size(), 2u);
  const double most = std::max(run.checks()[0].rows(), run.checks()[1].rows());
  const auto below = run.json(static_cast<std::int64_t>(most) - 1, "--bounds");
  EXPECT_EQ(below["verdict"].get<std::string>().rfind("would abstain", 0), 0u) << below.dump();
  EXPECT_EQ(run.json(static_cast<std::int64_t>(most), "")["verdict"], "would release");
}

TEST(DryRun, ChecksOfEstimatesThePlanDoesNotChargeAreDropped) {
  ClipBoundsOptions o;
  o.loss = PrivacyLoss::pure(0.3);
  DryRun run;
  private_clip_bounds_entries(o, 1);  // considered, then not planned
  EXPECT_THROW(dry_run_stop({LaplaceMechanism(1.0, 0.5).ledger_entry("a count")}, std::nullopt),
               DryRunStop);
  EXPECT_TRUE(run.checks().empty());
  EXPECT_EQ(run.json(std::nullopt, "")["verdict"].get<std::string>().rfind("would release", 0), 0u);
}

}  // namespace
}  // namespace dpstats
