// The stages the per-column estimators are made of, each one pass over the rows for every column
// at once (grid_counts.hpp) and one selection per column (grid_select.hpp): a quantile of a
// per-column transform of the values on per-column grids, and the refined median (docs/proofs/
// scale.md §2 steps 1-2). Internal to src/scale.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/data/matrix.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "banded_pass.hpp"
#include "grid_counts.hpp"
#include "grid_select.hpp"

namespace dpstats::scale_detail {

// For every column j, the cell of grids[j] released for the q-quantile from one process's pass
// over its `rows` rows.
inline std::vector<std::size_t> select_pass_cells(const ColumnBins& pass,
                                                  std::span<const GridIndex* const> grids,
                                                  std::int64_t rows, double q, double epsilon,
                                                  ColumnGenerators& gens, int threads) {
  std::vector<const std::uint32_t*> parts;
  for (const BinBuffer& b : pass.parts)
    if (b) parts.push_back(b.get());
  std::vector<std::size_t> points(grids.size());
  for (std::size_t j = 0; j < grids.size(); ++j) points[j] = grids[j]->size();
  return select_columns_bins(parts, pass.offset, points, rows, q, epsilon, gens, threads);
}

// For every column j, the cell of grids[j] that the grid selection releases for the q-quantile
// of y(j, x) over the column's values (all ranks), at epsilon, with column j's generator.
template <class Transform>
std::vector<std::size_t> column_quantile_cells(const ConstMatrixRef& X,
                                               std::span<const GridIndex* const> grids,
                                               Transform y, double q, double epsilon,
                                               ColumnGenerators& gens, int threads,
                                               Communicator& comm) {
  if (comm.size() == 1 && X.rows() > 0)  // the selections read the pass's bins as they are
    return select_pass_cells(column_bins(X, grids, y, threads), grids, X.rows(), q, epsilon, gens,
                             threads);
  const auto counts = merged_column_counts(X, grids, y, threads, comm);
  return select_columns(counts, q, epsilon, gens, threads, comm);
}

inline auto identity() {
  return [](std::size_t, double x) { return x; };
}

// |x - centre_j|, clamped to the finite range.
inline auto distance_to(const std::vector<double>& centre) {
  return [&centre](std::size_t j, double x) { return clamp_magnitude(std::fabs(x - centre[j])); };
}

// The same grid for every column.
inline std::vector<const GridIndex*> same_grid(const GridIndex& g, std::size_t d) {
  return std::vector<const GridIndex*>(d, &g);
}

struct RefinedMedian {
  double location = 0;    // midpoint of the refined cell
  double resolution = 0;  // the refine grid's spacing there
  std::size_t coarse = 0; // the coarse cell's index on the signed log grid
  bool at_end = false;    // the coarse cell is the first or last of its grid
};

// Steps 1-2 of docs/proofs/scale.md §2 for every column: the median's cell on the signed log grid
// (e_coarse), then its cell on a dyadic grid of at least refine_points over that cell and its two
// neighbours (e_refine; dyadic_grid: exact points, looked up by arithmetic). Two passes, 2d
// selections. With `banded` (one process: the median's banded pass), both selections read the
// values it kept instead (banded_cells; a column they do not decide counts every value). Else
// with `kept` (one process), the signed log grid's pass is read from *kept when it holds one (an
// earlier estimate's on the same rows and grid), else counted and left there.
inline std::vector<RefinedMedian> refined_medians(const ConstMatrixRef& X,
                                                  const GridIndex& signed_grid,
                                                  std::size_t refine_points, double e_coarse,
                                                  double e_refine, ColumnGenerators& gens,
                                                  int threads, Communicator& comm,
                                                  ColumnBins* kept = nullptr,
                                                  const BandedPass* banded = nullptr) {
  const auto d = static_cast<std::size_t>(X.cols());
  const std::span<const double> g = signed_grid.grid();
  const std::size_t last = g.size() - 1;
  const std::vector<const GridIndex*> signed_grids = same_grid(signed_grid, d);
  std::vector<std::size_t> coarse;
  if (banded != nullptr) {
    coarse = banded_cells(
        X, signed_grids, {},
        [&](std::size_t j) { return band_counts(X, *banded, j, signed_grid, {}, 0.5); }, 0.5,
        e_coarse, gens, threads);
  } else if (kept != nullptr && comm.size() == 1 && X.rows() > 0) {
    if (kept->parts.empty()) *kept = column_bins(X, signed_grids, identity(), threads);
    coarse = select_pass_cells(*kept, signed_grids, X.rows(), 0.5, e_coarse, gens, threads);
  } else {
    coarse = column_quantile_cells(X, signed_grids, identity(), 0.5, e_coarse, gens, threads,
                                   comm);
  }
  std::vector<GridIndex> fine;
  fine.reserve(d);
  for (std::size_t j = 0; j < d; ++j) {
    const std::size_t i = coarse[j];
    fine.push_back(
        GridIndex::dyadic(g[i == 0 ? 0 : i - 1], g[std::min(i + 2, last)], refine_points));
  }
  std::vector<const GridIndex*> fine_grids;
  for (const GridIndex& f : fine) fine_grids.push_back(&f);
  const auto refined =
      banded != nullptr
          ? banded_cells(
                X, fine_grids, {},
                [&](std::size_t j) { return kept_counts(*banded, j, fine[j]); }, 0.5, e_refine,
                gens, threads)
          : column_quantile_cells(X, fine_grids, identity(), 0.5, e_refine, gens, threads, comm);
  std::vector<RefinedMedian> out(d);
  for (std::size_t j = 0; j < d; ++j) {
    const GridIndex& f = fine[j];
    const GridCell cell{f.point(refined[j]), f.point(refined[j] + 1), refined[j]};
    out[j] = {cell.midpoint(), cell.hi - cell.lo, coarse[j],
              coarse[j] == 0 || coarse[j] + 1 == last};
  }
  return out;
}

}  // namespace dpstats::scale_detail
