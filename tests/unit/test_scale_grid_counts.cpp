// The scale layer's data pass and selection kernel (src/scale/grid_counts.hpp, grid_select.hpp,
// exact_coins.hpp): the bit and arithmetic lookups give exactly the counts of a sort and merge on
// every kind of value; the scores are exact integers (issue 28 item 2: neighbours' scores differ
// by at most 1 for q = 0.1 at n = 1,000,007, where doubles gave 1 + 2^-34); the fast coins have
// the stated probabilities.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "../../src/scale/column_stages.hpp"
#include "../../src/scale/exact_coins.hpp"
#include "../../src/scale/grid_counts.hpp"
#include "../../src/scale/grid_select.hpp"
#include "dpstats/random/float_normal.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/grid_quantile.hpp"

namespace dpstats::scale_detail {
namespace {

constexpr double kMax = std::numeric_limits<double>::max();

// Values of every kind: zeros of both signs, subnormals, normals of every magnitude and sign,
// the grid's own points and their neighbours, +/- DBL_MAX.
std::vector<double> awkward_values(std::span<const double> grid, SeededRng& g) {
  std::vector<double> v = {0.0, -0.0, 1e-310, -1e-310, 0x1p-1022, -0x1p-1022, kMax, -kMax,
                           1e9 + 0.5, -3.25, 7.0, 10.0};
  for (int i = 0; i < 2000; ++i) {
    v.push_back(std::ldexp(1 + g.uniform01(), static_cast<int>(g.uniform_below(2040)) - 1020) *
                (g.bit() ? 1 : -1));
    v.push_back(standard_normal(g) * 1e3);
    const double p = grid[g.uniform_below(grid.size())];
    v.push_back(p);
    v.push_back(std::nextafter(p, kMax));
    v.push_back(std::nextafter(p, -kMax));
  }
  return v;
}

// Every point of a grid (a dyadic grid's are not stored).
std::vector<double> points_of(const GridIndex& index) {
  std::vector<double> p(index.size());
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = index.point(i);
  return p;
}

void expect_same_counts(const GridIndex& index, const std::vector<double>& values) {
  const Eigen::Map<const RowMatrix> X(values.data(), static_cast<Eigen::Index>(values.size()), 1);
  for (int threads : {1, 3}) {
    const GridIndex* g = &index;
    const auto counts = column_counts(X, std::span(&g, 1), [](std::size_t, double x) { return x; },
                                      threads)[0];
    const std::vector<std::int64_t> sorted = counts_below(values, points_of(index));
    ASSERT_EQ(counts.size(), sorted.size() + 1);
    EXPECT_TRUE(std::equal(sorted.begin(), sorted.end(), counts.begin()));
    EXPECT_EQ(counts.back(), static_cast<std::int64_t>(values.size()));
  }
}

TEST(ScaleGridCounts, LogGridLookupIsExact) {
  SeededRng g(1);
  for (int m : {1, 3, 32, 100}) {
    for (bool nonnegative : {false, true}) {
      const GridIndex index = GridIndex::log(m, nonnegative);
      std::vector<double> v = awkward_values(index.grid(), g);
      expect_same_counts(index, v);  // a negative value's bin on the nonnegative grid is 0
      if (nonnegative)
        for (double& x : v) x = std::fabs(x);
      expect_same_counts(index, v);
    }
  }
}

TEST(ScaleGridCounts, LinearAndGeometricLookupsAreExact) {
  SeededRng g(2);
  const GridIndex linear = GridIndex::points(linear_grid(-2.5, 1e4, 65536));
  expect_same_counts(linear, awkward_values(linear.grid(), g));
  const GridIndex tiny = GridIndex::points(linear_grid(1e9, 1e9 + 1e-6, 4096));  // merged points
  expect_same_counts(tiny, awkward_values(tiny.grid(), g));
  for (auto [lo, hi] : {std::pair{-2.5, 1e4}, {1e9 - 3e7, 1e9 + 1e7}, {-0x1p-1021, 0x1p-1021},
                        {5.875, 6.0625}, {-1e300, -9e299}}) {
    const GridIndex dyadic = GridIndex::dyadic(lo, hi, 65536);
    EXPECT_EQ(points_of(dyadic), dyadic_grid(lo, hi, 65536));  // the points, not stored
    EXPECT_GE(dyadic.size(), 65536u);
    EXPECT_LE(dyadic.front(), lo);
    EXPECT_GE(dyadic.back(), hi);
    expect_same_counts(dyadic, awkward_values(points_of(dyadic), g));
  }
  std::vector<double> geo;
  for (int i = 0; i <= 12 * 32; ++i) geo.push_back(0.37 * std::exp2(i / 32.0));
  const GridIndex geometric = GridIndex::geometric(geo);
  std::vector<double> v = awkward_values(geometric.grid(), g);
  for (double& x : v) x = std::fabs(x);
  expect_same_counts(geometric, v);
}

// The data pass's per-column paths (issue 27 item 6): a grid per column -- narrow dyadic grids
// and wide linear ones (values outside each grid counted apart, the rest looked up), small
// geometric grids (counted directly) -- and the branch-free log lookup behind a transform that
// reaches +inf, each against a sort and merge of every column.
void expect_same_columns(const std::vector<const GridIndex*>& g, const RowMatrix& X,
                         const std::function<double(std::size_t, double)>& y) {
  for (int threads : {1, 3}) {
    const auto counts = column_counts(X, std::span<const GridIndex* const>(g), y, threads);
    for (std::size_t j = 0; j < g.size(); ++j) {
      std::vector<double> v(static_cast<std::size_t>(X.rows()));
      for (Eigen::Index r = 0; r < X.rows(); ++r)
        v[static_cast<std::size_t>(r)] = y(j, X(r, static_cast<Eigen::Index>(j)));
      const std::vector<std::int64_t> sorted = counts_below(v, points_of(*g[j]));
      ASSERT_EQ(counts[j].size(), sorted.size() + 1);
      EXPECT_TRUE(std::equal(sorted.begin(), sorted.end(), counts[j].begin())) << "column " << j;
      EXPECT_EQ(counts[j].back(), X.rows());
    }
  }
}

TEST(ScaleGridCounts, PerColumnPathsAreExact) {
  SeededRng g(3);
  const std::vector<double> v = awkward_values(log_grid(32, false), g);
  const auto rows = static_cast<Eigen::Index>(v.size() / 4);
  RowMatrix X(rows, 4);
  for (Eigen::Index i = 0; i < X.size(); ++i) X.data()[i] = v[static_cast<std::size_t>(i)];
  for (Eigen::Index r = 0; r < rows; r += 3) X(r, 1) = 5.9 + 0.1 * g.uniform01();  // inside
  const auto identity = [](std::size_t, double x) { return x; };
  const auto each = [](const std::vector<GridIndex>& grids) {
    std::vector<const GridIndex*> g;
    for (const GridIndex& grid : grids) g.push_back(&grid);
    return g;
  };
  std::vector<GridIndex> dyadic;
  for (auto [lo, hi] : {std::pair{5.875, 6.0625}, {-2.5, 1e4}, {-1e300, -9e299}, {-1, 1}})
    dyadic.push_back(GridIndex::dyadic(lo, hi, 65536));
  expect_same_columns(each(dyadic), X, identity);
  const auto distance = [](std::size_t j, double x) {
    return clamp_magnitude(std::fabs(x - (static_cast<double>(j) - 1.5) * 1e308));  // +inf
  };
  std::vector<GridIndex> geometric;
  for (double base : {0.37, 1e-300, 2.5e9, 0x1p-1022}) {
    std::vector<double> points;
    for (int i = 0; i <= 12 * 32; ++i) points.push_back(base * std::exp2(i / 32.0));
    geometric.push_back(GridIndex::geometric(points));
  }
  expect_same_columns(each(geometric), X, distance);  // small: counted directly
  std::vector<GridIndex> wide;
  for (int j = 0; j < 4; ++j) wide.push_back(GridIndex::points(linear_grid(-3e4, 1e4, 65536)));
  expect_same_columns(each(wide), X, identity);  // wide: most values inside
  const GridIndex abs_grid = GridIndex::log(32, true), signed_grid = GridIndex::log(32, false);
  expect_same_columns(same_grid(abs_grid, 4), X, distance);  // one log grid: the SIMD rows
  const auto offset = [](std::size_t, double x) { return clamp_magnitude(x - (-1.5e308)); };
  expect_same_columns(same_grid(signed_grid, 4), X, offset);
}

// The first pass with the rows' check in the same read (checked_log_bins): on finite rows the
// bins of column_bins; a NaN or an infinity of either sign is flagged (and its bin stays inside
// the grid: every row is still counted once per column).
TEST(ScaleGridCounts, CheckedPassIsThePassAndFlagsNonFiniteCells) {
  SeededRng g(5);
  const GridIndex grid = GridIndex::log(32, false);
  const std::vector<double> v = awkward_values(grid.grid(), g);
  const auto rows = static_cast<Eigen::Index>(v.size() / 4);
  RowMatrix X(rows, 4);
  for (Eigen::Index i = 0; i < X.size(); ++i) X.data()[i] = v[static_cast<std::size_t>(i)];
  const auto grids = same_grid(grid, 4);
  for (int threads : {1, 3}) {
    auto [bins, finite] = checked_log_bins(X, grid, threads);
    EXPECT_TRUE(finite);
    const auto counts = bin_counts(bins, grids);
    EXPECT_EQ(counts, column_counts(X, std::span<const GridIndex* const>(grids), identity(),
                                    threads));
    for (double bad : {std::numeric_limits<double>::quiet_NaN(),
                       -std::numeric_limits<double>::quiet_NaN(),
                       std::numeric_limits<double>::infinity(),
                       -std::numeric_limits<double>::infinity()}) {
      RowMatrix Y = X;
      Y(rows - 1, 3) = bad;
      auto [flagged_bins, all_finite] = checked_log_bins(Y, grid, threads);
      EXPECT_FALSE(all_finite);
      for (const auto& c : bin_counts(flagged_bins, grids)) EXPECT_EQ(c.back(), rows);
    }
  }
}

// Two passes from one read of the rows (the clipping bounds' fine grids and offsets, issue 27
// item 6): small per-column dyadic grids of 64 points, narrow and wide, and a shared log grid
// behind a transform, each pass's counts equal to its own pass's, on more rows than one block
// and 1 or 3 threads.
TEST(ScaleGridCounts, TwoPassesFromOneReadAreEachPass) {
  SeededRng g(5);
  RowMatrix X(1500, 3);
  for (Eigen::Index r = 0; r < X.rows(); ++r) {
    X(r, 0) = r % 5 == 0 ? 0.0 : standard_normal(g);       // an atom inside its fine grid
    X(r, 1) = 1e9 + 100 * standard_normal(g);                // spread over a narrow grid
    X(r, 2) = std::ldexp(standard_normal(g), -1000);         // around a tiny cell at 0
  }
  std::vector<GridIndex> fine;
  for (auto [lo, hi] : {std::pair{-1e-3, 1e-3}, {1e9 - 64, 1e9 + 64}, {-1e-300, 1e-300}})
    fine.push_back(GridIndex::dyadic(lo, hi, 64));
  std::vector<const GridIndex*> fine_ptrs;
  for (const GridIndex& f : fine) fine_ptrs.push_back(&f);
  const GridIndex offsets = GridIndex::log(64, false);
  const auto identity = [](std::size_t, double x) { return x; };
  const auto offset = [](std::size_t j, double x) {
    return clamp_magnitude(x - static_cast<double>(j) * 0.25);
  };
  const auto shared = same_grid(offsets, 3);
  for (int threads : {1, 3}) {
    const auto pass = column_bins_pair(X, std::span<const GridIndex* const>(fine_ptrs), identity,
                                       std::span<const GridIndex* const>(shared), offset, threads);
    EXPECT_EQ(bin_counts(pass.first, fine_ptrs), column_counts(X, fine_ptrs, identity, threads));
    EXPECT_EQ(bin_counts(pass.second, shared), column_counts(X, shared, offset, threads));
  }
  expect_same_columns(fine_ptrs, X, identity);  // the small grids against a sort and merge
}

// The selection from a pass's bins (one process) reads the counts as it builds the runs: the same
// cell, from the same draws, as from the counts below each point, on counts with long empty runs,
// single rows and one or three parts.
TEST(ScaleGridCounts, SelectionFromBinsIsTheSame) {
  SeededRng g(4);
  for (int trial = 0; trial < 40; ++trial) {
    const std::size_t points = 2 + g.uniform_below(3000);
    std::vector<std::vector<std::uint32_t>> parts(1 + 2 * (trial % 2),
                                                  std::vector<std::uint32_t>(points + 1, 0));
    for (int k = 0; k < 200; ++k) {
      const std::size_t bin = g.bit() ? g.uniform_below(points + 1)
                                      : (points + 1) / 2 + g.uniform_below(8);
      parts[g.uniform_below(parts.size())][std::min(bin, points)] += 1 + g.uniform_below(3);
    }
    std::vector<std::int64_t> below(points + 1, 0);  // counts below each point, then n
    std::int64_t sum = 0;
    for (std::size_t b = 0; b <= points; ++b) {
      for (const auto& p : parts) sum += p[b];
      below[b] = sum;
    }
    const std::int64_t n = below[points];
    std::vector<const std::uint32_t*> ptrs;
    for (const auto& p : parts) ptrs.push_back(p.data());
    const double q = 0.05 + 0.9 * g.uniform01(), epsilon = 0.01 + g.uniform01();
    SeededRng a(100 + trial), b(100 + trial);
    EXPECT_EQ(select_cell({below.data(), points}, n, q, epsilon, a),
              select_cell_bins(ptrs, points, n, q, epsilon, b));
    EXPECT_EQ(a.next_u64(), b.next_u64());  // the same draws
  }
}

// Windows next to the ends of the doubles (a location's recentring window of half-width DBL_MAX,
// a refine grid over the signed log grid's first or last cells): the multiples of h that cover
// them would reach +/-2^1024, so dyadic_grid falls back to linear_grid and every point is finite;
// GridIndex::dyadic has the same points and counts as a sort and merge (its arithmetic lookup
// reads x - p_0, which overflows on a span wider than DBL_MAX: that grid is stored and searched).
TEST(ScaleGridCounts, DyadicGridsNearTheEndsOfTheDoublesAreFinite) {
  SeededRng g(5);
  const std::vector<double> signed_log = log_grid(32, false);
  const std::size_t last = signed_log.size() - 1;
  for (auto [lo, hi] : {std::pair{-kMax, kMax}, {-kMax, -1e300}, {1e300, kMax}, {-kMax, 0.0},
                        {-0x1p1023, 0x1p1023}, {signed_log[0], signed_log[2]},
                        {signed_log[last - 2], signed_log[last]}, {-kMax, signed_log[1]}}) {
    for (std::size_t points : {16, 64, 65536}) {
      const std::vector<double> grid = dyadic_grid(lo, hi, points);
      EXPECT_TRUE(std::all_of(grid.begin(), grid.end(), [](double p) { return std::isfinite(p); }))
          << lo << " " << hi << " " << points;
      EXPECT_TRUE(std::is_sorted(grid.begin(), grid.end()) &&
                  std::adjacent_find(grid.begin(), grid.end()) == grid.end());
      EXPECT_LE(grid.front(), lo);
      EXPECT_GE(grid.back(), hi);
      const GridIndex index = GridIndex::dyadic(lo, hi, points);
      EXPECT_EQ(points_of(index), grid);
      expect_same_counts(index, awkward_values(grid, g));
    }
  }
}

// The bins path of a pass (one process: column_quantile_cells) against the dense path (counts
// below each stored point of dyadic_grid by a sort and merge, then select_columns), from the same
// generators: the same cells, over random windows of every width (next to +/-DBL_MAX too), values
// inside, beyond either end and at the points, quantiles whose best cell is the first or the last.
TEST(ScaleGridCounts, BinsAndDenseSelectionsAgree) {
  SeededRng g(6);
  const std::vector<double> signed_log = log_grid(32, false);
  for (int trial = 0; trial < 60; ++trial) {
    const std::size_t d = 3, rows = 50 + g.uniform_below(400);
    std::vector<std::pair<double, double>> windows;
    for (std::size_t j = 0; j < d; ++j) {
      const std::size_t i = g.uniform_below(signed_log.size() - 2);
      const double centre = std::ldexp(g.uniform01() - 0.5, static_cast<int>(g.uniform_below(60)));
      const double half = (1 + std::fabs(centre)) *
                          std::ldexp(1 + g.uniform01(), -static_cast<int>(g.uniform_below(40)));
      windows.push_back(trial % 4 == 0   ? std::pair{-kMax, kMax}
                        : trial % 4 == 1 ? std::pair{signed_log[i], signed_log[i + 2]}
                                         : std::pair{centre - half, centre + half});
    }
    const std::size_t points = trial % 3 == 0 ? 16 : 64 + g.uniform_below(4000);
    std::vector<GridIndex> grids;
    std::vector<std::vector<double>> stored;
    for (auto [lo, hi] : windows) {
      grids.push_back(GridIndex::dyadic(lo, hi, points));
      stored.push_back(dyadic_grid(lo, hi, points));
    }
    RowMatrix X(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(d));
    for (std::size_t j = 0; j < d; ++j) {
      const std::vector<double>& p = stored[j];
      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t kind = g.uniform_below(6);
        const double x = kind == 0   ? p[g.uniform_below(p.size())]
                         : kind == 1 ? (g.bit() ? kMax : -kMax)
                         : kind == 2 ? p.back() + (p.back() - p.front()) * g.uniform01() / 4
                         : kind == 3 ? p.front() - (p.back() - p.front()) * g.uniform01() / 4
                                     : p.front() + (p.back() - p.front()) * g.uniform01();
        X(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(j)) = clamp_magnitude(x);
      }
    }
    std::vector<std::vector<std::int64_t>> dense(d);
    for (std::size_t j = 0; j < d; ++j) {
      std::vector<double> v(rows);
      for (std::size_t r = 0; r < rows; ++r)
        v[r] = X(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(j));
      dense[j] = counts_below(v, stored[j]);
      dense[j].push_back(static_cast<std::int64_t>(rows));
    }
    std::vector<const GridIndex*> ptrs;
    for (const GridIndex& grid : grids) ptrs.push_back(&grid);
    const double q = trial % 5 == 0 ? 0.01 : trial % 5 == 1 ? 0.99 : g.uniform01();
    const double epsilon = trial % 2 == 0 ? 50.0 : 0.05 + g.uniform01();
    for (int threads : {1, 2}) {
      SeededRng a(1000 + trial), b(1000 + trial);
      ColumnGenerators ga(a, d), gb(b, d);
      const auto bins = column_quantile_cells(X, std::span<const GridIndex* const>(ptrs),
                                              identity(), q, epsilon, ga, threads,
                                              single_process());
      const auto cells = select_columns(dense, q, epsilon, gb, threads, single_process());
      EXPECT_EQ(bins, cells) << "trial " << trial;
      for (std::size_t j = 0; j < d; ++j) {
        ASSERT_LT(cells[j] + 1, stored[j].size());
        EXPECT_TRUE(std::isfinite(grids[j].point(bins[j] + 1) - grids[j].point(bins[j])));
      }
    }
  }
}

// q = 0.1, n = 1,000,007 (issue 28 item 2): in doubles, neighbours' scores could differ by
// 1 + 2^-34; the integer scores of any two neighbouring count vectors differ by at most one row.
TEST(ScaleGridCounts, ScoresAreExact) {
  const std::int64_t n = 1000007;
  const i128 target = static_cast<i128>(quantile_units(0.1)) * n;
  const i128 unit = static_cast<i128>(1) << 60;
  for (std::int64_t a = 100000; a < 100002; ++a) {
    const auto dist = [&](std::int64_t lo, std::int64_t hi) {
      const i128 l = lo * unit, h = hi * unit;
      return l > target ? l - target : (target > h ? target - h : i128{0});
    };
    // replace-one: every count moves by at most one; the score by at most one row exactly
    const i128 d0 = dist(a, a + 5), d1 = dist(a + 1, a + 6);
    EXPECT_LE(d0 > d1 ? d0 - d1 : d1 - d0, unit);
  }
  EXPECT_EQ(quantile_units(0.5), std::int64_t{1} << 59);
  EXPECT_EQ(quantile_units(1.0), std::int64_t{1} << 60);
}

// The fast coins' frequencies against exp(-gamma) and the discrete Laplace tail.
TEST(ScaleGridCounts, FastCoinsHaveTheirProbabilities) {
  SeededRng rng(3);
  RandomBits bits(rng);
  const int trials = 200000;
  for (double gamma : {0.0, 0.3, 2.0, 44.5 - 44.0}) {
    int hits = 0;
    for (int i = 0; i < trials; ++i) hits += bernoulli_exp_fast(bits, gamma);
    const double p = std::exp(-gamma), sd = std::sqrt(p * (1 - p) / trials);
    EXPECT_NEAR(hits / static_cast<double>(trials), p, 5 * sd + 1e-9) << gamma;
  }
  int far = 0;
  for (int i = 0; i < trials; ++i) far += bernoulli_exp_fast(bits, 45.0);
  EXPECT_EQ(far, 0);
  // P(nu >= g) for the discrete Laplace of scale t = 3/2: e^{-g/t} / (1 + e^{-1/t}) for g >= 1.
  for (int g : {-3, 0, 1, 4}) {
    int hits = 0;
    for (int i = 0; i < trials; ++i) hits += discrete_laplace_at_least(bits, g, 3, 2);
    const double z = 1 + std::exp(-2.0 / 3);
    const double p = g >= 1 ? std::exp(-g * 2.0 / 3) / z : 1 - std::exp(-(1 - g) * 2.0 / 3) / z;
    EXPECT_NEAR(hits / static_cast<double>(trials), p, 5 * std::sqrt(p * (1 - p) / trials)) << g;
  }
}

// Permute-and-flip over gaps: the exponential mechanism's acceptance law, cells far away never.
TEST(ScaleGridCounts, PermuteAndFlipOverGaps) {
  SeededRng rng(4);
  RandomBits bits(rng);
  std::vector<double> gamma(500, 1e6);
  gamma[17] = 0;
  gamma[18] = 1;
  int at17 = 0, at18 = 0;
  const int trials = 20000;
  for (int i = 0; i < trials; ++i) {
    const std::size_t k = permute_and_flip_gaps(gamma, bits);
    ASSERT_TRUE(k == 17 || k == 18);
    at17 += k == 17;
    at18 += k == 18;
  }
  // two candidates with acceptance 1 and e^-1: P(18) = 1/2 · e^-1 = 0.184
  EXPECT_NEAR(at18 / static_cast<double>(trials), 0.5 * std::exp(-1.0), 0.015);
}

}  // namespace
}  // namespace dpstats::scale_detail

