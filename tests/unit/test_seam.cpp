// The seam's charge and seal: all-or-nothing charges against the release's and the caller's
// budgets, the guarantee read from the budget, and the one abstention convention.
#include <gtest/gtest.h>

#include "dpstats/data/matrix.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
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
  const auto r = seal(Vector::Zero(2).eval(), account, {}, rng);
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
  // A second release against the same caller cannot spend what the first did.
  ReleaseBudget second(PrivacyLoss::pure(1.0), Accountant::basic, &caller);
  EXPECT_FALSE(second.fits({pure_entry(0.6)}));
  EXPECT_THROW(second.charge(pure_entry(0.6)), BudgetExceeded);
  EXPECT_TRUE(second.budget().ledger().empty());
  second.charge(pure_entry(0.4));
  EXPECT_NEAR(caller.spent().epsilon, 1.0, 1e-12);
}

TEST(Seam, ACallerThatCannotCountZcdpIsChargedTheReleasesEpsilonDelta) {
  Budget caller(PrivacyLoss::approximate(10, 1e-5), Accountant::basic);
  ReleaseBudget account(PrivacyLoss::approximate(2, 1e-6), Accountant::zcdp, &caller);
  const auto g = GaussianMechanism::from_rho(1.0, 0.02);
  account.charge(g.ledger_entry("first"));
  account.charge(g.ledger_entry("second"));
  SeededRng rng(1);
  const auto r = seal(Vector::Zero(1).eval(), account, {}, rng);
  const auto spent = caller.spent();
  EXPECT_GE(spent.epsilon, r.privacy.epsilon);
  EXPECT_NEAR(spent.epsilon, r.privacy.epsilon, 1e-12);
  EXPECT_EQ(spent.delta, r.privacy.delta);
  testing::expect_guarantee_from_ledger(r);
}

TEST(Seam, AbstentionHasOneShape) {
  ReleaseBudget account(PrivacyLoss::pure(1.0), Accountant::basic);
  account.charge(pure_entry(0.5));
  SeededRng rng(1);
  SealFacts facts;
  facts.abstained = "no populated bin";
  const auto r = seal(Vector::Ones(3).eval(), account, facts, rng);
  EXPECT_EQ(r.status, Status::abstained);
  EXPECT_EQ(r.estimate.size(), 0);
  EXPECT_EQ(r.diagnostics["abstained"], "no populated bin");
  EXPECT_EQ(r.ledger.size(), 1u);  // the budget of an abstention is spent
}

TEST(Seam, NonPrivateAndNoiselessAreNeverCertified) {
  SeededRng rng(1);
  const auto r = seal(Vector::Zero(1).eval(), ReleaseBudget::non_private(), {}, rng);
  EXPECT_TRUE(std::isinf(r.privacy.epsilon));
  EXPECT_FALSE(r.privacy.certified);
  testing::expect_guarantee_from_ledger(r);
  ReleaseBudget account(PrivacyLoss::pure(1.0), Accountant::basic);
  account.charge(pure_entry(1));
  SealFacts facts;
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
