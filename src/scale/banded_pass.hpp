// Banded passes (docs/proofs/scale.md §1d): a pass that counts, for every column, the values
// below a band and keeps the values inside it (the median's) or bins them on the selection's
// grid (the MAD's), so that it reads the rows at about the speed of a sum. A band holds the
// values whose cells are near the quantile; the cells away from it are far: their coins are
// decided without their counts (select_cell_partial), and the cell released is the one a full
// count gives, from the same bits. Where a band does not decide a column's near cells (a pilot
// that misjudged it, a grid outside it) that selection counts every value instead; a small table
// or a small epsilon reads no pilot. Internal to src/scale; one process.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "grid_counts.hpp"
#include "grid_select.hpp"

namespace dpstats::scale_detail {

// A pilot of the rows (every (n / 8192)-th) for selections at one epsilon: its values, the levels
// `half` on each side of a quantile that a band must hold (the cells that are not far, and the
// pilot's error), and the median's band of each column (its values whose rank may be near the
// median's, and a few cells more).
struct Pilot {
  std::size_t rows = 0;
  std::vector<double> sample;  // column j's values at j * rows
  double half = 0;
  int per_octave = 0;
  std::vector<double> lo, hi;  // the median's band [lo_j, hi_j)
  std::vector<double> share;   // the pilot's share of values in it
  std::span<const double> column(std::size_t j) const {
    return {sample.data() + j * rows, rows};
  }
};

// Nothing where the bands would hold much of the values (a small table or a small epsilon): the
// selections then count every value.
std::optional<Pilot> plan_pilot(const ConstMatrixRef& X, double epsilon, int per_octave);

// y of a value of column j: the value (no centre) or |x - centre[j]| clamped to the finite range,
// the transforms of column_stages.hpp (identity, distance_to), bit for bit.
struct BandTransform {
  const std::vector<double>* centre = nullptr;
  double operator()(std::size_t j, double x) const {
    return centre == nullptr ? x : clamp_magnitude(std::fabs(x - (*centre)[j]));
  }
};

// One selection's banded pass: for every column j, one band [lo_j, hi_j) of y (an empty one at
// +inf holds nothing), the count of the values with y below lo_j, and the values inside binned on
// column j's grid: hist[j][k - first[j]] values have bin k.
struct BandedPass {
  std::int64_t rows = 0;
  std::vector<double> lo, hi;
  std::vector<std::int64_t> below;
  std::vector<std::size_t> first, last;  // the bins of each band's ends
  std::vector<std::vector<std::int64_t>> hist;
  // a pass that keeps its values (the median's) has them instead of hist: column j's in its band
  std::vector<std::vector<double>> kept;
};

// The pass over X (threads across rows). With `check`, the rows' finiteness check is made in the
// same read: nothing when a cell is not finite (the caller reports it with check_data's error).
// With `keep` (each column's expected share of values in its band), the values inside are kept
// instead of binned.
std::optional<BandedPass> banded_pass(const ConstMatrixRef& X, std::vector<double> lo,
                                      std::vector<double> hi,
                                      std::span<const GridIndex* const> grids, BandTransform y,
                                      bool check, int threads, const std::vector<double>* keep);

// The median's pass (its band's values kept; nothing when `check` finds a cell that is not
// finite), and the MAD's (a band of the distances to `centre`, from the pilot's distances to it).
std::optional<BandedPass> median_pass(const ConstMatrixRef& X, const Pilot& pilot,
                                      const GridIndex& grid, bool check, int threads);
BandedPass mad_pass(const ConstMatrixRef& X, const Pilot& pilot,
                    const std::vector<double>& centre, const GridIndex& grid, int threads);

// For column j, the counts A_k = #{rows : y(j, x) < p_k} of a run of the grid's points around the
// q-quantile of y, from the pass; nothing where the bands do not decide two points around it.
// Any other point's count is made over X's column j when asked (PartialCounts::exact).
std::optional<PartialCounts> band_counts(const ConstMatrixRef& X, const BandedPass& pass,
                                         std::size_t j, const GridIndex& grid, BandTransform y,
                                         double q);

// For the median's pass, the counts of every point of `grid` (the refine grid of column j) from
// the values kept in the band, when the grid lies inside it; otherwise nothing.
std::optional<PartialCounts> kept_counts(const BandedPass& pass, std::size_t j,
                                         const GridIndex& grid);

// For every column j, the cell of grids[j] that the grid selection releases for the q-quantile
// of y(j, x) at epsilon with column j's generator: select_cell_partial on counts(j) where they
// decide it, else select_cell_bins on a full pass of every column (made once, only then) -- the
// same cell from the same bits either way.
std::vector<std::size_t> banded_cells(
    const ConstMatrixRef& X, std::span<const GridIndex* const> grids, BandTransform y,
    const std::function<std::optional<PartialCounts>(std::size_t)>& counts, double q,
    double epsilon, ColumnGenerators& gens, int threads);

}  // namespace dpstats::scale_detail
