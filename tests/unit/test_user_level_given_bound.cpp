// A user-level fit with a supplied feature_bound (issue 27 case 5): the bound gives the norms, not
// the location, so the fit still centres and fits an intercept (or says why not), and the clip
// report is counted against the bound the raw rows are clipped at, warning only when the private
// count's lower confidence bound says the bound bites.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "dpstats/random/rng.hpp"
#include "dpstats/user_level/user_level.hpp"
#include "guarantee.hpp"

using namespace dpstats;
using namespace dpstats::optimize;

namespace {

struct Users {
  RowMatrix X;
  Vector y;
  std::vector<std::int64_t> ids;
};

// m rows per user: age (years, ~ 42 +- 12, per user) and weekly hours (~ 38 +- 8); the label is
// logistic in the standardised columns. Every row's norm is below 120.
Users ages_and_hours(int users, int m, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unif;
  Users u{RowMatrix(users * m, 2), Vector(users * m), {}};
  for (int i = 0; i < users; ++i) {
    const double age = std::clamp(42 + 12 * normal(gen), 18.0, 90.0);
    for (int k = 0; k < m; ++k) {
      const Eigen::Index r = i * m + k;
      u.X(r, 0) = age + normal(gen);
      u.X(r, 1) = std::clamp(38 + 8 * normal(gen), 0.0, 80.0);
      const double z = 1.2 * (u.X(r, 0) - 42) / 12 + 0.8 * (u.X(r, 1) - 38) / 8 + 0.3;
      u.y[r] = unif(gen) < 1 / (1 + std::exp(-z)) ? 1 : -1;
      u.ids.push_back(i);
    }
  }
  return u;
}

double log_loss(const Vector& wb, const Users& t) {
  double total = 0;
  for (Eigen::Index i = 0; i < t.X.rows(); ++i) {
    const double margin = t.y[i] * (t.X.row(i).dot(wb.head(2)) + wb[2]);
    total += std::log1p(std::exp(-margin));
  }
  return total / static_cast<double>(t.X.rows());
}

UserLevelOptions logistic_fit(std::optional<double> feature_bound) {
  UserLevelOptions o;
  o.privacy = {1.0, 1e-6};
  o.domain_radius = 10;
  o.feature_bound = feature_bound;
  return o;
}

}  // namespace

// 200 users far from 0 (the reporter's case): too few to centre, so the offset check runs even
// though the bound is given, and the release abstains saying how many users would centre; the
// bound clips no row, and the report raises no warning.
TEST(UserLevelGivenBound, TooFewUsersToCentreAbstainsInsteadOfAFitWithoutIntercept) {
  const Users t = ages_and_hours(200, 5, 1);
  for (std::uint64_t seed : {2, 3, 4}) {
    SeededRng rng(seed);
    const auto r = fit_user_level(UserDataset(t.X, t.y, t.ids, 5), logistic_fit(120), rng);
    dpstats::testing::expect_guarantee_from_ledger(r);
    ASSERT_EQ(r.status, Status::abstained);
    const std::string why = r.diagnostics["abstained"].get<std::string>();
    EXPECT_NE(why.find("too few for a private centring"), std::string::npos) << why;
    EXPECT_NE(why.find("Give at least"), std::string::npos) << why;
    const auto& report = r.diagnostics["bounds"]["feature_bound"];
    EXPECT_FALSE(report.contains("warning")) << report.dump();
    EXPECT_EQ(report["clipped_users_fraction_lower_95"].get<double>(), 0.0);
  }
}

// No bound given and 200 users at epsilon 0.3: the feature bound's rank error alone (public
// values: the number of users is public under replace-one) rules the estimate out, so the fit
// abstains before charging anything, naming the estimate and what would suffice.
TEST(UserLevelGivenBound, AnEstimateTheUsersCannotCarryAbstainsBeforeCharging) {
  const Users t = ages_and_hours(200, 5, 1);
  UserLevelOptions o = logistic_fit(std::nullopt);
  o.privacy = {0.3, 1e-6};
  Budget budget(PrivacyLoss::approximate(1, 1e-5), Accountant::basic);
  SeededRng rng(2);
  const auto r = fit_user_level(UserDataset(t.X, t.y, t.ids, 5), o, rng, &budget);
  ASSERT_EQ(r.status, Status::abstained);
  const std::string why = r.diagnostics["abstained"].get<std::string>();
  EXPECT_NE(why.find("feature_bound (the 0.5 quantile"), std::string::npos) << why;
  EXPECT_NE(why.find("give --feature-bound (Python: feature_bound=)"), std::string::npos) << why;
  EXPECT_NE(why.find("users at this epsilon"), std::string::npos) << why;  // counted in users
  EXPECT_TRUE(r.ledger.empty());
  EXPECT_TRUE(budget.ledger().empty());
  EXPECT_EQ(r.privacy.epsilon, 0);
}

