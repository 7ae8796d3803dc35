// The banded passes and the selection over partial counts (src/scale/banded_pass.hpp,
// grid_select.hpp, exact_coins.hpp; docs/proofs/scale.md §1d): a selection that reads only the
// counts near its quantile releases the cell the full counts release, from the same bits, and one
// whose far cells cannot be told far draws nothing; the location and scale from the banded passes
// are those of the full passes, seed for seed, on every kind of column, where the pilot misjudges
// the bands, and on every path of the pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../../src/scale/banded_pass.hpp"
#include "../../src/scale/column_stages.hpp"
#include "../../src/scale/exact_coins.hpp"
#include "../../src/scale/grid_select.hpp"
#include "../../src/scale/shared_pass.hpp"
#include "dpstats/error.hpp"
#include "dpstats/random/float_normal.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/seam.hpp"

namespace dpstats::scale_detail {
namespace {

// Counts below each of `points` points of n values bunched around a few places.
std::vector<std::int64_t> random_counts(SeededRng& g, std::size_t points, std::int64_t n) {
  std::vector<std::int64_t> bins(points + 1, 0);
  const std::size_t centre = g.uniform_below(points + 1);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t spread = 1 + g.uniform_below(points / 8 + 1);
    const auto b = static_cast<std::int64_t>(centre + g.uniform_below(2 * spread)) -
                   static_cast<std::int64_t>(spread);
    const auto top = static_cast<std::int64_t>(points);
    ++bins[static_cast<std::size_t>(std::clamp<std::int64_t>(b, 0, top))];
  }
  std::vector<std::int64_t> below(points);
  std::int64_t sum = 0;
  for (std::size_t k = 0; k < points; ++k) below[k] = sum += bins[k];
  return below;
}

TEST(ScaleBanded, PartialCountsSelectTheFullCountsCellOrDrawNothing) {
  SeededRng g(5);
  int released = 0, declined = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t points = 3 + g.uniform_below(trial % 4 == 0 ? 20000 : 600);
    const auto n = static_cast<std::int64_t>(50 + g.uniform_below(20000));
    const std::vector<std::int64_t> below = random_counts(g, points, n);
    const double q = trial % 3 == 0 ? 0.5 : 0.02 + 0.96 * g.uniform01();
    const double epsilon = std::exp(-6 + 8 * g.uniform01());
    // a window of known points, often around the quantile, sometimes anywhere
    std::size_t a = g.uniform_below(points - 1), b = a + 1 + g.uniform_below(points - a - 1);
    if (trial % 2 == 0) {
      const auto t = static_cast<std::size_t>(
          std::lower_bound(below.begin(), below.end(), static_cast<std::int64_t>(q * n)) -
          below.begin());
      const std::size_t w = 1 + g.uniform_below(points / 2 + 1);
      a = t > w ? t - w : 0;
      b = std::min(points - 1, t + w);
      if (a == b) {
        if (a > 0)
          --a;
        else
          ++b;
      }
    }
    PartialCounts c;
    c.first = a;
    c.known.assign(below.begin() + static_cast<std::ptrdiff_t>(a),
                   below.begin() + static_cast<std::ptrdiff_t>(b + 1));
    c.exact = [&](std::size_t k) { return below[k]; };
    SeededRng x(1000 + trial), y(1000 + trial), fresh(1000 + trial);
    const auto cell = select_cell_partial(c, points, n, q, epsilon, x);
    if (!cell) {
      ++declined;
      EXPECT_EQ(x.next_u64(), fresh.next_u64()) << "trial " << trial << ": nothing drawn";
      continue;
    }
    ++released;
    EXPECT_EQ(*cell, select_cell(below, n, q, epsilon, y)) << "trial " << trial;
    EXPECT_EQ(x.next_u64(), y.next_u64()) << "trial " << trial << ": the same draws";
  }
  EXPECT_GT(released, 100);
  EXPECT_GT(declined, 20);
}

