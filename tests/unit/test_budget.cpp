// Budget: refuses the spend that would exceed, records nothing on refusal, accepts an exact fill,
// and counts each loss kind with the right accountant.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "dpstats/error.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats {
namespace {

template <class F>
void expect_invalid(F f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected an InvalidArgument naming '" << needle << "'";
  } catch (const BudgetExceeded& e) {
    ADD_FAILURE() << "BudgetExceeded where misuse was expected: " << e.what();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

LedgerEntry entry(PrivacyLoss loss, int count = 1, std::string mechanism = "laplace") {
  LedgerEntry e;
  e.mechanism = std::move(mechanism);
  e.purpose = "test";
  e.sensitivity = 1;
  e.loss = loss;
  e.count = count;
  return e;
}

// Spends `e` and expects a refusal that leaves the budget untouched.
void expect_refused(Budget& b, const LedgerEntry& e) {
  const auto before = b.ledger().size();
  const PrivacyLoss spent_before = b.spent();
  EXPECT_FALSE(b.fits(e));
  EXPECT_THROW(b.spend(e), BudgetExceeded);
  EXPECT_EQ(b.ledger().size(), before);
  EXPECT_EQ(b.spent().epsilon, spent_before.epsilon);
  EXPECT_EQ(b.spent().delta, spent_before.delta);
  EXPECT_EQ(b.spent().rho, spent_before.rho);
  EXPECT_EQ(b.spent().mu, spent_before.mu);
}

TEST(Budget, BasicAcceptsExactFillAndRefusesMore) {
  Budget b(PrivacyLoss::approximate(1.0, 1e-6), Accountant::basic);
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(b.fits(entry(PrivacyLoss::pure(0.1))));
    b.spend(entry(PrivacyLoss::pure(0.1)));
  }
  EXPECT_EQ(b.ledger().size(), 10u);
  EXPECT_NEAR(b.spent().epsilon, 1.0, 1e-15);
  EXPECT_GE(static_cast<long double>(b.spent().epsilon), 10 * 0.1L);  // reported, never below
  EXPECT_EQ(b.spent().kind, LossKind::pure);
  expect_refused(b, entry(PrivacyLoss::pure(1e-9)));
  // Delta is still free to spend with epsilon 0.
  b.spend(entry(PrivacyLoss::approximate(0, 1e-6)));
  expect_refused(b, entry(PrivacyLoss::approximate(0, 1e-15)));
  const PrivacyLoss s = b.spent_epsilon_delta();
  EXPECT_NEAR(s.epsilon, 1.0, 1e-15);
  EXPECT_NEAR(s.delta, 1e-6, 1e-21);
}

TEST(Budget, RefusalMessageShowsSpendSpentAndTotal) {
  Budget b(PrivacyLoss::pure(1.0), Accountant::basic);
  b.spend(entry(PrivacyLoss::pure(0.75)));
  try {
    b.spend(entry(PrivacyLoss::pure(0.5), 1, "gaussian"));
    ADD_FAILURE() << "expected BudgetExceeded";
  } catch (const BudgetExceeded& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("epsilon=0.5"), std::string::npos) << msg;   // requested
    EXPECT_NE(msg.find("epsilon=0.75"), std::string::npos) << msg;  // already spent
    EXPECT_NE(msg.find("epsilon=1"), std::string::npos) << msg;     // total
    EXPECT_NE(msg.find("gaussian"), std::string::npos) << msg;
  }
  EXPECT_EQ(b.ledger().size(), 1u);
}

TEST(Budget, BasicCountsAndSplits) {
  Budget b(PrivacyLoss::approximate(2.0, 1e-5), Accountant::basic);
  EXPECT_FALSE(b.fits(entry(PrivacyLoss::approximate(0.2, 1e-6), 11)));
  b.spend(entry(PrivacyLoss::approximate(0.2, 1e-6), 10));
  EXPECT_NEAR(b.spent().epsilon, 2.0, 1e-15);
  EXPECT_NEAR(b.spent().delta, 1e-5, 1e-20);
  EXPECT_EQ(b.spent().kind, LossKind::approximate);
  expect_refused(b, entry(PrivacyLoss::pure(1e-6)));
  // A budget split in floating point the way algorithms do it: share + (total - share).
  for (double eps : {0.7, 1.3, 3.9, 0.1}) {
    Budget split(PrivacyLoss::approximate(eps, 1e-6), Accountant::basic);
    const double share = eps * 0.3;
    split.spend(entry(PrivacyLoss::approximate(share, 1e-6 * 0.3)));
    split.spend(entry(PrivacyLoss::approximate(eps - share, 1e-6 - 1e-6 * 0.3)));
    EXPECT_EQ(split.ledger().size(), 2u);
  }
}

