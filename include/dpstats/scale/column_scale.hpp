// Per-column private location, scale and clipping bounds of an n x d table, with no public
// range or scale (issue #15; docs/proofs/scale.md §2).
//
// For each column, three pure-DP selections (grid_quantile.hpp), each with epsilon_c =
// per_call_epsilon(loss, 3 d):
//  1. coarse median: a cell of the signed log grid (relative width <= 1/m) holding the median;
//  2. refined median: a cell of a linear grid of `refine_points` points over that cell and its
//     two neighbours; location = the cell's midpoint (resolution = the linear grid's spacing);
//  3. MAD: a cell of the nonnegative log grid holding the median of |x_i - location|;
//     scale = 1.4826 * the cell's midpoint (the MAD of a Gaussian is 0.6745 sigma).
// Bounds: lo, hi = location -/+ widen * scale (post-processing).
// Robustness: a fraction alpha of arbitrary rows moves every rank by at most alpha n, so location
// and scale stay inside the clean data's [1/2 - alpha - t/n, 1/2 + alpha + t/n] quantiles
// (t = the rank error below). The breakdown point is 1/2; `alpha` only enters the
// insufficient-data check (alpha + t/n <= 0.3, i.e. ranks within the central 20%..80%).
// Status per column:
//  * ok;
//  * degenerate: the released MAD is at or below the location's resolution (all values equal,
//    or a spread below 2^-1022 or the refine spacing); scale is then reported as 0;
//  * insufficient_data: t / n + alpha > 0.3, where t is the rank error that all 3 d selections
//    stay within with probability >= 1 - beta, or the coarse (MAD) cell is at its grid's end.
//    Under add/remove n is private: the estimate first counts the rows (Laplace, 1/8 of the
//    share; the selections share the rest) and n is that count's lower confidence bound.
// Each column carries these facts (`facts`, reliability.hpp); the status is read off them.
#pragma once
#include <algorithm>

#include "dpstats/parallel.hpp"
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dpstats/data/checked_rows.hpp"
#include "dpstats/data/matrix.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/reliability.hpp"

namespace dpstats {

class Communicator;  // dpstats/comm/communicator.hpp

struct ScaleOptions {
  PrivacyLoss loss = PrivacyLoss::pure(1);  // this estimate's share: pure epsilon or zcdp rho
  double widen = 4;               // bounds = location -/+ widen * scale; in (0, 1e6]
  double alpha = 0.05;            // tolerated corrupted fraction, in [0, 0.3)
  double beta = 0.05;             // failure probability of the utility statement, in (0, 1)
  int per_octave = 32;            // log-grid points per octave, in [1, 1024]
  std::size_t refine_points = std::size_t{1} << 16;  // linear refine grid, in [3, 2^24]
  Neighbouring neighbouring = Neighbouring::replace_one;
  int threads = std::min(default_threads(), 256);  // columns in parallel, in [1, 256]
  // The ranks holding the rows (null: this process alone). Each rank passes its own rows; the
  // selections count over all of them (grid_quantile_cell's ranks overload), the columns run in
  // order, and the estimate is the single-process one on the union of the rows.
  Communicator* comm = nullptr;
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp).
template <class V>
void visit_fields(const ScaleOptions& o, V& v) {
  v("loss_kind", o.loss.kind);
  v("loss_epsilon", o.loss.epsilon);
  v("loss_delta", o.loss.delta);
  v("loss_rho", o.loss.rho);
  v("widen", o.widen);
  v("alpha", o.alpha);
  v("beta", o.beta);
  v("per_octave", o.per_octave);
  v("refine_points", o.refine_points);
  v("neighbouring", o.neighbouring);
}

enum class ScaleStatus { ok, degenerate, insufficient_data };
const char* to_string(ScaleStatus s);

struct ColumnScale {
  double location = 0;    // private median
  double scale = 0;       // robust sigma: 1.4826 * private MAD (0 when degenerate)
  double lo = 0, hi = 0;  // location -/+ widen * scale (-/+ resolution when degenerate)
  double mad = 0;         // the private MAD itself
  double resolution = 0;  // spacing of the refine grid: the location's quantization
  ScaleStatus status = ScaleStatus::ok;  // read off `facts` (reliability.hpp)
  std::string reason;     // why the status is not ok (public values only)
  SelectionFacts facts;   // what reliability() judges
};

struct ScaleEstimate {
  std::vector<ColumnScale> columns;
  Ledger entries;          // what was charged on the Budget, in order
  double epsilon_per_call = 0;  // of each of the 3 d selections
  double rank_error = 0;   // t: each selection's rank error, exceeded w.p. <= beta (union bound)
  double beta = 0;
  double n = 0;            // the rows the checks use: n, or n_low under add/remove (row count)
  Neighbouring neighbouring = Neighbouring::replace_one;

  Vector location() const;
  Vector scale() const;
  Vector lo() const;
  Vector hi() const;
  bool all_ok() const;
  // Each column's values and status, the per-call epsilon, rank error and the entries charged.
  nlohmann::json diagnostics() const;
};

// Charges `account` the entries of private_scale_entries(o, X.cols()) (all or nothing) after
// checking every option and the data (finite, n >= 1; rows a CheckedRows vouches for are not
// checked again), then draws the noise.
ScaleEstimate private_scale(const RowsView& X, const ScaleOptions& o, ReleaseBudget& account,
                            Rng& rng);

// The facts every column of private_scale(X, o) on d columns and n rows is judged on for its rank
// error, from public values only (a plan's, before any data; under add/remove n is the declared
// row count and the check uses its count's lower bound with the noise at 0). The data decide only
// at_grid_end and degenerate (false here). docs/proofs/scale.md §9.
SelectionFacts planned_scale_facts(const ScaleOptions& o, std::size_t d, double n);

// What private_scale charges for d columns, whatever the data: under add/remove the count of the
// rows (count 1), then three entries (coarse median, refined median, MAD), each a
// grid_quantile_entry with count d.
Ledger private_scale_entries(const ScaleOptions& o, std::size_t d);

}  // namespace dpstats
