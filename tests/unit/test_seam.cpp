// The seam's charge and seal: all-or-nothing charges against the release's and the caller's
// budgets, the guarantee read from the budget, and the one abstention convention.
#include <gtest/gtest.h>

#include "dpstats/data/matrix.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/profile.hpp"
#include "dpstats/run_control.hpp"
#include "dpstats/seam.hpp"
#include "guarantee.hpp"

namespace dpstats {
namespace {

LedgerEntry pure_entry(double eps) {
  return LaplaceMechanism(1.0, eps).ledger_entry("test");
}

TEST(Seam, SealReadsTheGuaranteeFromTheBudget) {
  ReleaseBudget account(PrivacyLoss::pure(1.0), Accountant::basic);
  account.charge({pure_entry(0.25), pure_entry(0.5)});
  SeededRng rng(1);
  const auto r = seal(Vector::Zero(2).eval(), account, SealFacts(true), rng);
  EXPECT_DOUBLE_EQ(r.privacy.epsilon, 0.75);
  EXPECT_EQ(r.privacy.delta, 0);
  EXPECT_TRUE(r.seeded);
  EXPECT_EQ(r.status, Status::ok);
  EXPECT_EQ(r.ledger.size(), 2u);
  testing::expect_guarantee_from_ledger(r);
}

TEST(Seam, ChargeIsAllOrNothing) {
  Budget caller(PrivacyLoss::pure(1.0), Accountant::basic);
  ReleaseBudget account(PrivacyLoss::pure(1.0), Accountant::basic, &caller);
  EXPECT_THROW(account.charge({pure_entry(0.6), pure_entry(0.6)}), BudgetExceeded);
  EXPECT_TRUE(account.budget().ledger().empty());
  EXPECT_TRUE(caller.ledger().empty());
  account.charge(pure_entry(0.6));
  EXPECT_EQ(caller.ledger().size(), 1u);
  // A second release against the same caller cannot spend what the first did; the refusal states
  // what the caller had spent before it, and leaves it as it was.
  ReleaseBudget second(PrivacyLoss::pure(1.0), Accountant::basic, &caller);
  const Ledger before = caller.ledger();
  try {
    second.charge(pure_entry(0.6));
    FAIL();
  } catch (const BudgetExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("already spent (epsilon=0.6, delta=0) before it"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(caller.ledger().size(), before.size());
  EXPECT_TRUE(second.budget().ledger().empty());
  second.charge(pure_entry(0.4));
  EXPECT_NEAR(caller.spent().epsilon, 1.0, 1e-12);
}

TEST(Seam, AReleaseIsChargedOnceAndItsStagesClaimThePlan) {
  // rho(5, 1e-6) = 0.385 holds the plan's 0.105.
  Budget caller(PrivacyLoss::approximate(10, 1e-6), Accountant::zcdp);
  ReleaseBudget account(PrivacyLoss::approximate(5, 1e-6), Accountant::zcdp, &caller);
  const auto stage = GaussianMechanism::from_rho(3.0, 0.02, 2);  // its sensitivity: a stage's output
  account.charge({pure_entry(0.1), GaussianMechanism::reserved_entry(0.02, "later stage", 5)});
  EXPECT_THROW(account.charge(pure_entry(0.1)), std::logic_error);  // never stage by stage
  EXPECT_TRUE(account.ledger()[1].reserved);
  // Not planned: another loss, another count, another mechanism.
  EXPECT_THROW(account.claim(GaussianMechanism::from_rho(3.0, 0.03, 2).ledger_entry("x")),
               std::logic_error);
  LedgerEntry e = stage.ledger_entry("later stage");
  EXPECT_THROW(account.claim(e), std::logic_error);  // count 1, planned 5
  e.count = 5;
  account.claim(e);
  EXPECT_FALSE(account.ledger()[1].reserved);
  EXPECT_EQ(account.ledger()[1].noise_scale, stage.sigma());
  EXPECT_THROW(account.claim(e), std::logic_error);  // claimed once
  EXPECT_EQ(caller.ledger().size(), 2u);             // the plan, charged once
  // An account not charged yet takes the entries as its whole plan (a one-stage release).
  ReleaseBudget single(PrivacyLoss::pure(1.0), Accountant::basic);
  single.claim(pure_entry(0.5));
  EXPECT_TRUE(single.charged());
  EXPECT_EQ(single.ledger().size(), 1u);
}

TEST(Seam, ParallelCompositeChecksEachBlockBeforeItDraws) {
  ParallelComposite parts(PrivacyLoss::zcdp(0.1), Accountant::zcdp, "blocks");
  ReleaseBudget account(PrivacyLoss::approximate(5, 1e-6), Accountant::zcdp);  // rho 0.385
  account.charge(parts.planned());
  const auto half = GaussianMechanism::from_rho(1.0, 0.05);
  parts.add_block({half.ledger_entry("a"), half.ledger_entry("b")});
  EXPECT_THROW(parts.add_block({half.ledger_entry("a"), half.ledger_entry("b"),
                                half.ledger_entry("c")}),
               std::logic_error);
  parts.add_block({GaussianMechanism::from_rho(7.0, 0.1).ledger_entry("c")});
  account.claim(parts.entry());
  ASSERT_EQ(account.ledger().size(), 1u);
  EXPECT_EQ(account.ledger()[0].blocks.size(), 2u);
  EXPECT_NEAR(account.budget().spent().rho, 0.1, 1e-15);  // the worst block, not the sum
}

TEST(Seam, ACallerThatCannotCountZcdpIsChargedTheReleasesEpsilonDelta) {
  Budget caller(PrivacyLoss::approximate(10, 1e-5), Accountant::basic);
  ReleaseBudget account(PrivacyLoss::approximate(2, 1e-6), Accountant::zcdp, &caller);
  const auto g = GaussianMechanism::from_rho(1.0, 0.02);
  account.charge({g.ledger_entry("first"), g.ledger_entry("second")});
  SeededRng rng(1);
  const auto r = seal(Vector::Zero(1).eval(), account, SealFacts(true), rng);
  const auto spent = caller.spent();
  ASSERT_EQ(caller.ledger().size(), 1u);  // one entry: the release's own (epsilon, delta)
  EXPECT_GE(spent.epsilon, r.privacy.epsilon);
  EXPECT_NEAR(spent.epsilon, r.privacy.epsilon, 1e-12);
  EXPECT_EQ(spent.delta, r.privacy.delta);
  testing::expect_guarantee_from_ledger(r);
}

TEST(Seam, AbstentionHasOneShape) {
  ReleaseBudget account(PrivacyLoss::pure(1.0), Accountant::basic);
  account.charge(pure_entry(0.5));
  SeededRng rng(1);
  SealFacts facts(true);
  facts.abstained = "no populated bin";
  const auto r = seal(Vector::Ones(3).eval(), account, facts, rng);
  EXPECT_EQ(r.status, Status::abstained);
  EXPECT_EQ(r.estimate.size(), 0);
  EXPECT_EQ(r.diagnostics["abstained"], "no populated bin");
  EXPECT_EQ(r.ledger.size(), 1u);  // the budget of an abstention is spent
}

TEST(Seam, NonPrivateAndNoiselessAreNeverCertified) {
  SeededRng rng(1);
  const auto r = seal(Vector::Zero(1).eval(), ReleaseBudget::non_private(), SealFacts(false), rng);
  EXPECT_TRUE(std::isinf(r.privacy.epsilon));
  EXPECT_FALSE(r.privacy.certified);
  testing::expect_guarantee_from_ledger(r);
  ReleaseBudget account(PrivacyLoss::pure(1.0), Accountant::basic);
  account.charge(pure_entry(1));
  SealFacts facts(true);
  facts.noiseless = true;
  EXPECT_FALSE(seal(Vector::Zero(1).eval(), account, facts, rng).privacy.certified);
}

TEST(Seam, TargetsAndRunControlAreValidated) {
  EXPECT_THROW(validate(PrivacyTarget{}), InvalidArgument);  // epsilon not given
  EXPECT_THROW(validate(PrivacyTarget{.epsilon = 1, .delta = 0}, DeltaRule::positive),
               InvalidArgument);
  EXPECT_NO_THROW(validate(PrivacyTarget{.epsilon = 1, .delta = 1e-6}, DeltaRule::positive));
  EXPECT_THROW(validate(RunControl{.threads = 0}), InvalidArgument);
  EXPECT_THROW(validate(RunControl{.threads = 100000}), InvalidArgument);
  EXPECT_EQ(parse_enum<Profile>("paper"), Profile::paper);
  EXPECT_EQ(name_of(Profile::practical), "practical");
  try {
    parse_enum<Profile>("papr");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "profile must be one of 'practical', 'paper', got 'papr'");
  }
}

}  // namespace
}  // namespace dpstats

#include "dpstats/registry.hpp"

namespace dpstats {
namespace {

const std::vector<MethodInfo> kToyRegistry = {
    {"a", "first", {"alpha"}},
    {"b", "second", {"alpha", "topk_multiplier"}},
};

TEST(Registry, FindsMethodsAndRefusesOptionsThatDoNotApply) {
  EXPECT_EQ(find_method(kToyRegistry, "mean", "b").summary, "second");
  try {
    find_method(kToyRegistry, "mean", "c");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "method for mean must be one of 'a', 'b', got 'c'");
  }
  const std::vector<std::string> given = {"alpha", "topk_multiplier"};
  EXPECT_NO_THROW(check_options_apply(kToyRegistry, kToyRegistry[1], given));
  try {
    check_options_apply(kToyRegistry, kToyRegistry[0], given);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "topk_multiplier (--topk-multiplier) does not apply to method 'a'; it "
                           "applies to 'b'");
  }
}

}  // namespace
}  // namespace dpstats
