// Per-column private location accurate to a fraction of the column's SCALE, not of |location|
// (issue #15; docs/proofs/scale.md §2b). private_scale's median is resolved on a linear grid over
// three log-grid cells, whose spacing is a fixed fraction of |median|: at a shift of 10^6 scales
// it is about one scale. Here the median is re-centred on a linear grid a few private scales wide,
// so its resolution is a small fraction of the scale at any shift.
//
// Per column, five pure-DP selections (grid_quantile.hpp), each at epsilon_c =
// per_call_epsilon(loss, 5 d):
//  1. coarse median: a cell of the signed log grid (relative width <= 1/m);
//  2. refined median m1: a linear grid of `refine_points` over that cell and its two neighbours;
//  3. spread s1 = 1.4826 x the MAD cell (nonnegative log grid) of |x - m1|;
//  4. re-centred median m2: a linear grid of `recentre_points` over
//     m1 -/+ window (s1 + r1), r1 = the spacing of step 2; location = m2;
//  5. scale = 1.4826 x the MAD cell of |x - m2| (final_mad = false: skipped, scale = s1, and
//     each selection gets per_call_epsilon(loss, 4 d)).
// Status per column as private_scale's (column_scale.hpp): ok, degenerate (the MAD is within 2
// resolutions), insufficient_data (rank error / n + alpha > 0.3, n counted privately under
// add/remove, or the coarse cell at its grid's end); read off the column's `facts`.
#pragma once
#include <algorithm>

#include "dpstats/parallel.hpp"
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/seam.hpp"

namespace dpstats {

class Communicator;  // dpstats/comm/communicator.hpp

struct LocationOptions {
  PrivacyLoss loss = PrivacyLoss::pure(1);  // this estimate's share: pure epsilon or zcdp rho
  double window = 4;            // half-width of the re-centring grid, in spreads; in [1, 1e3]
  double alpha = 0.05;          // tolerated corrupted fraction, in [0, 0.3)
  double beta = 0.05;           // failure probability of the utility statement, in (0, 1)
  int per_octave = 32;          // log-grid points per octave, in [1, 1024]
  std::size_t refine_points = std::size_t{1} << 16;    // step 2's grid, in [3, 2^24]
  std::size_t recentre_points = std::size_t{1} << 12;  // step 4's grid, in [3, 2^24]
  // Step 5 (the MAD around the re-centred location). false: four selections per column, and the
  // scale is the step-3 spread s1 (accurate while the refine spacing r1 is well below the scale,
  // i.e. |median| below ~10^5 scales; the fits, which only need a scale within a small factor,
  // take this to leave more rows per selection).
  bool final_mad = true;
  Neighbouring neighbouring = Neighbouring::replace_one;
  int threads = std::min(default_threads(), 256);  // columns in parallel, in [1, 256]
  // The ranks holding the rows (null: this process alone). Each rank passes its own rows (possibly
  // none); every selection counts every rank's values (grid_quantile_cell's ranks overload: exact
  // integer counts, rank 0 draws) and the release is the single-process one on the union.
  Communicator* comm = nullptr;
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp).
template <class V>
void visit_fields(const LocationOptions& o, V& v) {
  v("loss_kind", o.loss.kind);
  v("loss_epsilon", o.loss.epsilon);
  v("loss_delta", o.loss.delta);
  v("loss_rho", o.loss.rho);
  v("window", o.window);
  v("alpha", o.alpha);
  v("beta", o.beta);
  v("per_octave", o.per_octave);
  v("refine_points", o.refine_points);
  v("recentre_points", o.recentre_points);
  v("final_mad", o.final_mad);
  v("neighbouring", o.neighbouring);
}

struct ColumnLocation {
  double location = 0;    // m2: the private median, re-centred
  double scale = 0;       // 1.4826 x the private MAD around `location` (0 when degenerate)
  double mad = 0;         // the private MAD around `location`
  double resolution = 0;  // spacing of the re-centring grid: the location's quantization
  double spread = 0;      // s1, the step-3 spread that sized the re-centring window
  ScaleStatus status = ScaleStatus::ok;  // read off `facts` (reliability.hpp)
  std::string reason;     // why the status is not ok (public values only)
  SelectionFacts facts;   // what reliability() judges
};

struct LocationEstimate {
  std::vector<ColumnLocation> columns;
  Ledger entries;               // what was charged, in order
  double epsilon_per_call = 0;  // of each of the 5 d (or 4 d) selections
  double rank_error = 0;        // each selection's rank error, exceeded w.p. <= beta (union bound)
  double beta = 0;
  double n = 0;                 // the rows the checks use: n, or n_low under add/remove
  Neighbouring neighbouring = Neighbouring::replace_one;

  Vector location() const;
  Vector scale() const;
  bool all_ok() const;
  nlohmann::json diagnostics() const;  // per column values and status, epsilon, rank error, charged
};

// Checks every option and the data (finite, n >= 1), charges `account` the entries of
// private_location_entries(o, X.cols()) all or nothing, then draws the noise.
LocationEstimate private_location(const ConstMatrixRef& X, const LocationOptions& o,
                                  ReleaseBudget& account, Rng& rng);

// What private_location charges for d columns, whatever the data: under add/remove the count of
// the rows, then five entries (four without final_mad), count d each.
Ledger private_location_entries(const LocationOptions& o, std::size_t d);

// The public check behind `insufficient_data`, made before anything is charged: empty when n
// rows (replace-one) are enough for every column's rank guarantee (rank error / n + alpha <= 0.3),
// else why not. Under add/remove n is private: the check passes here (the estimate makes it on
// its private count of the rows).
std::optional<std::string> private_location_shortfall(const LocationOptions& o, std::size_t n,
                                                      std::size_t d);

}  // namespace dpstats
