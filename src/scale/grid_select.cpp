// The grid selection's kernel (grid_select.hpp; docs/proofs/scale.md §1, §1b).
#include "grid_select.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/draw_log.hpp"
#include "dpstats/parallel.hpp"
#include "exact_coins.hpp"

namespace dpstats::scale_detail {
namespace {

constexpr double kUnit = 0x1p60;  // scores are integers in units of 2^-60 rows
// permute-and-flip's shrink of epsilon (mechanisms/exponential.cpp): it absorbs the relative
// rounding (at most 4 units of 2^-53) of the computed exponents.
constexpr double kEpsilonShrink = 1.0 - 0x1p-40;

}  // namespace

std::int64_t quantile_units(double q) {
  require(q >= 0 && q <= 1, "q must be in [0, 1], got {}", format_number(q));
  return static_cast<std::int64_t>(std::nearbyint(q * kUnit));  // q·2^60 is exact; <= 2^60
}

double to_double(i128 x) {
  const auto u = static_cast<u128>(x);
  const auto high = static_cast<std::uint64_t>(u >> 64);
  if (high == 0) return static_cast<double>(static_cast<std::uint64_t>(u));
  const int s = 64 - std::countl_zero(high);
  return std::ldexp(static_cast<double>(static_cast<std::uint64_t>(u >> s)), s);
}

std::vector<std::int64_t> counts_below(std::vector<double> values, std::span<const double> grid) {
  std::sort(values.begin(), values.end());
  std::vector<std::int64_t> below(grid.size());
  std::size_t k = 0;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    while (k < values.size() && values[k] < grid[i]) ++k;
    below[i] = static_cast<std::int64_t>(k);
  }
  return below;
}

std::vector<std::int64_t> merged_counts_below(std::span<const double> values,
                                              std::span<const double> grid, Communicator& comm) {
  std::vector<std::int64_t> words;
  all_or_none(comm, [&] { words = counts_below({values.begin(), values.end()}, grid); });
  words.push_back(static_cast<std::int64_t>(values.size()));
  if (comm.size() > 1) comm.allreduce_sum(words);
  return words;
}

