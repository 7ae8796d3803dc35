// What one release's estimates on the same rows share (private_bounds: the location and scale,
// then the clipping bounds), in one process: the rows' finiteness check, made once (in the same
// read as the signed log grid's pass where that grid is exact), and the signed log grid's pass
// (the scale's median and the clipping bounds' anchor count the same grid with the same
// transform: the same counts, so each selection is the one its own pass gives).
// Internal to src/scale.
#pragma once
#include <optional>
#include <stdexcept>
#include <utility>

#include "dpstats/scale/clip_bounds.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "banded_pass.hpp"
#include "grid_counts.hpp"

namespace dpstats::scale_detail {

struct SharedPass {
  bool checked = false;  // check_data was made on these rows
  int per_octave = 0;    // the signed log grid of `coarse` (0: no pass kept)
  ColumnBins coarse;
  std::optional<Pilot> pilot;        // the location and scale's pilot, and the median's
  std::optional<BandedPass> median;  // banded pass, when made
  bool full_passes = false;          // no banded pass: every selection counts every value
};

// Whether an earlier estimate checked the rows; from now on they count as checked (the caller
// checks them or throws).
inline bool was_checked(SharedPass* s) { return s != nullptr && std::exchange(s->checked, true); }

// The pass to read, or to fill, on the signed log grid of per_octave points an octave; null
// without `s` or where another grid's pass is kept.
inline ColumnBins* coarse_pass(SharedPass* s, int per_octave) {
  if (s == nullptr || (s->per_octave != 0 && s->per_octave != per_octave)) return nullptr;
  s->per_octave = per_octave;
  return &s->coarse;
}

// The rows' finiteness check and the signed log grid's pass in one read (checked_log_bins), before
// anything is charged: one process, rows not empty, a per_octave of a power of two (an exact log
// grid); a non-finite cell throws check_data's error. Elsewhere nothing is done here: each estimate
// checks and counts the rows itself.
inline void check_and_count(SharedPass& s, const ConstMatrixRef& X, int per_octave, int threads,
                            Communicator& comm) {
  if (comm.size() > 1 || X.rows() == 0 || X.cols() == 0 || s.checked || s.per_octave != 0) return;
  const GridIndex grid = GridIndex::log(per_octave, false);
  if (!grid.is_exact_log()) return;
  auto [bins, finite] = checked_log_bins(X, grid, threads);
  if (!finite) {
    check_data(X);  // throws, naming the first cell that is not finite
    throw std::logic_error("check_and_count: a cell was flagged that check_data accepts");
  }
  s.checked = true;
  s.per_octave = per_octave;
  s.coarse = std::move(bins);
}

// The rows' finiteness check and the location and scale's median's banded pass (o:
// private_scale's options) in one read, before anything is charged: one process, when plan_pilot
// gives bands. Elsewhere check_and_count.
void check_and_band(SharedPass& s, const ConstMatrixRef& X, const ScaleOptions& o,
                    Communicator& comm);

// private_scale and private_clip_bounds reading and filling `shared` (one process; with more
// ranks it is not used).
ScaleEstimate private_scale(const ConstMatrixRef& X, const ScaleOptions& o,
                            ReleaseBudget& account, Rng& rng, SharedPass* shared);
ClipBounds private_clip_bounds(const ConstMatrixRef& X, const ClipBoundsOptions& o,
                               ReleaseBudget& account, Rng& rng, SharedPass* shared);

}  // namespace dpstats::scale_detail
