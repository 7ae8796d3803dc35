// The private scale layer (include/dpstats/scale/): option checks, ledger = Budget, degenerate and
// insufficient-data flags, and accuracy that must hold at every scale (issue #15): equivariance
// under x -> a x + b for a in {1e-3, 1, 1e3}, b = 1e4 a sigma, with 5% corrupted rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dpstats/data/non_finite_cell.hpp"
#include "dpstats/error.hpp"
#include "dpstats/scale/adaptive_clip.hpp"
#include "dpstats/scale/bounds.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/scale/share.hpp"
#include "guarantee.hpp"

namespace dpstats {
namespace {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument thrown";
  return {};
}

// n rows: column 0 ~ N(0, 1), column 1 ~ Student-t(3); the first `corrupt` fraction of rows is
// set to `far` in every column.
RowMatrix gaussian_t_table(std::size_t n, double corrupt, double far, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal;
  std::student_t_distribution<double> t3(3.0);
  RowMatrix X(static_cast<Eigen::Index>(n), 2);
  const auto bad = static_cast<Eigen::Index>(corrupt * static_cast<double>(n));
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    X(i, 0) = i < bad ? far : normal(gen);
    X(i, 1) = i < bad ? far : t3(gen);
  }
  return X;
}

double median_of(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Non-private truth of the clean rows: median and 1.4826 MAD of column j from row `from` on.
std::pair<double, double> clean_truth(const RowMatrix& X, Eigen::Index j, Eigen::Index from) {
  std::vector<double> v;
  for (Eigen::Index i = from; i < X.rows(); ++i) v.push_back(X(i, j));
  const double m = median_of(v);
  for (double& x : v) x = std::fabs(x - m);
  return {m, 1.482602218505602 * median_of(v)};
}

TEST(ScaleGrid, LogGridCoversEveryDouble) {
  const auto g = log_grid(32);
  EXPECT_EQ(g.front(), -std::numeric_limits<double>::max());
  EXPECT_EQ(g.back(), std::numeric_limits<double>::max());
  EXPECT_TRUE(std::is_sorted(g.begin(), g.end()));
  EXPECT_EQ(std::adjacent_find(g.begin(), g.end()), g.end());
  const auto nn = log_grid(32, true);
  EXPECT_EQ(nn.front(), 0.0);
  EXPECT_EQ(nn.size() * 2 - 1, g.size());
  EXPECT_NE(error_of([] { log_grid(0); }).find("per_octave"), std::string::npos);
}

TEST(ScaleGrid, CellHoldsTheQuantileWhenTheBulkIsBetweenTwoPoints) {
  // All values inside one cell of a coarse grid: the point quality would tie everywhere.
  std::vector<double> v(2000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 1e4 + 1e-3 * static_cast<double>(i);
  const auto g = log_grid(4);
  SeededRng rng(1);
  const GridCell c = grid_quantile_cell(v, g, 0.5, 1.0, rng);
  EXPECT_LE(c.lo, 1e4 + 1.0);
  EXPECT_GT(c.hi, 1e4 + 1.0);
}

TEST(Scale, OptionsAreCheckedBeforeAnything) {
  RowMatrix X = gaussian_t_table(100, 0, 0, 1);
  ReleaseBudget budget(PrivacyLoss::pure(1), Accountant::basic);
  SeededRng rng(1);
  ScaleOptions o;
  o.widen = -1;
  EXPECT_NE(error_of([&] { private_scale(X, o, budget, rng); }).find("widen must be in (0, 1e6]"),
            std::string::npos);
  o = {};
  o.loss = PrivacyLoss::approximate(1, 1e-6);
  EXPECT_NE(error_of([&] { private_scale(X, o, budget, rng); }).find("loss must be"),
            std::string::npos);
  o = {};
  o.alpha = 0.4;
  EXPECT_NE(error_of([&] { private_scale(X, o, budget, rng); }).find("alpha"), std::string::npos);
  o = {};
  X(3, 1) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(error_of([&] { private_scale(X, o, budget, rng); }).find("row 4, column 2"),
            std::string::npos);
  EXPECT_TRUE(budget.budget().ledger().empty());
}

// The finiteness check travels with the rows: a CheckedRows is made only by the check (a NaN
// throws, naming its cell), and an estimate on it gives the plain call's estimate, seed for seed.
TEST(Scale, CheckedRowsAreTheCheckAndChangeNoEstimate) {
  RowMatrix X = gaussian_t_table(1000, 0, 0, 5);
  ScaleOptions o;
  o.loss = PrivacyLoss::pure(1);
  ReleaseBudget plain_budget(PrivacyLoss::pure(1), Accountant::basic);
  ReleaseBudget checked_budget(PrivacyLoss::pure(1), Accountant::basic);
  SeededRng a(9), b(9);
  const ScaleEstimate plain = private_scale(X, o, plain_budget, a);
  const CheckedRows rows(X);
  const ScaleEstimate checked = private_scale(rows, o, checked_budget, b);
  EXPECT_EQ(plain.diagnostics().dump(), checked.diagnostics().dump());
  X(7, 0) = std::numeric_limits<double>::infinity();
  EXPECT_NE(error_of([&] { CheckedRows bad(X); }).find("row 8, column 1"), std::string::npos);
  ReleaseBudget unchecked(PrivacyLoss::pure(1), Accountant::basic);
  EXPECT_NE(error_of([&] { private_scale(RowsView(X), o, unchecked, a); }).find("row 8, column 1"),
            std::string::npos);
}

TEST(Scale, LedgerChargedEqualsWhatTheBudgetReports) {
  const RowMatrix X = gaussian_t_table(1000, 0, 0, 2);
  ReleaseBudget budget(PrivacyLoss::pure(1), Accountant::basic);
  SeededRng rng(2);
  ScaleOptions o;
  o.loss = PrivacyLoss::pure(0.6);
  const ScaleEstimate s = private_scale(X, o, budget, rng);
  ASSERT_EQ(budget.budget().ledger().size(), s.entries.size());
  double sum = 0;
  for (std::size_t i = 0; i < s.entries.size(); ++i) {
    EXPECT_EQ(budget.budget().ledger()[i].purpose, s.entries[i].purpose);
    EXPECT_EQ(budget.budget().ledger()[i].loss.epsilon, s.entries[i].loss.epsilon);
    sum += s.entries[i].loss.epsilon * s.entries[i].count;
  }
  EXPECT_LE(budget.budget().spent().epsilon, 0.6);
  EXPECT_NEAR(budget.budget().spent().epsilon, sum, 1e-12);
  EXPECT_NEAR(budget.budget().spent().epsilon, 0.6, 1e-12);
  // A release is charged once: a second, unplanned call on the same account never draws.
  EXPECT_THROW(private_scale(X, o, budget, rng), std::logic_error);
  EXPECT_EQ(budget.budget().ledger().size(), s.entries.size());
  // A second release on its own account, against a caller's Budget it does not fit, is refused
  // whole: nothing more is recorded there.
  Budget caller(PrivacyLoss::pure(1), Accountant::basic);
  ReleaseBudget first(PrivacyLoss::pure(1), Accountant::basic, &caller);
  private_scale(X, o, first, rng);
  ReleaseBudget second(PrivacyLoss::pure(1), Accountant::basic, &caller);
  EXPECT_THROW(private_scale(X, o, second, rng), BudgetExceeded);
  EXPECT_EQ(caller.ledger().size(), s.entries.size());
  // zcdp share on a zcdp budget.
  ReleaseBudget z(PrivacyLoss::zcdp(0.01), Accountant::zcdp);
  o.loss = PrivacyLoss::zcdp(0.01);
  private_scale(X, o, z, rng);
  EXPECT_LE(z.budget().spent().rho, 0.01);
  EXPECT_NEAR(z.budget().spent().rho, 0.01, 1e-12);
  EXPECT_EQ(s.diagnostics()["charged"].size(), 3u);
}

TEST(Scale, DegenerateAndInsufficientDataAreFlagged) {
  RowMatrix X(500, 2);
  X.col(0).setConstant(42.0);
  X.col(1) = gaussian_t_table(500, 0, 0, 3).col(0);
  ReleaseBudget budget(PrivacyLoss::pure(10), Accountant::basic);
  SeededRng rng(3);
  ScaleOptions o;
  o.loss = PrivacyLoss::pure(5);
  const ScaleEstimate s = private_scale(X, o, budget, rng);
  EXPECT_EQ(s.columns[0].status, ScaleStatus::degenerate);
  EXPECT_EQ(s.columns[0].scale, 0.0);
  EXPECT_NEAR(s.columns[0].location, 42.0, 1e-3);
  EXPECT_LE(s.columns[0].lo, 42.0);
  EXPECT_GE(s.columns[0].hi, 42.0);
  EXPECT_EQ(s.columns[1].status, ScaleStatus::ok);
  // 50 rows at epsilon 0.1: no guarantee, and the estimate says so.
  o.loss = PrivacyLoss::pure(0.1);
  ReleaseBudget own(o.loss, Accountant::basic);  // another release: its own account
  const ScaleEstimate small = private_scale(X.topRows(50), o, own, rng);
  EXPECT_EQ(small.columns[1].status, ScaleStatus::insufficient_data);
  EXPECT_FALSE(small.columns[1].reason.empty());
  EXPECT_FALSE(small.all_ok());
}

struct Errors {
  double location = 0, scale = 0;
};

// Mean over seeds of |location - truth| / truth_scale and |scale / truth_scale - 1| of column j,
// for the data a X + b.
Errors mean_errors(double a, double b, Eigen::Index j, double epsilon, int runs) {
  Errors e;
  for (int r = 0; r < runs; ++r) {
    const RowMatrix X0 = gaussian_t_table(10000, 0.05, 999, 100 + r);
    const RowMatrix X = (a * X0.array() + b).matrix();
    const auto [m, s] = clean_truth(X, j, 500);
    ReleaseBudget budget(PrivacyLoss::pure(epsilon), Accountant::basic);
    SeededRng rng(1000 + r);
    ScaleOptions o;
    o.loss = PrivacyLoss::pure(epsilon);
    const ScaleEstimate est = private_scale(X, o, budget, rng);
    EXPECT_EQ(est.columns[j].status, ScaleStatus::ok);
    e.location += std::fabs(est.columns[j].location - m) / s / runs;
    e.scale += std::fabs(est.columns[j].scale / s - 1) / runs;
  }
  return e;
}

TEST(Scale, EquivariantUnderScalingAndShiftWithCorruptedRows) {
  for (Eigen::Index j : {0, 1}) {
    const Errors base = mean_errors(1, 0, j, 1.0, 6);
    for (double a : {1e-3, 1.0, 1e3}) {
      for (double shift : {0.0, 1e4}) {
        const Errors e = mean_errors(a, shift * a, j, 1.0, 6);
        // 1.5x the unit-scale error, with a floor of 0.01 (1% of the scale).
        EXPECT_LE(e.location, 1.5 * std::max(base.location, 0.01))
            << "column " << j << " a " << a << " shift " << shift;
        EXPECT_LE(e.scale, 1.5 * std::max(base.scale, 0.01))
            << "column " << j << " a " << a << " shift " << shift;
        std::cout << "column " << j << " a=" << a << " shift=" << shift * a
                  << ": location error " << e.location << ", scale error " << e.scale << "\n";
      }
    }
  }
}

TEST(Scale, AgeAndSalaryColumnsAtEpsilonPointOne) {
  std::mt19937_64 gen(7);
  std::normal_distribution<double> age(40, 12), salary(65000, 20000);
  RowMatrix X(10000, 2);
  for (Eigen::Index i = 0; i < X.rows(); ++i) X.row(i) << age(gen), salary(gen);
  for (int seed = 0; seed < 5; ++seed) {
    ReleaseBudget budget(PrivacyLoss::pure(0.1), Accountant::basic);
    SeededRng rng(50 + seed);
    ScaleOptions o;
    o.loss = PrivacyLoss::pure(0.1);
    const ScaleEstimate s = private_scale(X, o, budget, rng);
    EXPECT_TRUE(s.all_ok()) << s.diagnostics().dump();
    const double truth[2] = {12, 20000}, centre[2] = {40, 65000};
    for (int j = 0; j < 2; ++j) {
      EXPECT_GT(s.columns[j].scale, truth[j] / 2);
      EXPECT_LT(s.columns[j].scale, truth[j] * 2);
      EXPECT_LT(std::fabs(s.columns[j].location - centre[j]), truth[j] / 2);
      EXPECT_LT(s.columns[j].lo, centre[j] - 2 * truth[j]);
      EXPECT_GT(s.columns[j].hi, centre[j] + 2 * truth[j]);
      std::cout << "column " << j << ": location " << s.columns[j].location << " scale "
                << s.columns[j].scale << " [" << s.columns[j].lo << ", " << s.columns[j].hi
                << "]\n";
    }
  }
}

TEST(NormQuantile, ClipCoversTheQuantileAtEveryScale) {
  std::mt19937_64 gen(11);
  std::normal_distribution<double> normal;
  RowMatrix X(20000, 5);
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = 0; j < 5; ++j) X(i, j) = normal(gen);
  const double truth = std::sqrt(9.2364);  // 0.9-quantile of chi^2_5 is 9.2364
  for (double a : {1e-3, 1.0, 1e3}) {
    const RowMatrix Y = (a * X.array() + 1e4 * a).matrix();
    ReleaseBudget budget(PrivacyLoss::pure(0.5), Accountant::basic);
    SeededRng rng(12);
    NormQuantileOptions o;
    o.loss = PrivacyLoss::pure(0.5);
    o.centre = Vector::Constant(5, 1e4 * a);
    const NormQuantile r = private_norm_quantile(Y, o, budget, rng);
    EXPECT_EQ(r.status, ScaleStatus::ok) << r.reason;
    EXPECT_NEAR(r.value / a / truth, 1.0, 0.1) << "a = " << a;
    ASSERT_EQ(budget.budget().ledger().size(), 1u);
    EXPECT_EQ(budget.budget().ledger()[0].loss.epsilon, r.entries.back().loss.epsilon);
  }
  ReleaseBudget budget(PrivacyLoss::pure(1), Accountant::basic);
  SeededRng rng(1);
  NormQuantileOptions o;
  o.centre = Vector::Zero(3);
  EXPECT_NE(error_of([&] { private_norm_quantile(X, o, budget, rng); }).find("centre must have"),
            std::string::npos);
  o.centre.reset();
  o.q = 1;
  EXPECT_NE(error_of([&] { private_norm_quantile(X, o, budget, rng); }).find("q must be in (0, 1)"),
            std::string::npos);
  EXPECT_TRUE(budget.budget().ledger().empty());
}

TEST(AdaptiveClip, TracksTheTargetQuantileAndChargesEachStep) {
  AdaptiveClipOptions o;
  o.initial_clip = 1e-3;
  o.target_quantile = 0.5;
  o.rho_per_step = 0.01;
  AdaptiveClip clip(o);
  ReleaseBudget budget(PrivacyLoss::zcdp(10), Accountant::zcdp);
  std::mt19937_64 gen(5);
  std::normal_distribution<double> normal(0, 10);
  SeededRng rng(5);
  std::vector<double> norms(1000);
  clip.prepay(300, budget);
  EXPECT_NEAR(budget.budget().spent().rho, 300 * clip.step_entry().loss.rho, 1e-12);
  for (int t = 0; t < 300; ++t) {
    for (double& x : norms) x = std::fabs(normal(gen));
    clip.update_prepaid(norms, 1000, rng);
  }
  EXPECT_NEAR(clip.clip() / (10 * 0.6745), 1.0, 0.2);
  EXPECT_THROW(clip.update_prepaid(norms, 1000, rng), InvalidArgument);
  EXPECT_EQ(budget.budget().ledger().size(), 1u);
  EXPECT_THROW(clip.prepay(1, budget), std::logic_error);  // a release is charged once
  EXPECT_EQ(clip.steps(), 300u);
  o.target_quantile = 1;
  EXPECT_NE(error_of([&] { AdaptiveClip bad(o); }).find("target_quantile"), std::string::npos);
}

TEST(Share, PerCallEpsilonComposesWithinTheShare) {
  for (std::size_t k : {1u, 3u, 7u, 300u}) {
    const double e = per_call_epsilon(PrivacyLoss::pure(0.1), k);
    EXPECT_LE(e * static_cast<double>(k), 0.1);
    const double z = per_call_epsilon(PrivacyLoss::zcdp(0.02), k);
    EXPECT_LE(z * z / 2 * static_cast<double>(k), 0.02);
  }
}

}  // namespace
// A table too small for its budget abstains instead of releasing scales with no stated error.
// Under replace-one n is public, so the rank errors already decide it before anything is
// charged: the caller's Budget is untouched. Under add/remove n is private: the release charges
// its count and estimates, and abstains on the released facts.
TEST(Bounds, TooLittleDataAbstainsBeforeChargingWhenNIsPublic) {
  RowMatrix X(8, 2);
  for (int i = 0; i < 8; ++i) X.row(i) << i + 1, 100.0 * (i + 1);
  BoundsOptions o;
  o.privacy = {.epsilon = 1};
  for (Neighbouring nb : {Neighbouring::replace_one, Neighbouring::add_remove}) {
    o.neighbouring = nb;
    Budget budget(PrivacyLoss::pure(2), Accountant::basic);
    SeededRng rng(1);
    const Release<Bounds> r = private_bounds(X, o, rng, &budget);
    EXPECT_EQ(r.status, Status::abstained);
    EXPECT_TRUE(r.estimate.scale.columns.empty());
    const std::string why = r.diagnostics["abstained"].get<std::string>();
    EXPECT_NE(why.find("column 1 is not usable"), std::string::npos);
    EXPECT_NE(why.find("rows at this epsilon"), std::string::npos);  // what would suffice
    testing::expect_guarantee_from_ledger(r);
    const bool uncharged = nb == Neighbouring::replace_one;
    EXPECT_NEAR(r.privacy.epsilon, uncharged ? 0.0 : 1.0, 1e-12);
    EXPECT_EQ(budget.ledger().empty(), uncharged);
  }
}

