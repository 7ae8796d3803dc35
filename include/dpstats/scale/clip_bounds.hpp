// Per-column private clipping bounds for means and sums, with no public range (issue 27 item 2;
// docs/proofs/scale.md §7). What `stat` and the bounded mean clip to instead of "median ± 4 MAD".
//
// Per column, seven mechanisms on one share (units of the column's 48):
//  1. anchor, coarse (6): the cell of the signed log grid holding the median (grid_quantile);
//  2. anchor, refined (6): the cell of a dyadic grid of at least `refine_points` over that cell
//     and its neighbours; the anchor a is its midpoint, r its spacing;
//  3. upper scan (14): AboveThreshold (threshold_scan.hpp) over the offsets delta of the log grid
//     (scan_per_octave) from the first one >= r upwards, on the counts #{i : x_i - a < delta}
//     against T = ceil((1 - coverage/2) n); hi = a + the offset where it halts;
//  4. lower scan (14): the same on #{i : x_i - a >= -delta}; lo = a - that offset;
//  5. fine cell (4): the median's cell on a dyadic grid of 64 points over [a - r/2, a + r/2], where
//     the side counts look when the rows are enough for it to land inside an atom (scale.md §7b);
//  6-7. side counts (2 each): Laplace counts of the rows beyond the fine cell (else the anchor's)
//     above and below it. A side is usable only when the scan resolved it (the bound holds at
//     least half of those rows) or it is nearly empty (at most `coverage` n rows): otherwise most
//     rows equal one value and the bound may stop short of all the others (scale.md §7b).
// A scan starts inside the data (at the anchor) and walks outwards, so it halts near the tail
// quantile it targets and cannot run far past the data's last value (Durfee 2023's unbounded
// quantile, made scale-free by measuring offsets from a private anchor on a log grid): at most a
// fraction coverage/2 of the rows, up to the stated rank error, lies beyond each bound.
// Under add/remove n is private: a Laplace count of the rows (1/8 of the share, one for every
// column) gives n_low, a lower confidence bound, and the thresholds use it.
//
// Zero-inflated and discrete columns: the scans count rows, not spreads, so a column with 90%
// zeros gets bounds that reach into its non-zero tail; where the rows off the most common value
// are too few for the scans' rank error (98% zeros at n = 5000, epsilon 1) the side counts make
// the bounds unusable with "most rows equal one value" and the rows that would suffice. Values
// near 1e9 with a small spread get bounds at the anchor's relative resolution (about 1.4e-6 |a|
// at the defaults), not at 1/per_octave of |a|; they are not an atom when they spread over the
// fine cells (1/32 of that resolution).
#pragma once
#include <algorithm>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/seam.hpp"