TEST(Budget, PureTotalRefusesDelta) {
  Budget b(PrivacyLoss::pure(1.0), Accountant::basic);
  expect_refused(b, entry(PrivacyLoss::approximate(0.1, 1e-9)));
  b.spend(entry(PrivacyLoss::approximate(0.1, 0)));
}

TEST(Budget, BasicRefusesZcdpAndGdpEntries) {
  Budget b(PrivacyLoss::approximate(1.0, 1e-6), Accountant::basic);
  expect_invalid([&] { b.spend(entry(PrivacyLoss::zcdp(0.01))); }, "basic");
  expect_invalid([&] { b.fits(entry(PrivacyLoss::gdp(0.1))); }, "basic");
  EXPECT_TRUE(b.ledger().empty());
}

TEST(Budget, ZcdpApproximateTargetAcceptsUpToTheConvertedRho) {
  const double eps = 1.0, delta = 1e-6;
  const double rho = epsilon_delta_to_zcdp(eps, delta);
  {
    Budget b(PrivacyLoss::approximate(eps, delta), Accountant::zcdp);
    b.spend(entry(PrivacyLoss::zcdp(rho), 1, "gaussian"));
    EXPECT_GE(b.spent().rho, rho);  // the reported sum is rounded up
    EXPECT_NEAR(b.spent().rho, rho, 1e-15 * rho);
    const PrivacyLoss ed = b.spent_epsilon_delta();
    EXPECT_LE(ed.epsilon, eps);
    EXPECT_EQ(ed.delta, delta);
    expect_refused(b, entry(PrivacyLoss::zcdp(rho * 1e-6)));
  }
  {
    Budget b(PrivacyLoss::approximate(eps, delta), Accountant::zcdp);
    expect_refused(b, entry(PrivacyLoss::zcdp(rho * (1 + 1e-9))));
    // Two halves fill it as well.
    b.spend(entry(PrivacyLoss::zcdp(rho / 2)));
    b.spend(entry(PrivacyLoss::zcdp(rho / 2)));
    EXPECT_EQ(b.ledger().size(), 2u);
  }
}

TEST(Budget, ZcdpCountsPureAndApproximateEntries) {
  // Pure epsilon counts as epsilon^2 / 2: ten spends of 0.1 are rho = 0.05.
  Budget b(PrivacyLoss::zcdp(0.05), Accountant::zcdp);
  for (int i = 0; i < 10; ++i) b.spend(entry(PrivacyLoss::pure(0.1)));
  EXPECT_NEAR(b.spent().rho, 0.05, 1e-16);
  expect_refused(b, entry(PrivacyLoss::pure(1e-4)));
  // A rho cap with zero delta refuses approximate entries.
  Budget c(PrivacyLoss::zcdp(1.0), Accountant::zcdp);
  expect_refused(c, entry(PrivacyLoss::approximate(0.1, 1e-9)));
  // Approximate (eps, delta) counts as delta-approximate eps^2/2-zCDP against an (eps, delta) target.
  Budget t(PrivacyLoss::approximate(1.0, 1e-5), Accountant::zcdp);
  t.spend(entry(PrivacyLoss::approximate(0.1, 5e-6), 1, "stability_histogram"));
  EXPECT_NEAR(t.spent().rho, 0.005, 1e-17);
  EXPECT_NEAR(t.spent().delta, 5e-6, 1e-21);
  const PrivacyLoss ed = t.spent_epsilon_delta();
  EXPECT_NEAR(ed.epsilon, zcdp_to_epsilon(0.005, 5e-6), 1e-12);
  EXPECT_EQ(ed.delta, 1e-5);
  // The spent delta leaves 5e-6 for the conversion: rho may only grow to what that allows.
  const double room = epsilon_delta_to_zcdp(1.0, 5e-6) - 0.005;
  expect_refused(t, entry(PrivacyLoss::zcdp(room * (1 + 1e-6))));
  t.spend(entry(PrivacyLoss::zcdp(room * (1 - 1e-6))));
  // Spending all the delta leaves no room for any rho.
  Budget d(PrivacyLoss::approximate(1.0, 1e-5), Accountant::zcdp);
  d.spend(entry(PrivacyLoss::approximate(0, 1e-5)));
  expect_refused(d, entry(PrivacyLoss::zcdp(1e-12)));
  // A rho cap with a delta cap: deltas add up to the cap.
  Budget cap(PrivacyLoss::zcdp(0.5, 1e-6), Accountant::zcdp);
  cap.spend(entry(PrivacyLoss::zcdp(0.25, 5e-7), 2));
  EXPECT_NEAR(cap.spent().delta, 1e-6, 1e-21);
  expect_refused(cap, entry(PrivacyLoss::zcdp(0, 1e-12)));
  expect_invalid([&] { cap.spend(entry(PrivacyLoss::gdp(0.1))); }, "zcdp");
}