// The rows' finiteness check is made in the same read as the first pass, before anything is
// charged (docs/proofs/scale.md §1b): a NaN or an infinity anywhere stops the release with the
// check's error, naming the cell, and the caller's Budget is untouched; finite rows are charged.
TEST(Bounds, ANonFiniteCellStopsTheReleaseBeforeAnyCharge) {
  RowMatrix X(3000, 3);
  SeededRng g(4);
  for (Eigen::Index i = 0; i < X.size(); ++i) X.data()[i] = g.uniform01() * 10 - 5;
  BoundsOptions o;
  o.privacy = {.epsilon = 10};  // enough for 3000 rows: the finite rows' plan is usable
  o.coverage = 0.01;
  for (double bad : {std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
    for (int threads : {1, 2}) {
      RowMatrix Y = X;
      Y(2999, 2) = bad;
      Y(1700, 1) = bad;
      o.run.threads = threads;
      Budget budget(PrivacyLoss::pure(10), Accountant::basic);
      SeededRng rng(1);
      EXPECT_NE(error_of([&] { private_bounds(Y, o, rng, &budget); }).find("row 1701, column 2"),
                std::string::npos);
      EXPECT_TRUE(budget.ledger().empty());
    }
    // Typed (the tool reports it as its input layer does), and before the charge also on a grid
    // whose pass is not kept (3 points an octave: no exact log grid).
    for (int per_octave : {32, 3}) {
      RowMatrix Y = X;
      Y(1700, 1) = bad;
      BoundsOptions p = o;
      p.per_octave = per_octave;
      Budget budget(PrivacyLoss::pure(1), Accountant::basic);
      SeededRng rng(1);
      try {
        private_bounds(Y, p, rng, &budget);
        ADD_FAILURE() << "no error";
      } catch (const NonFiniteCell& e) {
        EXPECT_EQ(e.row(), 1700);
        EXPECT_EQ(e.column(), 1);
      }
      EXPECT_TRUE(budget.ledger().empty());
    }
  }
  Budget budget(PrivacyLoss::pure(10), Accountant::basic);
  SeededRng rng(1);
  EXPECT_NO_THROW(private_bounds(X, o, rng, &budget));
  EXPECT_FALSE(budget.ledger().empty());
}

}  // namespace dpstats