namespace dpstats {

class Communicator;  // dpstats/comm/communicator.hpp

struct ClipBoundsOptions {
  PrivacyLoss loss = PrivacyLoss::pure(1);  // this estimate's share: pure epsilon or zcdp rho
  // The fraction of rows the bounds are designed to leave outside, half below lo and half above
  // hi; in (0, 0.5). A consumer states its clipping term from it (or from its own clipped count).
  double coverage = 0.01;
  double alpha = 0;      // the corrupted fraction the caller declared, in [0, 0.3) (reliability)
  double beta = 0.05;    // failure probability of the stated rank errors, in (0, 1)
  int per_octave = 32;   // log-grid points per octave of the anchor's grid, in [1, 1024]
  // Offsets per octave of the scans, in [1, 1024]: a bound exceeds its quantile by at most a
  // relative 1/scan_per_octave of its distance from the anchor; fewer steps per octave means
  // fewer chances to halt early on a plateau of a discrete column.
  int scan_per_octave = 32;
  std::size_t refine_points = std::size_t{1} << 16;  // the anchor's linear grid, in [3, 2^24]
  Neighbouring neighbouring = Neighbouring::replace_one;
  // The sides most rows' value hides (docs/proofs/scale.md §7b): the fine cell and the side counts
  // (8 of a column's 48 units), and the rule on them. false: neither is drawn nor charged (40
  // units) and the bounds are judged by §6/§7's rules alone -- for a consumer whose stated error
  // carries every row beyond its range itself (stat quantiles), never for a clipped statistic.
  bool judge_sides = true;
  int threads = std::min(default_threads(), 256);  // in [1, 256]
  // The ranks holding the rows (null: this process alone): every count is added exactly over
  // ranks, rank 0 draws, and the release is the single-process one on the union of the rows.
  Communicator* comm = nullptr;
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp).
template <class V>
void visit_fields(const ClipBoundsOptions& o, V& v) {
  v("loss_kind", o.loss.kind);
  v("loss_epsilon", o.loss.epsilon);
  v("loss_delta", o.loss.delta);
  v("loss_rho", o.loss.rho);
  v("coverage", o.coverage);
  v("alpha", o.alpha);
  v("beta", o.beta);
  v("per_octave", o.per_octave);
  v("scan_per_octave", o.scan_per_octave);
  v("refine_points", o.refine_points);
  v("neighbouring", o.neighbouring);
  v("judge_sides", o.judge_sides);
}

struct ColumnClipBounds {
  double lo = 0, hi = 0;       // the clipping bounds
  double anchor = 0;           // a: the private median the scans start from
  double resolution = 0;       // r: the anchor's grid spacing
  bool lo_at_end = false;      // the lower scan walked its whole grid without halting
  bool hi_at_end = false;      // the upper scan walked its whole grid without halting
  bool anchor_at_end = false;  // the anchor's coarse cell is the first or last of its grid
  // Noisy counts of the rows beyond the side counts' cell below and above it (Laplace, §7b): the
  // anchor's cell refined once more (fine_cell; cell = its [lo, hi)), else the anchor's cell.
  double beyond_lo = 0, beyond_hi = 0;
  bool fine_cell = false;
  std::pair<double, double> cell{0, 0};
  // What reliability() judges (public and released values only): the anchor's selections, and
  // per side the scan's rank error against the rows, its grid end and the side's count (§7b).
  SelectionFacts anchor_facts, lo_facts, hi_facts;
};

struct ClipBounds {
  std::vector<ColumnClipBounds> columns;
  double coverage = 0;             // the fraction targeted outside, both sides together
  double q_lo = 0, q_hi = 0;       // the quantiles targeted: coverage / 2 and 1 - coverage / 2
  double rank_error = 0;           // each scan's rank error (rows), all scans within w.p. 1 - beta
  double anchor_rank_error = 0;    // the coarse anchor selection's rank error, likewise
  double beyond_noise = 0;         // the side counts' noise bound, likewise
  double fine_rank_error = 0;      // the fine cell's selection's rank error, likewise
  double n = 0;                    // rows: public n (replace-one) or n_low (add/remove)
  double beta = 0;
  Neighbouring neighbouring = Neighbouring::replace_one;
  Ledger entries;                  // what was charged, in order

  Vector lo() const;
  Vector hi() const;
  bool all_usable() const;  // reliability(*this, "").usable
  // Per column values and reliability, the targets, rank errors and the entries charged.
  nlohmann::json diagnostics() const;
};

// Checks every option and the data (finite, n >= 1), charges `account` the entries of
// private_clip_bounds_entries(o, X.cols()) all or nothing, then draws the noise.
ClipBounds private_clip_bounds(const ConstMatrixRef& X, const ClipBoundsOptions& o,
                               ReleaseBudget& account, Rng& rng);

// What private_clip_bounds charges for d columns, whatever the data: under add/remove a Laplace
// count of the rows (count 1), then seven entries with count d (coarse anchor, refined anchor,
// upper scan, lower scan, fine cell, the counts of the rows above and below the side counts' cell).
Ledger private_clip_bounds_entries(const ClipBoundsOptions& o, std::size_t d);

// The rule's verdict on the rank errors of private_clip_bounds(X, o) with d columns and n rows,
// from public values only (a plan's, before any data: the data decide only the grid ends; under
// add/remove n is the declared row count, its count's lower bound taken with the noise at 0).
// docs/proofs/scale.md §9.
Reliability planned_reliability(const ClipBoundsOptions& o, std::size_t d, double n,
                                std::string_view option);

// The bounds judged by the one rule (reliability.hpp): the first unusable column, else usable.
Reliability reliability(const ClipBounds& b, std::string_view option);
// One column of them (j counts from 0).
Reliability reliability(const ClipBounds& b, std::size_t j, std::string_view option);

}  // namespace dpstats