namespace {

// dist_i = max(A_i u - Q n, Q n - A_{i+1} u, 0) in units of 2^-60 (u = 2^60), exactly in 128 bits
// (A_i, n < 2^63 and Q <= 2^60). Empty cells next to each other share A_i = A_{i+1}, hence their
// score: they are one run. The exponent of a run is (dist - min dist) 2^-60 · epsilon' / 2, one
// rounding of an exact integer and one product (relative error below 3 units of 2^-53, which
// permute-and-flip's 2^-40 shrink of epsilon absorbs, mechanisms/exponential.cpp).
// `counts` knows A_k exactly on the points [first_point(), last_point()]: `below(k)` gives them,
// read in non-decreasing order (a repeat allowed), so that they may be summed as they are read;
// `flat_from(k)` the largest e in [k, last_point()] with A_k = A_e, read past in the same order;
// `exact(k)` any other point's A_k (rarely: see below). The cells outside the known points are
// far when their distances' lower bounds (A is non-decreasing) say so, and then they are one far
// run each whose exponents are read only where a coin needs them (permute_and_flip_runs): the
// same bits and the same cell as with every count known. Otherwise nothing is drawn and nothing
// is returned (docs/proofs/scale.md §1d).
template <class Counts>
std::optional<std::size_t> select_runs(std::size_t cells, Counts& counts, std::int64_t n,
                                       double q, double epsilon, Rng& rng) {
  check_epsilon(epsilon);
  require(cells >= 1, "the grid must have at least one cell");
  const i128 target = static_cast<i128>(quantile_units(q)) * n;
  const i128 unit = static_cast<i128>(1) << 60;
  const std::size_t a = counts.first_point(), b = counts.last_point();
  require(a < b && b <= cells, "select_runs: the known points must hold a cell");
  thread_local std::vector<CellRun> runs;  // kept between calls: a selection allocates nothing
  thread_local std::vector<i128> dist;
  runs.assign(1, CellRun{});  // the cells below a, if any: their run is set below
  dist.assign(1, 0);
  const std::int64_t first = counts.below(a);
  std::int64_t start = first;  // A_i of the run that starts at cell i
  for (std::size_t i = a; i < b;) {
    std::size_t end = i + 1;
    const std::int64_t next = counts.below(i + 1);
    if (start == next) end = std::max(end, counts.flat_from(i + 1));
    const i128 lo = start * unit, hi = next * unit;
    runs.push_back({i, end - i, 0});
    dist.push_back(lo > target ? lo - target : (target > hi ? target - hi : 0));
    start = next;  // A_end (an empty run's counts are all equal)
    i = end;
  }
  const i128 best = *std::min_element(dist.begin() + 1, dist.end());
  const double rate = epsilon * kEpsilonShrink / 2 / kUnit;  // sensitivity 1, not monotone
  auto gamma = [&](i128 d) { return to_double(d - best) * rate; };
  // The cells outside: dist_i >= Q n - A_a u below a, >= A_b u - Q n from b on.
  const i128 left = target - first * unit, right = start * unit - target;
  if (a > 0 && (left < best || gamma(left) < kFarGamma)) return std::nullopt;
  if (b < cells && (right < best || gamma(right) < kFarGamma)) return std::nullopt;
  DrawLog::note("exponential", 2 / epsilon);  // grid_quantile_entry's noise scale
  for (std::size_t r = 1; r < runs.size(); ++r) runs[r].gamma = gamma(dist[r]);
  if (a > 0) runs[0] = {0, a, gamma(left), false};
  if (b < cells) runs.push_back({b, cells - b, gamma(right), false});
  const std::size_t skip = a > 0 ? 0 : 1;  // no cells below a: no run for them
  const std::span<const CellRun> all(runs.data() + skip, runs.size() - skip);
  auto exact_gamma = [&](std::size_t cell) {
    const i128 lo = counts.exact(cell) * unit, hi = counts.exact(cell + 1) * unit;
    return gamma(lo > target ? lo - target : (target > hi ? target - hi : 0));
  };
  RandomBits bits(rng);
  return permute_and_flip_runs(all, bits, exact_gamma);
}

// The counts below each point, as a vector.
struct VectorCounts {
  std::span<const std::int64_t> below_;
  std::size_t first_point() const { return 0; }
  std::size_t last_point() const { return below_.size() - 1; }
  std::int64_t exact(std::size_t k) const { return below_[k]; }
  std::int64_t below(std::size_t k) const { return below_[k]; }
  std::size_t flat_from(std::size_t k) const {
    const std::int64_t a = below_[k];
    std::size_t e = k;
    while (e + 1 < below_.size() && below_[e + 1] == a) ++e;
    return e;
  }
};

// The counts below each point from a pass's bins (A_k = bins 0..k added over the parts), summed
// as they are read: A_read is held in `sum`. A flat stretch is a stretch of empty bins, found
// eight bins at a time.
struct BinCounts {
  std::span<const std::uint32_t* const> parts;
  std::size_t cells;
  std::size_t read = 0;
  std::int64_t sum = 0;

  BinCounts(std::span<const std::uint32_t* const> p, std::size_t c) : parts(p), cells(c) {
    for (const std::uint32_t* part : parts) sum += part[0];
  }
  std::size_t first_point() const { return 0; }
  std::size_t last_point() const { return cells; }
  std::int64_t exact(std::size_t) const {  // every point is known
    throw std::logic_error("BinCounts: every point is known");
  }
  static bool none16(const std::uint32_t* p) {
    std::uint32_t x = 0;
    for (int i = 0; i < 16; ++i) x |= p[i];
    return x == 0;
  }
  std::uint32_t any(std::size_t b) const {
    std::uint32_t x = 0;
    for (const std::uint32_t* part : parts) x |= part[b];
    return x;
  }
  std::int64_t below(std::size_t k) {
    for (; read < k;) {
      ++read;
      for (const std::uint32_t* part : parts) sum += part[read];
    }
    return sum;
  }
  // Bins k + 1.. are empty up to the one returned (A_k = A_e): read == k on entry. One part (one
  // thread's pass) is read 16 bins at a time: a log grid's bins are almost all empty.
  std::size_t flat_from(std::size_t k) {
    std::size_t e = k;
    if (parts.size() == 1) {
      while (e + 16 <= cells && none16(parts[0] + e + 1)) e += 16;
    } else {
      while (e + 8 <= cells && ((any(e + 1) | any(e + 2) | any(e + 3) | any(e + 4) | any(e + 5) |
                                 any(e + 6) | any(e + 7) | any(e + 8)) == 0))
        e += 8;
    }
    while (e < cells && any(e + 1) == 0) ++e;
    read = e;  // the bins up to e added nothing to sum
    return e;
  }
};

}  // namespace

