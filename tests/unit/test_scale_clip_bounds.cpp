// private_clip_bounds (include/dpstats/scale/clip_bounds.hpp): per-column clipping bounds with no
// public range, on the columns users have (small n, small epsilon, ratings on a few values,
// zero-inflated money, heavy right tails, values near 1e9), their charges and their reliability.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/random/float_normal.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/clip_bounds.hpp"
#include "dpstats/seam.hpp"
#include "ranks_harness.hpp"

namespace dpstats {
namespace {

// Ratings 1..10 (normal around 6.5 with sd 1.2, rounded), as in issue 27 case 1.
RowMatrix ratings(Eigen::Index n, std::uint64_t seed) {
  SeededRng g(seed);
  RowMatrix X(n, 1);
  for (Eigen::Index i = 0; i < n; ++i)
    X(i, 0) = std::clamp(std::round(6.5 + 1.2 * standard_normal(g)), 1.0, 10.0);
  return X;
}

// 98% exact zeros, the rest log-normal up to millions (issue 27 case 2).
RowMatrix zero_inflated(Eigen::Index n, std::uint64_t seed) {
  SeededRng g(seed);
  RowMatrix X(n, 1);
  for (Eigen::Index i = 0; i < n; ++i)
    X(i, 0) = g.uniform01() < 0.02 ? std::exp(9 + 2 * standard_normal(g)) : 0.0;
  return X;
}

ClipBounds estimate(const RowMatrix& X, ClipBoundsOptions o, std::uint64_t seed) {
  ReleaseBudget account(o.loss, o.loss.kind == LossKind::zcdp ? Accountant::zcdp : Accountant::basic);
  SeededRng rng(seed);
  return private_clip_bounds(X, o, account, rng);
}

// The fraction of a column's rows below lo and above hi.
std::pair<double, double> outside(const RowMatrix& X, const ColumnClipBounds& c) {
  double below = 0, above = 0;
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    below += X(i, 0) < c.lo;
    above += X(i, 0) > c.hi;
  }
  return {below / static_cast<double>(X.rows()), above / static_cast<double>(X.rows())};
}

// 3000 ratings at epsilon 0.15 (half of 0.3, the rest for a mean): the bounds hold the data up to
// the stated rank error on each side, are usable and are not wider than the range plus a cell.
TEST(ClipBounds, RatingsAtSmallEpsilon) {
  ClipBoundsOptions o;
  o.loss = PrivacyLoss::pure(0.15 * 48 / 40);  // 0.15 for the 40 units of the selections and scans
  o.coverage = 0.02;
  int tight = 0;  // hi within a cell of the largest rating
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const RowMatrix X = ratings(3000, seed);
    const ClipBounds b = estimate(X, o, seed);
    ASSERT_EQ(b.columns.size(), 1u);
    const auto [below, above] = outside(X, b.columns[0]);
    EXPECT_LE(below, b.q_lo + b.rank_error / 3000) << seed;
    EXPECT_LE(above, 1 - b.q_hi + b.rank_error / 3000) << seed;
    EXPECT_TRUE(reliability(b, "--bounds").usable) << reliability(b, "--bounds").reason();
    EXPECT_GE(b.columns[0].lo, 1 - 0.5) << seed;
    tight += b.columns[0].hi <= 10 * (1 + 1.0 / 16);
    EXPECT_LT(b.columns[0].lo, b.columns[0].hi);
  }
  // The upper scan runs past the last rating when its threshold's noise exceeds the 30 rows it
  // targets (the width is then released, and a consumer's stated noise grows with it).
  EXPECT_GE(tight, 8);
}

// A column of 98% zeros: the upper bound reaches into the non-zero tail (a positive value of the
// tail's magnitude, not 1e-300), the lower bound stays at 0.
TEST(ClipBounds, ZeroInflatedCoversTheNonZeroPart) {
  ClipBoundsOptions o;
  o.loss = PrivacyLoss::pure(1);
  o.coverage = 0.01;
  int reached = 0;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const RowMatrix X = zero_inflated(10000, seed);
    const ClipBounds b = estimate(X, o, seed);
    const ColumnClipBounds& c = b.columns[0];
    EXPECT_LE(c.lo, 0) << seed;
    EXPECT_GE(c.lo, -1) << seed;
    reached += c.hi > 100;
    const auto [below, above] = outside(X, c);
    EXPECT_LE(above, 1 - b.q_hi + b.rank_error / 10000) << seed;
    EXPECT_EQ(below, 0) << seed;
  }
  EXPECT_GE(reached, 5);
}