// Far runs whose exponents are left unknown (lower bounds) draw what the same runs with their
// exponents known draw; the exact exponent is asked for only where a first factor came true.
TEST(ScaleBanded, LazyFarExponentsDrawTheSameCell) {
  SeededRng g(8);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<CellRun> known, lazy;
    std::vector<double> gamma_of;  // every cell's exponent
    std::size_t cell = 0;
    const int count = 2 + static_cast<int>(g.uniform_below(30));
    const int zero_at = static_cast<int>(g.uniform_below(static_cast<std::uint64_t>(count)));
    for (int r = 0; r < count; ++r) {
      const std::size_t length = 1 + g.uniform_below(trial % 5 == 0 ? 5000 : 40);
      const double kinds[] = {0.0, 0.5, 3.0, 21.99, 22.0, 22.5, 40.0, 1e6};
      const double gamma = r == zero_at ? 0.0 : kinds[g.uniform_below(8)];
      known.push_back({cell, length, gamma});
      const bool far = gamma >= kFarGamma;
      // a lazy far run states a lower bound; its cells' exponents come from exact_gamma
      lazy.push_back({cell, length, far ? kFarGamma : gamma, !far});
      for (std::size_t i = 0; i < length; ++i) gamma_of.push_back(gamma);
      cell += length;
    }
    int asked = 0;
    auto exact = [&](std::size_t c) {
      ++asked;
      return gamma_of[c];
    };
    SeededRng a(500 + trial), b(500 + trial);
    RandomBits bits_a(a), bits_b(b);
    EXPECT_EQ(permute_and_flip_runs(known, bits_a), permute_and_flip_runs(lazy, bits_b, exact))
        << "trial " << trial;
    EXPECT_EQ(a.next_u64(), b.next_u64());
    EXPECT_LE(asked, 1);  // a first factor of e^-22 came true at most once in 300 short walks
  }
}

// A generator whose first two words are zero (then a seeded one's): the first far coin's first
// factor comes true, so the walk asks for that cell's exponent; the cell drawn is the one drawn
// with the exponents known.
class ZerosFirst final : public Rng {
 public:
  explicit ZerosFirst(std::uint64_t seed) : rest_(seed) {}
  std::uint64_t next_u64() override { return words_++ < 2 ? 0 : rest_.next_u64(); }
  bool seeded() const noexcept override { return true; }

 private:
  int words_ = 0;
  SeededRng rest_;
};

TEST(ScaleBanded, LazyExponentIsReadWhereItsFirstFactorComesTrue) {
  const std::vector<CellRun> known = {{0, 3, 30.0}, {3, 1, 0.0}, {4, 2, 25.0}};
  const std::vector<CellRun> lazy = {{0, 3, 22.0, false}, {3, 1, 0.0}, {4, 2, 22.0, false}};
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    int asked = 0;
    auto exact = [&](std::size_t c) {
      ++asked;
      return c < 3 ? 30.0 : 25.0;
    };
    ZerosFirst a(seed), b(seed);
    RandomBits bits_a(a), bits_b(b);
    EXPECT_EQ(permute_and_flip_runs(known, bits_a), permute_and_flip_runs(lazy, bits_b, exact));
    EXPECT_EQ(a.next_u64(), b.next_u64());
    EXPECT_GE(asked, 1);
  }
  auto low = [](std::size_t) { return 21.0; };  // an exponent below its run's bound is an error
  ZerosFirst z(1);
  RandomBits bits(z);
  EXPECT_THROW(permute_and_flip_runs(lazy, bits, low), InvalidArgument);
}

// first_true's law: the index of the first true coin of probability p = 2^-k c is geometric;
// k = 17 makes p observable (the scale layer's far coins use k = 31), on both of its paths (a
// word with no run of k zeros is settled by one popcount).
TEST(ScaleBanded, FirstTrueIsGeometric) {
  const ExpConstant c{1, 2, 1, 1};  // e^-1/2 = 0.6065...
  const ExpConstant::Window window = c.window();
  const double p = std::ldexp(std::exp(-0.5), -17);
  SeededRng rng(21);
  RandomBits bits(rng);
  const int trials = 400;
  double sum = 0;
  for (int t = 0; t < trials; ++t)
    sum += static_cast<double>(first_true(bits, std::size_t{1} << 30, 17, c, window));
  const double mean = sum / trials, expected = (1 - p) / p, sd = std::sqrt(1 - p) / p;
  EXPECT_NEAR(mean, expected, 5 * sd / std::sqrt(trials));
  EXPECT_EQ(first_true(bits, 0, 17, c, window), 0u);
}

// Columns of every kind users have (issue 27): a shifted normal with 5% moved, ratings 1..10,
// 98% zeros with a money tail, a Pareto tail, values near 1e9, a constant column, tiny values,
// and values next to -DBL_MAX (bands that would reach past it hold nothing).
RowMatrix odd_table(std::int64_t n, std::uint64_t seed) {
  SeededRng g(seed);
  RowMatrix X(n, 8);
  for (std::int64_t i = 0; i < n; ++i) {
    X(i, 0) = standard_normal(g) + (g.uniform01() < 0.05 ? 1.5 : 0);
    X(i, 1) = static_cast<double>(1 + g.uniform_below(10));
    X(i, 2) = g.uniform01() < 0.98 ? 0.0 : std::exp(8 + 2 * standard_normal(g));
    X(i, 3) = std::pow(1 - g.uniform01(), -1 / 1.1);
    X(i, 4) = 1e9 + standard_normal(g);
    X(i, 5) = 7.0;
    X(i, 6) = -1e-300 * (2 + standard_normal(g));
    X(i, 7) = -std::numeric_limits<double>::max() * (1 - 0.01 * g.uniform01());
  }
  return X;
}