namespace dpstats::scale_detail {
namespace {

// The walk over near runs (gamma < kFarGamma) as it was written first: the candidates expanded into
// segments, a segment found by binary search, each coin bernoulli_exp_fast. permute_and_flip_runs
// (one sampler per segment, segments found by block) must draw the same cell from the same bits.
std::size_t reference_walk(std::span<const CellRun> runs, RandomBits& bits) {
  struct Segment {
    std::size_t entry, first;
    double gamma;
  };
  std::vector<Segment> segments;
  std::size_t entries = 0;
  for (const CellRun& r : runs) {
    if (r.length == 0) continue;
    segments.push_back({entries, r.first, r.gamma});
    entries += r.length;
  }
  std::vector<std::size_t> order(entries);
  for (std::size_t i = 0; i < entries; ++i) order[i] = i;
  for (std::size_t k = 0; k < entries; ++k) {
    const std::size_t j = k + bits.uniform_below(entries - k);
    const std::size_t e = order[j];
    order[j] = order[k];
    const auto s = std::prev(std::upper_bound(
        segments.begin(), segments.end(), e,
        [](std::size_t x, const Segment& seg) { return x < seg.entry; }));
    if (bernoulli_exp_fast(bits, s->gamma)) return s->first + (e - s->entry);
  }
  return entries;
}

TEST(ScaleExactCoins, NearWalkDrawsTheSameCellAsTheReferenceWalk) {
  SeededRng g(11);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<CellRun> runs;
    std::size_t cell = 0;
    const int count = 1 + static_cast<int>(g.uniform_below(40));
    for (int r = 0; r < count; ++r) {
      const std::size_t length = g.uniform_below(trial % 3 == 0 ? 600 : 20);
      // gammas of every kind below kFarGamma: 0 (the mode), tiny, dyadic, whole, and general
      const double kinds[] = {0.0, 1e-30, 0.375, 1.0, 3.0, 21.99, kFarGamma * g.uniform01()};
      const double gamma = trial == 0 && r == 0 ? 0.0 : kinds[g.uniform_below(7)];
      runs.push_back({cell, length, r == count - 1 ? 0.0 : gamma});
      cell += length + g.uniform_below(5);
    }
    if (runs.back().length == 0) runs.back().length = 1;  // a cell of gamma 0: the walk ends
    SeededRng a(1000 + trial), b(1000 + trial);
    RandomBits bits_a(a), bits_b(b);
    EXPECT_EQ(permute_and_flip_runs(runs, bits_a), reference_walk(runs, bits_b)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace dpstats::scale_detail
