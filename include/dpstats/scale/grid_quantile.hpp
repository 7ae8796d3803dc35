// Private quantile over the cells of a public grid, with no public range: the substrate's
// scale-free quantile (docs/proofs/scale.md §1).
//
// A grid is a public increasing list of points p_0 < ... < p_{N-1}; its cells are
// [p_i, p_{i+1}). The exponential mechanism (exact permute-and-flip, mechanisms/exponential.hpp)
// picks cell i with quality  -dist(q n, [A_i, A_{i+1}]),  A_i = #{x < p_i}: every point of the
// cell has between A_i and A_{i+1} values below it, so a cell that holds the q-quantile scores 0.
// Sensitivity 1 under replace-one and add/remove; not monotone; pure epsilon-DP.
// Scoring cells, not points, is what makes the grid harmless at every scale: when the whole
// bulk of the data falls between two grid points, the point score of mechanisms/quantile.hpp
// ties every candidate (and the choice is uniform over the grid), while the cell score still
// singles out the cell that holds the bulk.
//
// log_grid: the signed logarithmic grid covering the whole double range: -DBL_MAX,
// -2^k (1 + j/m) (k from 1023 down to -1022, j from m-1 down to 0), 0, +2^k (1 + j/m), +DBL_MAX;
// every finite double lies in [p_0, p_{N-1}]. Cells have relative width at most 1/m (away from
// 0, where the cell [0, 2^-1022) holds the subnormals). About 2 * 2046 * m points.
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

// The public log grid with m = per_octave points per octave, in [1, 1024]; `nonnegative` keeps
// 0 and the positive half only (for norms and absolute deviations).
std::vector<double> log_grid(int per_octave, bool nonnegative = false);

// log_grid(per_octave, nonnegative).size() without building it: 2046 m + 1 positive points
// (with DBL_MAX), then 0, then (signed) their negatives; for plans (rank errors, public values).
std::size_t log_grid_points(int per_octave, bool nonnegative = false);

// `points` evenly spaced points from lower to upper (both included, lower < upper finite,
// points >= 2); points that coincide in floating point are merged, so the result is strictly
// increasing (it may be shorter than `points`).
std::vector<double> linear_grid(double lower, double upper, std::size_t points);

// A linear grid of exact points: the multiples of h from the largest one <= lower to the smallest
// one >= upper, h the largest power of two <= (upper - lower) / (points - 1) (lower < upper finite,
// points >= 2); so at least `points` and fewer than 2 points + 1 points, spacing at most that of
// linear_grid(lower, upper, points). Every point is an exact double and a value's cell is found by
// arithmetic alone (the scale layer's refine grids). Falls back to linear_grid when h would be
// subnormal-limited or the multiples leave the exact range.
std::vector<double> dyadic_grid(double lower, double upper, std::size_t points);

// The released cell [lo, hi) = [p_index, p_{index+1}).
struct GridCell {
  double lo = 0, hi = 0;
  std::size_t index = 0;
  double midpoint() const { return lo + (hi - lo) / 2; }
};

// Exponential mechanism over the cells of `grid` (strictly increasing, finite, >= 2 points) for
// the q-quantile of `values` (finite, any order, non-empty). Pure epsilon-DP. Values outside
// [grid.front(), grid.back()) count as below or above every cell. Checks every argument before
// drawing noise. Utility: with probability >= 1 - beta the released cell's rank interval
// [A_i, A_{i+1}] is within grid_quantile_rank_error(epsilon, grid.size(), beta) of q n.
GridCell grid_quantile_cell(std::span<const double> values, std::span<const double> grid,
                            double q, double epsilon, Rng& rng);
// The same selection over the values of every rank of `comm` (each rank passes its own, possibly
// none; non-empty in all): the counts below each grid point and the value count are added
// exactly over ranks (one int64 allreduce of grid.size() + 1 words), rank 0 draws the cell and
// every rank gets it. The quality, hence the release, is the single-process one on the union of
// the values, for any P and any cut; one process: exactly the overload above.
GridCell grid_quantile_cell(std::span<const double> values, std::span<const double> grid,
                            double q, double epsilon, Rng& rng, Communicator& comm);

// The entry grid_quantile_cell charges (exponential_mechanism_entry, mechanism renamed).
LedgerEntry grid_quantile_entry(double epsilon, std::string purpose);

// 2 (ln(cells) + ln(1/beta)) / epsilon: the rank error exceeded with probability <= beta.
double grid_quantile_rank_error(double epsilon, std::size_t grid_points, double beta);

}  // namespace dpstats