struct ScaleRun {
  ScaleEstimate estimate;
  std::uint64_t next = 0;  // the generator's next word after the estimate
  bool banded = false;
};

// scale_detail::private_scale after the banded pass (check_and_band) or after the signed log
// grid's full pass (check_and_count: the full passes throughout).
ScaleRun scale_of(const RowMatrix& X, const ScaleOptions& o, bool banded, std::uint64_t seed) {
  SharedPass shared;
  shared.full_passes = !banded;
  if (banded)
    check_and_band(shared, X, o, single_process());
  else
    check_and_count(shared, X, o.per_octave, o.threads, single_process());
  ReleaseBudget account(o.loss, Accountant::basic);
  account.charge(private_scale_entries(o, static_cast<std::size_t>(X.cols())));
  SeededRng rng(seed);
  ScaleRun r;
  r.banded = shared.median.has_value();
  r.estimate = private_scale(X, o, account, rng, &shared);
  r.next = rng.next_u64();
  return r;
}

void expect_same(const ScaleRun& a, const ScaleRun& b) {
  ASSERT_EQ(a.estimate.columns.size(), b.estimate.columns.size());
  for (std::size_t j = 0; j < a.estimate.columns.size(); ++j) {
    const ColumnScale& x = a.estimate.columns[j];
    const ColumnScale& y = b.estimate.columns[j];
    EXPECT_EQ(x.location, y.location) << "column " << j;
    EXPECT_EQ(x.mad, y.mad) << "column " << j;
    EXPECT_EQ(x.lo, y.lo) << "column " << j;
    EXPECT_EQ(x.hi, y.hi) << "column " << j;
    EXPECT_EQ(x.status, y.status) << "column " << j;
  }
  EXPECT_EQ(a.next, b.next);  // the same draws
}

TEST(ScaleBanded, BandedScaleIsTheFullPassesScale) {
  const RowMatrix X = odd_table(30000, 3);
  for (const int threads : {1, 2})
    for (const int per_octave : {32, 24}) {  // a power of two: the SIMD pass; else the plain one
      ScaleOptions o;
      o.loss = PrivacyLoss::pure(2);
      o.threads = threads;
      o.per_octave = per_octave;
      for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        const ScaleRun banded = scale_of(X, o, true, seed), full = scale_of(X, o, false, seed);
        EXPECT_TRUE(banded.banded);
        EXPECT_FALSE(full.banded);
        expect_same(banded, full);
      }
    }
}

// Rows the pilot reads (every (n / 8192)-th) that are unlike the others: its bands miss the
// quantiles, and the selections count every value instead -- the same estimate.
TEST(ScaleBanded, AMisjudgedPilotFallsBackToTheFullPasses) {
  RowMatrix X = odd_table(40000, 4);
  const std::int64_t n = X.rows(), m = 8192;
  for (std::int64_t i = 0; i < m; ++i) X.row(i * n / m).array() += 1e6;
  ScaleOptions o;
  o.loss = PrivacyLoss::pure(2);
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const ScaleRun banded = scale_of(X, o, true, seed), full = scale_of(X, o, false, seed);
    EXPECT_TRUE(banded.banded);
    expect_same(banded, full);
  }
}

// A small table or a small epsilon: bands would hold most of the values; no pilot, full passes.
TEST(ScaleBanded, NoBandsWhereTheyWouldHoldMostValues) {
  const RowMatrix X = odd_table(3000, 5);
  EXPECT_FALSE(plan_pilot(X, 0.01, 32).has_value());
  EXPECT_TRUE(plan_pilot(odd_table(100000, 5), 0.05, 32).has_value());
  ScaleOptions o;
  o.loss = PrivacyLoss::pure(0.1);
  const ScaleRun run = scale_of(X, o, true, 1);
  EXPECT_FALSE(run.banded);
}

// The banded pass makes the rows' finiteness check: a non-finite cell, in a row the pilot reads
// (row 1) or not, is reported by check_data, naming it.
TEST(ScaleBanded, TheBandedPassChecksTheRows) {
  ScaleOptions o;
  o.loss = PrivacyLoss::pure(2);
  const std::pair<int, const char*> cases[] = {{20000, "row 20001, column 4"},
                                               {0, "row 1, column 4"}};
  for (const auto& [row, name] : cases) {
    RowMatrix X = odd_table(30000, 6);
    X(row, 3) = std::numeric_limits<double>::quiet_NaN();
    SharedPass shared;
    try {
      check_and_band(shared, X, o, single_process());
      ADD_FAILURE() << "no error";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dpstats::scale_detail
