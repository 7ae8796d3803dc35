// Real-data-like tables for both fit tasks (issue #15; docs/results/real-data.md "fit"): columns
// in their own units, heavy tails and 5% corrupted rows, generated here (seeded). Each test runs
// the old silent unit scale (feature_bound = 1, moment_bound = 1, as the defaults were) and the
// new default (bounds estimated privately), and prints the rows of the results table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <vector>

#include "dpstats/heavy_tailed/heavy_tailed.hpp"
#include "dpstats/user_level/user_level.hpp"
#include "guarantee.hpp"

namespace dpstats::optimize {
namespace {

// Users x 10 rows: (1, age in years U(18, 80), income in dollars lognormal(ln 5e4, 0.5)); labels
// +-1 from a logistic model in those units; 5% of rows replaced by (1, 999, 9.9e6).
struct Table {
  RowMatrix X;
  Vector y;
  std::vector<std::int64_t> users;
};

Table people(std::int64_t n, std::int64_t m, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> age(18, 80), u(0, 1);
  std::lognormal_distribution<double> income(std::log(5e4), 0.5);
  Table t{RowMatrix(n * m, 3), Vector(n * m), {}};
  for (std::int64_t i = 0; i < n * m; ++i) {
    const double a = age(g), s = income(g);
    const double z = -0.5 + 0.04 * (a - 45) + 2e-5 * (s - 5e4);
    t.y[i] = u(g) < 1 / (1 + std::exp(-z)) ? 1 : -1;
    t.X.row(i) << 1, a, s;
    if (u(g) < 0.05) t.X.row(i) << 1, 999, 9.9e6;
    t.users.push_back(i / m);
  }
  return t;
}

// x . w, plus the intercept when the release has one (a centred fit: d + 1 entries).
Vector predict(const RowMatrix& X, const Vector& w) {
  if (w.size() == X.cols() + 1) return (X * w.head(X.cols())).array() + w[X.cols()];
  return X * w;
}

double logistic_risk(const RowMatrix& X, const Vector& y, const Vector& w) {
  const Vector f = predict(X, w);
  double s = 0;
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const double t = -y[i] * f[i];  // ln(1 + e^t) without overflow
    s += std::max(t, 0.0) + std::log1p(std::exp(-std::abs(t)));
  }
  return s / static_cast<double>(X.rows());
}

// 2000 users are too few for the private centring at epsilon = 1 (about 5 600 needed at d = 3).
// The previous default (centre unset then = centre = false now: bounds estimated, no intercept,
// raw units) returned status ok with a useless model; the new default runs the private offset
// check, finds the columns far from 0 (the constant column, age, income) and abstains with the
// reason and the number of users that would let it centre. The same table standardised by the
// analyst (robust: median and MAD per column, constant column dropped) runs, status ok.
// The entries of a ledger that ran (a reserved entry is a planned stage that never did).
std::size_t ran(const Ledger& l) {
  return static_cast<std::size_t>(
      std::count_if(l.begin(), l.end(), [](const LedgerEntry& e) { return !e.reserved; }));
}

TEST(FitRealData, UserLevelPeopleTableTooFewUsersAbstains) {
  const Table t = people(2000, 10, 1);
  const UserDataset data(t.X, t.y, t.users, 10);
  UserLevelOptions o;
  o.privacy = {1, 1e-6};
  o.domain_radius = 1;
  // The reference is the zero model (risk ln 2).
  const double f_ref = std::log(2.0);
  double before = 0, previous = 0;
  for (int s = 0; s < 5; ++s) {
    UserLevelOptions old = o, prev = o;
    old.feature_bound = 1;  // the old silent default
    prev.centre = false;    // the previous default's path
    SeededRng a(10 + s), b(10 + s), c(10 + s);
    const auto r_old = fit_user_level(data, old, a);
    const auto r_prev = fit_user_level(data, prev, b);
    const auto r_new = fit_user_level(data, o, c);
    dpstats::testing::expect_guarantee_from_ledger(r_old);
    dpstats::testing::expect_guarantee_from_ledger(r_prev);
    dpstats::testing::expect_guarantee_from_ledger(r_new);
    // The old bound clips nearly every user's rows: the release says so.
    EXPECT_TRUE(r_old.diagnostics["bounds"].contains("warnings"));
    ASSERT_EQ(r_new.status, Status::abstained) << r_new.diagnostics.dump();
    EXPECT_EQ(r_new.estimate.size(), 0);
    const std::string why = r_new.diagnostics["abstained"].get<std::string>();
    EXPECT_NE(why.find("far from 0"), std::string::npos) << why;
    EXPECT_NE(why.find("Give at least"), std::string::npos) << why;
    // The whole plan was charged; the feature_bound estimate and the offset check ran.
    EXPECT_EQ(ran(r_new.ledger), 2u) << ledger_json(r_new.ledger).dump(1);
    EXPECT_TRUE(r_new.diagnostics["stated_error"]["radius"].is_null());
    before += logistic_risk(t.X, t.y, r_old.estimate) - f_ref;
    previous += logistic_risk(t.X, t.y, r_prev.estimate) - f_ref;
    if (s == 0) std::cout << "abstained: " << why << "\n";
  }
  std::cout << "| fit user-level dp-gd-user, 2000 users | people (age, income, 5% corrupt) | excess "
               "logistic risk " << before / 5 << " (feature_bound 1), " << previous / 5
            << " (previous default: estimated bound, no intercept, status ok) | abstains with "
               "the reason (new default) |\n";
  EXPECT_GT(previous / 5, 1.0);  // the silent failure the check now catches
}

// Robustly standardised columns (median, 1.4826 MAD), the constant column dropped.
RowMatrix robust_standardise(const RowMatrix& X) {
  RowMatrix Z(X.rows(), X.cols() - 1);
  for (Eigen::Index j = 1; j < X.cols(); ++j) {
    std::vector<double> v, w;
    for (Eigen::Index i = 0; i < X.rows(); ++i) v.push_back(X(i, j));
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    const double med = *mid;
    for (double x : v) w.push_back(std::abs(x - med));
    const auto wm = w.begin() + static_cast<std::ptrdiff_t>(w.size() / 2);
    std::nth_element(w.begin(), wm, w.end());
    Z.col(j - 1) = (X.col(j).array() - med) / (1.4826 * *wm);
  }
  return Z;
}

TEST(FitRealData, UserLevelPeopleTableStandardisedRuns) {
  const Table t = people(2000, 10, 1);
  const RowMatrix Z = robust_standardise(t.X);
  const UserDataset data(Z, t.y, t.users, 10);
  // Scored on the clean rows (the corrupted ones carry labels drawn for their original features).
  std::vector<Eigen::Index> clean;
  for (Eigen::Index i = 0; i < t.X.rows(); ++i) {
    if (t.X(i, 1) != 999) clean.push_back(i);
  }
  RowMatrix Zc(static_cast<Eigen::Index>(clean.size()), Z.cols());
  Vector yc(static_cast<Eigen::Index>(clean.size()));
  for (std::size_t k = 0; k < clean.size(); ++k) {
    Zc.row(static_cast<Eigen::Index>(k)) = Z.row(clean[k]);
    yc[static_cast<Eigen::Index>(k)] = t.y[clean[k]];
  }
  UserLevelOptions o;
  o.privacy = {1, 1e-6};
  o.domain_radius = 1;
  double after = 0;
  for (int s = 0; s < 3; ++s) {
    SeededRng rng(10 + s);
    const auto r = fit_user_level(data, o, rng);
    dpstats::testing::expect_guarantee_from_ledger(r);
    ASSERT_EQ(r.status, Status::ok) << r.diagnostics.dump();
    EXPECT_TRUE(r.diagnostics["centring"].contains("offset_check"));
    after += logistic_risk(Zc, yc, r.estimate) - std::log(2.0);
  }
  std::cout << "| fit user-level dp-gd-user, 2000 users, standardised | people | excess logistic "
               "risk on the clean rows over the zero model " << after / 3 << " |\n";
  EXPECT_LT(after / 3, 0);  // better than the zero model
}

// The same people table with 6000 users (enough for the private centring at epsilon = 1, d = 3;
// the constant column is degenerate and dropped, the intercept takes its place): the previous
// default (centre = false: bounds estimated, no intercept) against the new one (centred).
TEST(FitRealData, UserLevelPeopleTableCentred) {
  const Table t = people(6000, 10, 3);
  const UserDataset data(t.X, t.y, t.users, 10);
  // Scored on the clean rows (the corrupted ones carry labels drawn for their original features).
  std::vector<Eigen::Index> clean;
  for (Eigen::Index i = 0; i < t.X.rows(); ++i) {
    if (t.X(i, 1) != 999) clean.push_back(i);
  }
  RowMatrix Xc(static_cast<Eigen::Index>(clean.size()), 3);
  Vector yc(static_cast<Eigen::Index>(clean.size()));
  for (std::size_t k = 0; k < clean.size(); ++k) {
    Xc.row(static_cast<Eigen::Index>(k)) = t.X.row(clean[k]);
    yc[static_cast<Eigen::Index>(k)] = t.y[clean[k]];
  }
  UserLevelOptions o;
  o.privacy = {1, 1e-6};
  o.domain_radius = 1;
  const double f_ref = std::log(2.0);
  double before = 0, after = 0;
  for (int s = 0; s < 3; ++s) {
    UserLevelOptions old = o;
    old.centre = false;
    SeededRng a(30 + s), b(30 + s);
    const auto r_old = fit_user_level(data, old, a);
    const auto r_new = fit_user_level(data, o, b);
    dpstats::testing::expect_guarantee_from_ledger(r_new);
    ASSERT_EQ(r_new.status, Status::ok) << r_new.diagnostics.dump();
    EXPECT_TRUE(r_new.diagnostics.value("intercept", false)) << r_new.diagnostics["centring"].dump();
    before += logistic_risk(Xc, yc, r_old.estimate) - f_ref;
    after += logistic_risk(Xc, yc, r_new.estimate) - f_ref;
  }
  std::cout << "| fit user-level dp-gd-user, 6000 users | people (age, income, 5% corrupt) | "
               "logistic risk on the clean rows minus ln 2: "
            << before / 3 << " (previous default, no intercept) | " << after / 3
            << " (centred, intercept) |\n";
  EXPECT_LT(after, 0);  // better than the zero model
  EXPECT_LT(after, before);
}

// Flights: features (distance in miles U(100, 2500), departure hour U(5, 23)), delay in minutes
// y = 0.02 distance + 1.5 (hour - 12) + 15 t_3 (heavy tails) plus, for 5% of the rows, a delay
// of 999 minutes and a distance of 9.9e4 (corrupted).
TEST(FitRealData, HeavyTailedFlightsTable) {
  std::mt19937_64 g(2);
  std::uniform_real_distribution<double> dist(100, 2500), hour(5, 23), u(0, 1);
  std::student_t_distribution<double> t3(3);
  const std::int64_t n = 20000;
  RowMatrix X(2 * n, 2);
  Vector y(2 * n);
  for (std::int64_t i = 0; i < 2 * n; ++i) {
    X.row(i) << dist(g), hour(g);
    y[i] = 0.02 * X(i, 0) + 1.5 * (X(i, 1) - 12) + 15 * t3(g);
    if (i < n && u(g) < 0.05) {
      X(i, 0) = 9.9e4;
      y[i] = 999;
    }
  }
  const RowMatrix Xtr = X.topRows(n), Xte = X.bottomRows(n);
  const Vector ytr = y.head(n), yte = y.tail(n);
  const auto risk = [&](const Vector& w) { return (predict(Xte, w) - yte).array().abs().mean(); };
  HeavyTailedOptions o;
  o.privacy.epsilon = 1;
  o.domain_radius = 5;
  HeavyTailedOptions ref = o;
  ref.method = HeavyTailedMethod::non_private;
  ref.privacy = {};
  SeededRng r0(1);
  const double f_ref = risk(fit_heavy_tailed(Xtr, ytr, ref, r0).estimate);
  double before = 0, after = 0, unit_new = 0, uncentred = 0;
  int ok_new = 0;
  for (int s = 0; s < 3; ++s) {
    HeavyTailedOptions prev = o;  // the previous default: no centring (card schedule)
    prev.centre = false;
    SeededRng d(20 + s);
    uncentred += risk(fit_heavy_tailed(Xtr, ytr, prev, d).estimate) - f_ref;
    HeavyTailedOptions old = o;
    old.method = HeavyTailedMethod::lipschitz_extension;  // the old default method
    old.moment_bound = 1;  // the old silent default
    HeavyTailedOptions unit = o;  // this release's default method with the old unit bound
    unit.moment_bound = 1;
    SeededRng a(20 + s), b(20 + s), c(20 + s);
    const auto r_old = fit_heavy_tailed(Xtr, ytr, old, a);
    const auto r_new = fit_heavy_tailed(Xtr, ytr, o, b);
    const auto r_unit = fit_heavy_tailed(Xtr, ytr, unit, c);
    dpstats::testing::expect_guarantee_from_ledger(r_new);
    before += r_old.status == Status::ok ? risk(r_old.estimate) - f_ref : NAN;
    unit_new += risk(r_unit.estimate) - f_ref;
    if (r_new.status == Status::ok) {
      ++ok_new;
      after += risk(r_new.estimate) - f_ref;
    }
    if (s == 0) {
      std::cout << "estimated " << r_new.diagnostics["scale"].dump() << "\ncentring "
                << r_new.diagnostics["centring"].dump() << "\n";
    }
  }
  std::cout << "| fit heavy-tailed " << name_of(o.method) << " (default) | flights (miles, hour; delay minutes; t_3, 5% "
               "corrupt) | excess absolute risk (minutes) "
            << before / 3 << " (moment_bound 1) | " << after / std::max(ok_new, 1)
            << " (estimated) | F_ref " << f_ref << " | default method with moment_bound 1: "
            << unit_new / 3 << " | previous default (no centring) " << uncentred / 3 << " |\n";
  // Centred with the card's long schedule (profile paper) this table gave -0.69 minutes
  // (docs/results/real-data.md); not rerun here to keep the default suite short.
  // The numbers docs/results/real-data.md quotes (seeded; measured 213.6, -0.954, 17.62, 7.81
  // after issue 27's fit changes), with room for another libm only: F_ref 17.6; the old default
  // loses 214 minutes; the default (estimated bound, centred) is below the non-private ERM's risk
  // (-0.95); the default method with the old unit bound 7.8. The run without centring (printed,
  // 4.73 now) is no longer the previous default's code, so the docs' -0.14 "before" is not
  // asserted (they say so).
  EXPECT_EQ(ok_new, 3);
  EXPECT_NEAR(f_ref, 17.62, 0.1);
  EXPECT_NEAR(before / 3, 213.6, 5);
  EXPECT_NEAR(after / ok_new, -0.954, 0.15);
  EXPECT_NEAR(unit_new / 3, 7.81, 0.4);
}

}  // namespace
}  // namespace dpstats::optimize