std::size_t select_cell(std::span<const std::int64_t> below, std::int64_t n, double q,
                        double epsilon, Rng& rng) {
  require(below.size() >= 2, "the grid must have at least one cell");
  VectorCounts counts{below};
  return *select_runs(below.size() - 1, counts, n, q, epsilon, rng);
}

namespace {

// PartialCounts as select_runs reads them.
struct KnownCounts {
  const PartialCounts& c;
  std::size_t first_point() const { return c.first; }
  std::size_t last_point() const { return c.first + c.known.size() - 1; }
  std::int64_t below(std::size_t k) const { return c.known[k - c.first]; }
  std::size_t flat_from(std::size_t k) const {
    std::size_t e = k;
    while (e < last_point() && below(e + 1) == below(k)) ++e;
    return e;
  }
  std::int64_t exact(std::size_t k) const {
    return k >= first_point() && k <= last_point() ? below(k) : c.exact(k);
  }
};

}  // namespace

std::optional<std::size_t> select_cell_partial(const PartialCounts& counts, std::size_t points,
                                               std::int64_t n, double q, double epsilon,
                                               Rng& rng) {
  require(points >= 2 && counts.known.size() >= 2 &&
              counts.first + counts.known.size() <= points,
          "select_cell_partial: at least two known points of the grid's");
  KnownCounts known{counts};
  return select_runs(points - 1, known, n, q, epsilon, rng);
}

std::size_t select_cell_bins(std::span<const std::uint32_t* const> parts, std::size_t points,
                             std::int64_t n, double q, double epsilon, Rng& rng) {
  require(points >= 2, "the grid must have at least one cell");
  BinCounts counts(parts, points - 1);
  return *select_runs(points - 1, counts, n, q, epsilon, rng);
}

ColumnGenerators::ColumnGenerators(Rng& rng, std::size_t columns) : base_(rng) {
  for (std::size_t j = 0; j < columns; ++j) {
    auto g = rng.split();
    if (!g) break;
    gens_.push_back(std::move(g));
  }
  split_ = gens_.size() == columns;
}

std::vector<std::size_t> select_columns(const std::vector<std::vector<std::int64_t>>& counts,
                                        double q, double epsilon, ColumnGenerators& gens,
                                        int threads, Communicator& comm) {
  const std::size_t d = counts.size();
  const auto chosen = on_root(comm, [&] {
    std::vector<std::uint64_t> cells(d);
    parallel_tasks(d, gens.split() && comm.size() == 1 ? threads : 1, [&](std::size_t j) {
      const std::vector<std::int64_t>& c = counts[j];
      cells[j] = select_cell({c.data(), c.size() - 1}, c.back(), q, epsilon, gens[j]);
    });
    return cells;
  });
  return {chosen.begin(), chosen.end()};
}

std::vector<std::size_t> select_columns_bins(std::span<const std::uint32_t* const> parts,
                                             std::span<const std::size_t> offset,
                                             std::span<const std::size_t> points, std::int64_t n,
                                             double q, double epsilon, ColumnGenerators& gens,
                                             int threads) {
  const std::size_t d = points.size();
  std::vector<std::size_t> cells(d);
  parallel_tasks(d, gens.split() ? threads : 1, [&](std::size_t j) {
    std::vector<const std::uint32_t*> column(parts.size());
    for (std::size_t k = 0; k < parts.size(); ++k) column[k] = parts[k] + offset[j];
    cells[j] = select_cell_bins(column, points[j], n, q, epsilon, gens[j]);
  });
  return cells;
}

}  // namespace dpstats::scale_detail