// The same column at n = 5000 and stat's share at epsilon 1: the 100 non-zero rows are fewer than
// the scan's rank error, so the upper bound may stop anywhere short of them (issue 27: 2.96e-271
// `ok`). The side counts see that most rows equal 0: the bounds are never usable without holding
// the non-zero part, and an unusable side names the cause (scale.md §7b).
// At a tenth of that epsilon a side's noisy count is often negative: it is still a count, and the
// side is judged (a negative count once read as "no side to judge" let a mean of 1e-305 say ok).
TEST(ClipBounds, ZeroInflatedAtomIsNeverUsedCollapsed) {
  int negative = 0;
  for (const double epsilon : {0.6, 0.06}) {
    ClipBoundsOptions o;
    o.loss = PrivacyLoss::pure(epsilon);
    for (std::uint64_t seed = 1; seed <= 12; ++seed) {
      const RowMatrix X = zero_inflated(5000, seed);
      const ClipBounds b = estimate(X, o, seed);
      const ColumnClipBounds& c = b.columns[0];
      EXPECT_TRUE(c.lo_facts.side && c.hi_facts.side);
      negative += c.beyond_lo < 0 || c.beyond_hi < 0;
      const Reliability r = reliability(b, "--bounds");
      if (r.usable) {
        EXPECT_GT(c.hi, 100) << seed;
      } else if (r.reason().find("rank error") == std::string::npos) {
        EXPECT_NE(r.reason().find("most rows equal one value"), std::string::npos) << r.reason();
        EXPECT_NE(r.reason().find("--bounds"), std::string::npos) << r.reason();
      }
    }
  }
  EXPECT_GE(negative, 3);  // the case is exercised
}

// 90% zeros at n = 5 000 and stat's share of epsilon 0.3: the side counts' noise bound (614 rows)
// is large against n/2, and a margin of it in the atom test let a draw with both counts high pass
// as "no atom" with the upper bound stopped at 1e-213, under all 454 non-zero rows (the sweep on
// other table draws; about 1 draw in 1 000 here, seed 497 below). Read as they are, the counts
// catch the atom: usable bounds hold the non-zero rows.
TEST(ClipBounds, NinetyPercentAtomIsNeverUsedCollapsed) {
  ClipBoundsOptions o;
  o.loss = PrivacyLoss::pure(0.18);
  std::vector<std::uint64_t> seeds = {497};  // the margin's failing draw
  for (std::uint64_t seed = 1; seed <= 60; ++seed) seeds.push_back(seed);
  for (const std::uint64_t seed : seeds) {
    SeededRng g(seed + 1000);
    RowMatrix X(5000, 1);
    for (Eigen::Index i = 0; i < X.rows(); ++i)
      X(i, 0) = g.uniform01() < 0.1 ? std::exp(11 + 1.5 * standard_normal(g)) : 0.0;
    const ClipBounds b = estimate(X, o, seed);
    EXPECT_TRUE(b.columns[0].hi_facts.atom || b.columns[0].hi > 100) << seed;
    if (reliability(b, "--bounds").usable) EXPECT_GT(b.columns[0].hi, 100) << seed;
  }
}