TEST(Budget, ZcdpSpentEpsilonDelta) {
  Budget b(PrivacyLoss::zcdp(1.0), Accountant::zcdp);
  b.spend(entry(PrivacyLoss::zcdp(0.5)));
  expect_invalid([&] { b.spent_epsilon_delta(); }, "delta");
  const PrivacyLoss ed = b.spent_epsilon_delta(1e-5);
  EXPECT_EQ(ed.kind, LossKind::approximate);
  EXPECT_NEAR(ed.epsilon, 4.7284, 5e-5);
  EXPECT_EQ(ed.delta, 1e-5);
  expect_invalid([&] { b.spent_epsilon_delta(0.0); }, "delta");
  Budget basic(PrivacyLoss::pure(1), Accountant::basic);
  expect_invalid([&] { basic.spent_epsilon_delta(1e-6); }, "delta");
}

TEST(Budget, GdpAddsMuSquared) {
  Budget b(PrivacyLoss::gdp(1.0), Accountant::gdp);
  b.spend(entry(PrivacyLoss::gdp(0.6), 1, "gaussian"));
  b.spend(entry(PrivacyLoss::gdp(0.8), 1, "gaussian"));
  EXPECT_NEAR(b.spent().mu, 1.0, 1e-15);
  EXPECT_GE(b.spent().mu, std::sqrt(0.6 * 0.6 + 0.8 * 0.8));
  expect_refused(b, entry(PrivacyLoss::gdp(1e-3)));
  const PrivacyLoss ed = b.spent_epsilon_delta(1e-5);
  EXPECT_EQ(ed.epsilon, gdp_to_epsilon(b.spent().mu, 1e-5));
  // count: four copies of mu = 0.5 are mu = 1.
  Budget c(PrivacyLoss::gdp(1.0), Accountant::gdp);
  c.spend(entry(PrivacyLoss::gdp(0.5), 4));
  EXPECT_NEAR(c.spent().mu, 1.0, 1e-15);
  expect_invalid([&] { c.spend(entry(PrivacyLoss::pure(0.1))); }, "gdp");
  expect_invalid([&] { c.spend(entry(PrivacyLoss::zcdp(0.1))); }, "gdp");
}

TEST(Budget, GdpApproximateTarget) {
  const double mu = epsilon_delta_to_gdp(1.0, 1e-5);
  Budget b(PrivacyLoss::approximate(1.0, 1e-5), Accountant::gdp);
  expect_refused(b, entry(PrivacyLoss::gdp(mu * (1 + 1e-9))));
  b.spend(entry(PrivacyLoss::gdp(mu)));
  const PrivacyLoss ed = b.spent_epsilon_delta();
  EXPECT_LE(ed.epsilon, 1.0 * (1 + 1e-12));
  EXPECT_EQ(ed.delta, 1e-5);
  expect_refused(b, entry(PrivacyLoss::gdp(1e-4)));
}

TEST(Budget, InvalidTotalsAndEntries) {
  expect_invalid([] { Budget(PrivacyLoss::zcdp(0.5), Accountant::basic); }, "basic");
  expect_invalid([] { Budget(PrivacyLoss::gdp(1), Accountant::basic); }, "basic");
  expect_invalid([] { Budget(PrivacyLoss::pure(1), Accountant::zcdp); }, "zcdp");
  expect_invalid([] { Budget(PrivacyLoss::approximate(1, 0), Accountant::gdp); }, "gdp");
  expect_invalid([] { Budget(PrivacyLoss::zcdp(0.5), Accountant::gdp); }, "gdp");
  expect_invalid([] { Budget(PrivacyLoss::pure(0), Accountant::basic); }, "total.epsilon");
  PrivacyLoss bad_total = PrivacyLoss::pure(1);
  bad_total.epsilon = NAN;
  expect_invalid([&] { Budget(bad_total, Accountant::basic); }, "total.epsilon");
  Budget b(PrivacyLoss::approximate(1, 1e-6), Accountant::basic);
  expect_invalid([&] { b.spend(entry(PrivacyLoss::pure(0.1), 0)); }, "count");
  PrivacyLoss bad = PrivacyLoss::pure(0.1);
  bad.epsilon = -0.1;
  expect_invalid([&] { b.spend(entry(bad)); }, "entry.loss.epsilon");
  bad = PrivacyLoss::approximate(0.1, 0.1);
  bad.delta = 2;
  expect_invalid([&] { b.fits(entry(bad)); }, "entry.loss.delta");
  EXPECT_TRUE(b.ledger().empty());
  EXPECT_STREQ(to_string(Accountant::zcdp), "zcdp");
}

}  // namespace
}  // namespace dpstats