// Enough users to centre: with a bound above every row the fit centres, fits an intercept and
// reaches about the loss of the fit whose bound was estimated, far below predicting nothing
// (ln 2); the standardised rows' bound is derived from the given one and stated.
TEST(UserLevelGivenBound, EnoughUsersCentreAndFitAnIntercept) {
  const Users train = ages_and_hours(5000, 3, 5), test = ages_and_hours(3000, 1, 6);
  double given = 0, estimated = 0;
  for (std::uint64_t seed : {7, 8, 9}) {
    SeededRng a(seed), b(seed);
    const UserDataset data(train.X, train.y, train.ids, 3);
    const auto r = fit_user_level(data, logistic_fit(120), a);
    const auto e = fit_user_level(data, logistic_fit(std::nullopt), b);
    dpstats::testing::expect_guarantee_from_ledger(r);
    ASSERT_EQ(r.status, Status::ok) << r.diagnostics.dump();
    ASSERT_EQ(e.status, Status::ok) << e.diagnostics.dump();
    ASSERT_EQ(r.estimate.size(), 3);  // (w_age, w_hours, intercept), the user's units
    EXPECT_TRUE(r.diagnostics["intercept"].get<bool>());
    const auto& report = r.diagnostics["bounds"]["feature_bound"];
    EXPECT_GT(report["standardised_bound"].get<double>(), 1);
    EXPECT_FALSE(report.contains("warning")) << report.dump();
    given += log_loss(r.estimate, test) / 3;
    estimated += log_loss(e.estimate, test) / 3;
  }
  std::printf("5000 users, eps 1: test log loss %.3f (feature_bound 120), %.3f (estimated)\n",
              given, estimated);
  EXPECT_LT(given, 0.6);
  EXPECT_LT(given, estimated + 0.05);
}

// A bound below most rows' norms bites: the report, counted on the raw rows against that bound,
// warns; one above every row does not (its private count is noise around 0).
TEST(UserLevelGivenBound, ClipWarningIsCountedAgainstTheBoundUsed) {
  const Users train = ages_and_hours(5000, 3, 10);
  for (double bound : {40.0, 120.0}) {
    SeededRng rng(11);
    const auto r =
        fit_user_level(UserDataset(train.X, train.y, train.ids, 3), logistic_fit(bound), rng);
    ASSERT_EQ(r.status, Status::ok);
    const auto& report = r.diagnostics["bounds"]["feature_bound"];
    EXPECT_EQ(report["value"].get<double>(), bound);
    EXPECT_EQ(report.contains("warning"), bound < 50) << report.dump();
    if (bound < 50) EXPECT_GT(report["clipped_users_fraction_lower_95"].get<double>(), 0.5);
  }
}

// Class labels far from balanced (issue 30): 2000 centred users, 5% of them positive. Too few
// users to centre, and a fit without an intercept cannot express the 5% base rate (it released a
// log loss of 0.67 where the constant 5% predicts 0.20, status ok): the offset check now checks
// the +-1 labels too, and the release abstains naming the class labels and how many users would
// fit an intercept, without advising hand-centred features (which would not help). With enough
// users the centred fit with an intercept beats the constant.
TEST(UserLevelGivenBound, UnbalancedClassesWithoutAnInterceptAbstain) {
  std::mt19937_64 gen(5);
  std::normal_distribution<double> normal;
  const auto table = [&](int users) {
    Users u{RowMatrix(2 * users, 2), Vector(2 * users), {}};
    for (Eigen::Index r = 0; r < u.X.rows(); ++r) {
      u.X(r, 0) = normal(gen), u.X(r, 1) = normal(gen);
      u.y[r] = u.X(r, 0) > 1.645 ? 1 : 0;  // {0, 1}: mapped to +-1 as for the fit
      u.ids.push_back(r / 2);
    }
    return u;
  };
  const Users few = table(2000), many = table(8000);
  for (std::uint64_t seed : {1, 2}) {
    SeededRng rng(seed);
    const auto r = fit_user_level(UserDataset(few.X, few.y, few.ids, 2), logistic_fit(std::nullopt), rng);
    dpstats::testing::expect_guarantee_from_ledger(r);
    ASSERT_EQ(r.status, Status::abstained) << r.diagnostics.dump();
    const std::string why = r.diagnostics["abstained"].get<std::string>();
    EXPECT_NE(why.find("the class labels are unbalanced (one class under 10%"), std::string::npos) << why;
    EXPECT_NE(why.find("Give at least"), std::string::npos) << why;
    EXPECT_EQ(why.find("supply centred"), std::string::npos) << why;
  }
  SeededRng rng(3);
  const auto r = fit_user_level(UserDataset(many.X, many.y, many.ids, 2), logistic_fit(std::nullopt), rng);
  ASSERT_EQ(r.status, Status::ok) << r.diagnostics.dump();
  EXPECT_TRUE(r.diagnostics.value("intercept", false));
  Users pm = many;
  pm.y = (2 * many.y.array() - 1).matrix();
  EXPECT_LT(log_loss(r.estimate, pm), 0.15);  // the constant 5%: 0.199
}