// Values near 1e9 spread inside the anchor's cell (1e9 + N(0, 100^2) in a cell about 1 400 wide;
// the sweep's epoch table at epsilon 1: 2 000 rows, half of stat's 0.6 per column): no rows lie
// beyond the anchor's cell, as for an atom, but they spread over the fine cells, so the side
// counts see no atom and the bounds are usable and hold the rows (scale.md §7b "the fine cell").
// The same rows with 98% of them on one value near 1e9 are still an atom.
TEST(ClipBounds, SpreadInsideTheAnchorsCellIsNotAnAtom) {
  ClipBoundsOptions o;
  o.loss = PrivacyLoss::pure(0.3);
  int usable = 0;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    SeededRng g(seed);
    RowMatrix X(2000, 1), A(2000, 1);
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
      X(i, 0) = 1e9 + 100 * standard_normal(g);
      A(i, 0) = g.uniform01() < 0.02 ? 1e9 + std::exp(9 + 2 * standard_normal(g)) : 1e9 + 17;
    }
    const ClipBounds b = estimate(X, o, seed);
    const ColumnClipBounds& c = b.columns[0];
    EXPECT_TRUE(c.fine_cell) << seed;
    EXPECT_LT(c.cell.second - c.cell.first, 100) << seed;
    EXPECT_LE(b.fine_rank_error, 0.45 * 2000);
    const Reliability r = reliability(b, "--bounds");
    usable += r.usable;
    EXPECT_EQ(r.reason().find("most rows equal one value"), std::string::npos) << r.reason();
    const auto [below, above] = outside(X, c);
    EXPECT_LE(below + above, 0.01 + 2 * b.rank_error / 2000) << seed;
    // the atom: never usable collapsed on 1e9 + 17
    const ClipBounds a = estimate(A, o, seed);
    const Reliability ra = reliability(a, "--bounds");
    if (ra.usable)
      EXPECT_GT(a.columns[0].hi, 1e9 + 100) << seed;
    else
      EXPECT_NE(ra.reason().find("most rows equal one value"), std::string::npos) << ra.reason();
  }
  EXPECT_GE(usable, 5);
}

// Values near 1e9 with a spread of 1000: bounds at the anchor's relative resolution, a few
// spreads wide, not 1e9 / per_octave.
TEST(ClipBounds, RelativeResolutionNear1e9) {
  SeededRng g(3);
  RowMatrix X(3000, 1);
  for (Eigen::Index i = 0; i < X.rows(); ++i) X(i, 0) = 1e9 + 1000 * standard_normal(g);
  ClipBoundsOptions o;
  o.loss = PrivacyLoss::pure(1);
  const ClipBounds b = estimate(X, o, 4);
  const ColumnClipBounds& c = b.columns[0];
  EXPECT_GT(c.lo, 1e9 - 2e4);
  EXPECT_LT(c.hi, 1e9 + 2e4);
  EXPECT_LT(c.lo, 1e9 - 1500);
  EXPECT_GT(c.hi, 1e9 + 1500);
  EXPECT_TRUE(b.all_usable());
}

// A heavy right tail (log-normal): the upper bound is the targeted quantile up to the rank
// error, so a consumer can state the clipped fraction from coverage and rank_error.
TEST(ClipBounds, HeavyTailLeavesTheStatedFraction) {
  SeededRng g(5);
  RowMatrix X(200000, 1);
  for (Eigen::Index i = 0; i < X.rows(); ++i) X(i, 0) = std::exp(standard_normal(g));
  ClipBoundsOptions o;
  o.loss = PrivacyLoss::pure(0.5);
  o.coverage = 0.02;
  const ClipBounds b = estimate(X, o, 6);
  const auto [below, above] = outside(X, b.columns[0]);
  const double t = b.rank_error / 200000;
  EXPECT_LE(above, 0.01 + t);
  EXPECT_GE(above, std::max(0.0, 0.01 - t));
  EXPECT_LE(below, 0.01 + t);
  EXPECT_DOUBLE_EQ(b.q_hi, 0.99);
}

// A constant column: a tight interval around the value, usable (clipping to it is exact).
TEST(ClipBounds, ConstantColumn) {
  const RowMatrix X = RowMatrix::Constant(500, 1, 42.5);
  ClipBoundsOptions o;
  o.loss = PrivacyLoss::pure(2);
  const ClipBounds b = estimate(X, o, 7);
  EXPECT_LE(b.columns[0].lo, 42.5);
  EXPECT_GE(b.columns[0].hi, 42.5);
  EXPECT_LT(b.columns[0].hi - b.columns[0].lo, 1e-3);
}

// Too few rows for the share: unusable, and the reason says how many rows would suffice.
TEST(ClipBounds, SmallNAndEpsilonIsUnusableWithWhatWouldSuffice) {
  ClipBoundsOptions o;
  o.loss = PrivacyLoss::pure(0.05);
  const ClipBounds b = estimate(ratings(300, 1), o, 1);
  const Reliability r = reliability(b, "--bounds");
  ASSERT_FALSE(r.usable);
  EXPECT_NE(r.would_suffice.find("rows"), std::string::npos) << r.reason();
  EXPECT_NE(r.would_suffice.find("--bounds"), std::string::npos) << r.reason();
}

