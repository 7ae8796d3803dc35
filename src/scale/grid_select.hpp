// The grid selection's kernel, shared by every selection of the scale layer: counts below each
// grid point (merged exactly over ranks) and the cell chosen by permute-and-flip on exact integer
// scores (docs/proofs/scale.md §1, §1b). Internal to src/scale.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::scale_detail {

__extension__ typedef __int128 i128;

// q rounded to a multiple of 2^-60 (exact for every q with at most 60 fractional bits), times
// 2^60: the scores are integers in units of 2^-60 rows.
std::int64_t quantile_units(double q);

// below[i] = #{v < grid[i]} for the values of this process (sorted: one merge, O(n + N)).
std::vector<std::int64_t> counts_below(std::vector<double> values, std::span<const double> grid);
// The same over every rank of `comm` (exact int64 sums; the last word is the number of values).
std::vector<std::int64_t> merged_counts_below(std::span<const double> values,
                                              std::span<const double> grid, Communicator& comm);

// The cell (index into the grid's cells) that permute-and-flip releases for the q-quantile of n
// values with counts `below` (size N >= 2, non-decreasing, below[N-1] <= n), quality
// -dist(q n, [A_i, A_{i+1}]) computed exactly (integers in units of 2^-60), at epsilon.
std::size_t select_cell(std::span<const std::int64_t> below, std::int64_t n, double q,
                        double epsilon, Rng& rng);

// The same from a pass's 32-bit bins (grid_counts.hpp): A_k is the sum of bins 0..k over the
// parts, added as the selection reads them (no vector of counts); `points` the grid's size, n the
// rows (every row is in one bin).
std::size_t select_cell_bins(std::span<const std::uint32_t* const> parts, std::size_t points,
                             std::int64_t n, double q, double epsilon, Rng& rng);

// Counts known on a range of a grid's points, A_k = known[k - first] for k in [first, first +
// known.size() - 1] (at least two points), and any other point's A_k from `exact` (a count over
// the rows, asked for only where a far cell's first factor e^-22 comes true).
struct PartialCounts {
  std::size_t first = 0;
  std::vector<std::int64_t> known;
  std::function<std::int64_t(std::size_t)> exact;
};

// select_cell's cell from partial counts when the cells outside the known points are far from
// the q-quantile (their coins are then decided without their counts): the same cell, from the
// same bits, as select_cell with every count; otherwise nothing, and nothing is drawn.
std::optional<std::size_t> select_cell_partial(const PartialCounts& counts, std::size_t points,
                                               std::int64_t n, double q, double epsilon, Rng& rng);

// x >= 0 as a double, relative error at most 2^-53 + 2^-63.
double to_double(i128 x);

// One generator per column, split from the caller's in column order, so that a seeded estimate
// does not depend on the thread count; a generator that cannot split serves every column in order.
class ColumnGenerators {
 public:
  ColumnGenerators(Rng& rng, std::size_t columns);
  Rng& operator[](std::size_t j) { return split_ ? *gens_[j] : base_; }
  bool split() const { return split_; }

 private:
  Rng& base_;
  std::vector<std::unique_ptr<Rng>> gens_;
  bool split_ = false;
};

// For every column j, the cell select_cell releases from counts[j] (its grid's counts below each
// point, then n) for the q-quantile at epsilon, drawn with column j's generator on rank 0 (the
// columns in parallel when the generators split and there is one rank) and given to every rank.
std::vector<std::size_t> select_columns(const std::vector<std::vector<std::int64_t>>& counts,
                                        double q, double epsilon, ColumnGenerators& gens,
                                        int threads, Communicator& comm);

// select_columns for one process from a pass's bins: column j's bins start at offset[j] in every
// part, its grid has points[j] points; the columns in parallel when the generators split.
std::vector<std::size_t> select_columns_bins(std::span<const std::uint32_t* const> parts,
                                             std::span<const std::size_t> offset,
                                             std::span<const std::size_t> points, std::int64_t n,
                                             double q, double epsilon, ColumnGenerators& gens,
                                             int threads);

}  // namespace dpstats::scale_detail
