// Budget JSON (the format of Python's Budget.save/load and the tool's --budget FILE) and ledger
// entries in the released quantity's units.
#include <gtest/gtest.h>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/privacy/budget_json.hpp"
#include "dpstats/release.hpp"

namespace dpstats {
namespace {

LedgerEntry entry(PrivacyLoss loss, const char* mech = "laplace") {
  return {mech, "test", 1.0, 2.0, loss, 1};
}

TEST(BudgetJson, RoundTripsEveryLossKindAndKeepsTheSpend) {
  Budget b(PrivacyLoss::approximate(4, 1e-5), Accountant::zcdp);
  b.spend(entry(PrivacyLoss::pure(0.5)));
  b.spend(entry(PrivacyLoss::zcdp(0.1), "gaussian"));
  b.spend(entry(PrivacyLoss::approximate(0.3, 1e-7), "stability_histogram"));
  LedgerEntry folded = entry(PrivacyLoss::zcdp(0.01, 1e-8));
  folded.count = 7;
  b.spend(folded);
  const auto text = budget_to_json(b).dump();
  const Budget back = budget_from_json(nlohmann::json::parse(text));
  EXPECT_EQ(back.accountant(), Accountant::zcdp);
  ASSERT_EQ(back.ledger().size(), 4u);
  EXPECT_EQ(back.ledger()[3].count, 7);
  EXPECT_EQ(back.spent().rho, b.spent().rho);
  EXPECT_EQ(back.spent_epsilon_delta().epsilon, b.spent_epsilon_delta().epsilon);
  EXPECT_EQ(back.spent_epsilon_delta().delta, b.spent_epsilon_delta().delta);
}

TEST(BudgetJson, GdpAndRhoTotalsRoundTrip) {
  Budget g(PrivacyLoss::gdp(1.5), Accountant::gdp);
  g.spend(entry(PrivacyLoss::gdp(0.5), "gaussian"));
  const Budget g2 = budget_from_json(budget_to_json(g));
  EXPECT_EQ(g2.total().mu, 1.5);
  EXPECT_EQ(g2.spent().mu, g.spent().mu);
  Budget z(PrivacyLoss::zcdp(0.5, 1e-6), Accountant::zcdp);
  const Budget z2 = budget_from_json(budget_to_json(z));
  EXPECT_EQ(z2.total().rho, 0.5);
  EXPECT_EQ(z2.total().delta, 1e-6);
}

TEST(BudgetJson, RefusesAFileWhoseLedgerExceedsItsTotal) {
  Budget b(PrivacyLoss::pure(1), Accountant::basic);
  b.spend(entry(PrivacyLoss::pure(0.9)));
  auto j = budget_to_json(b);
  j["total"]["epsilon"] = 0.5;  // edited by hand below what was spent
  EXPECT_THROW(budget_from_json(j), BudgetExceeded);
}

TEST(BudgetJson, NamesTheBadField) {
  Budget b(PrivacyLoss::pure(1), Accountant::basic);
  auto j = budget_to_json(b);
  j.erase("accountant");
  try {
    budget_from_json(j);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("accountant"), std::string::npos);
  }
  EXPECT_THROW(budget_from_json(nlohmann::json::parse(R"({"format":"x"})")), InvalidArgument);
  EXPECT_THROW(parse_accountant("rdp2"), InvalidArgument);
}

TEST(LedgerUnits, OutputUnitsShowTheReleasedQuantityAndKeepTheLattice) {
  // A mean released from an exact sum: one sum unit is width / (n Q) of the mean.
  const double Q = 68719476736.0, per_unit = 8.0 / (1000 * Q);
  LaplaceMechanism lap(Q, 1.0);
  const LedgerEntry e = in_output_units(lap.ledger_entry("clipped sum"), per_unit);
  const auto j = ledger_json({e})[0];
  EXPECT_DOUBLE_EQ(j["sensitivity"].get<double>(), 8.0 / 1000);
  EXPECT_NEAR(j["noise_scale"].get<double>(), 8.0 / 1000, 1e-8);
  EXPECT_EQ(j["lattice"]["sensitivity"].get<double>(), Q);
  // and the budget file keeps the encoding's numbers exactly
  Budget b(PrivacyLoss::pure(1), Accountant::basic);
  b.spend(e);
  const Budget back = budget_from_json(budget_to_json(b));
  EXPECT_EQ(back.ledger()[0].sensitivity, Q);
  EXPECT_EQ(back.ledger()[0].output_per_unit, per_unit);
  EXPECT_FALSE(ledger_json({lap.ledger_entry("x")})[0].contains("lattice"));
  EXPECT_THROW(in_output_units(e, 0.0), InvalidArgument);
}

}  // namespace
}  // namespace dpstats