// The entries are listed before any data is read and charged all or nothing; under add/remove
// a count of the rows comes first and the thresholds use its lower confidence bound.
TEST(ClipBounds, EntriesAndCharging) {
  ClipBoundsOptions o;
  o.loss = PrivacyLoss::pure(1);
  const Ledger l = private_clip_bounds_entries(o, 3);
  ASSERT_EQ(l.size(), 7u);  // two anchors, two scans, the fine cell, two side counts
  double total = 0;
  for (const LedgerEntry& e : l) {
    EXPECT_EQ(e.count, 3);
    total += e.loss.epsilon * e.count;
  }
  EXPECT_LE(total, 1.0);
  EXPECT_GT(total, 0.999);
  EXPECT_EQ(l[2].mechanism, "above_threshold");
  o.neighbouring = Neighbouring::add_remove;
  const Ledger a = private_clip_bounds_entries(o, 3);
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a[0].count, 1);
  const RowMatrix X = ratings(2000, 2);
  const ClipBounds b = estimate(X, o, 3);
  EXPECT_LE(b.n, 2000);
  EXPECT_GT(b.n, 1800);
  Budget small(PrivacyLoss::pure(0.5), Accountant::basic);
  ReleaseBudget account(PrivacyLoss::pure(1), Accountant::basic, &small);
  SeededRng rng(1);
  EXPECT_THROW(private_clip_bounds(X, o, account, rng), BudgetExceeded);
  EXPECT_TRUE(small.ledger().empty());
  o.coverage = 0.5;
  EXPECT_THROW(private_clip_bounds_entries(o, 1), InvalidArgument);
}

// Without the sides' parts (judge_sides false, stat quantiles' bounds: scale.md §9): 4 entries per
// column that spend the whole share (40 units), no side counts drawn, and the sides are judged by
// §6's rules alone, so a 98%-zero column's bounds are usable where the atom rule would refuse them
// (the quantiles' stated rank error carries the rows outside their range instead).
TEST(ClipBounds, WithoutTheSidesOnlyTheAnchorAndScansAreChargedAndJudged) {
  ClipBoundsOptions o;
  o.loss = PrivacyLoss::pure(1);
  o.judge_sides = false;
  const Ledger l = private_clip_bounds_entries(o, 2);
  ASSERT_EQ(l.size(), 4u);  // two anchors, two scans
  double total = 0;
  for (const LedgerEntry& e : l) total += e.loss.epsilon * e.count;
  EXPECT_LE(total, 1.0);
  EXPECT_GT(total, 0.999);
  int usable = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const ClipBounds b = estimate(zero_inflated(5000, seed), o, seed);
    EXPECT_FALSE(b.columns[0].lo_facts.side);
    EXPECT_FALSE(b.columns[0].hi_facts.side);
    usable += reliability(b, "--bounds").usable;
  }
  EXPECT_EQ(usable, 4);
}

// A seeded estimate does not depend on the thread count, and over ranks it is the
// single-process estimate on the union of the rows, drawn on rank 0 only.
TEST(ClipBounds, ThreadsAndRanksGiveTheSameBounds) {
  RowMatrix X(1200, 3);
  SeededRng g(9);
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    X(i, 0) = standard_normal(g);
    X(i, 1) = 1e6 + std::exp(2 * standard_normal(g));
    X(i, 2) = std::round(5 + 2 * standard_normal(g));
  }
  ClipBoundsOptions o;
  o.loss = PrivacyLoss::pure(3);
  o.threads = 1;
  const ClipBounds one = estimate(X, o, 11);
  o.threads = 3;
  const ClipBounds three = estimate(X, o, 11);
  EXPECT_EQ(one.diagnostics().dump(), three.diagnostics().dump());
  ranks_harness::expect_same_on_ranks(
      X.rows(), ranks_harness::uneven, 11,
      [&](Eigen::Index lo, Eigen::Index hi, Communicator* comm, Rng& rng) {
        ClipBoundsOptions r = o;
        r.comm = comm;
        ReleaseBudget account(r.loss, Accountant::basic);
        const RowMatrix part = X.middleRows(lo, hi - lo);
        return private_clip_bounds(part, r, account, rng).diagnostics().dump();
      });
}

}  // namespace
}  // namespace dpstats
