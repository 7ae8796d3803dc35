// What the per-column private estimators share (column_scale.cpp, location.cpp, scale_json.cpp):
// the constants, the plan of log-grid selections and their entries, the column copy, the
// per-column generator split, the facts and statuses, and the diagnostics frame. Internal to
// src/scale.
#pragma once
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/error.hpp"
#include "dpstats/release.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/scale/share.hpp"
#include "grid_counts.hpp"
#include "row_count.hpp"

namespace dpstats::scale_detail {

inline constexpr double kMadToSigma = 1.482602218505602;  // 1 / Phi^{-1}(3/4)
inline constexpr double kMaxDouble = std::numeric_limits<double>::max();

inline double clamp_finite(double x) { return std::clamp(x, -kMaxDouble, kMaxDouble); }

// The options both estimators share: the budget share, alpha, beta, the grids, threads.
template <class Options>
void check_column_options(const Options& o) {
  check_share(o.loss);
  require(o.alpha >= 0 && o.alpha < 0.3, "alpha must be in [0, 0.3), got {}",
          format_number(o.alpha));
  require(o.beta > 0 && o.beta < 1, "beta must be in (0, 1), got {}", format_number(o.beta));
  require(o.per_octave >= 1 && o.per_octave <= 1024,
          "per_octave must be an integer in [1, 1024], got {}", o.per_octave);
  require(o.refine_points >= 3 && o.refine_points <= (std::size_t{1} << 24),
          "refine_points must be in [3, 2^24], got {}", o.refine_points);
  require(o.threads >= 1 && o.threads <= 256, "threads must be in [1, 256], got {}", o.threads);
}

// The public plan of every selection of one estimate: `calls` selections in all, each at the
// per-call share of the selections' part of o.loss (all of it, or 7/8 under add/remove where
// the rows are counted first, row_count.hpp), on the log grids; rank_error is the caller's (its
// grids differ), n the rows the rank checks use (set once counted).
template <class Options>
struct ColumnPlan {
  const Options& o;
  double epsilon = 0;  // per selection
  GridIndex signed_grid, abs_grid;
  double rank_error = 0;
  double n = 0;
};

template <class Options>
ColumnPlan<Options> column_plan(const Options& o, std::size_t calls) {
  return {o, per_call_epsilon(selection_share(o.loss, o.neighbouring), calls),
          GridIndex::log(o.per_octave, false), GridIndex::log(o.per_octave, true)};
}

// The entries of an estimate's selections (each a grid_quantile entry with count d), after the
// count of the rows under add/remove. `purposes` name the selections of one column.
template <class Options>
Ledger column_entries(const Options& o, std::size_t d, const char* estimate,
                      std::initializer_list<const char*> purposes) {
  const double e = per_call_epsilon(selection_share(o.loss, o.neighbouring), purposes.size() * d);
  Ledger entries;
  if (counts_rows(o.neighbouring)) entries.push_back(row_count_entry(o.loss, estimate));
  for (const char* purpose : purposes) {
    LedgerEntry entry = grid_quantile_entry(e, fmt::format("{}: {} ({} columns)", estimate,
                                                           purpose, d));
    entry.count = static_cast<int>(d);
    entries.push_back(std::move(entry));
  }
  return entries;
}

// The rows of every rank after the guard before the first collective: every rank's
// `fingerprint` equals rank 0's, every rank's cells are finite (a rank may hold no row) and there
// is at least one row in all. One process: check_data(X) (unless `checked`: an earlier estimate
// of the same release checked these rows) and X.rows().
inline std::int64_t guarded_rows(const ConstMatrixRef& X, Communicator& comm,
                                 const std::string& fingerprint, bool checked = false) {
  if (comm.size() == 1) {
    if (!checked) check_data(X);
    return static_cast<std::int64_t>(X.rows());
  }
  check_agreement(comm, fingerprint, "the scale estimate's options and column count");
  all_or_none(comm, [&] {
    if (X.rows() > 0) check_data(X);
  });
  const std::int64_t n = allreduce_count(comm, static_cast<std::int64_t>(X.rows()));
  require(n > 0, "X must have at least one row and one column, got 0 x {} (over {} ranks)",
          X.cols(), comm.size());
  return n;
}

// Stamps an estimate with its plan's public values and sizes its columns.
template <class Estimate, class Plan>
void stamp(Estimate& out, const Plan& p, std::size_t d) {
  out.epsilon_per_call = p.epsilon;
  out.rank_error = p.rank_error;
  out.n = p.n;
  out.beta = p.o.beta;
  out.neighbouring = p.o.neighbouring;
  out.columns.resize(d);
}

// The largest rank error / n (+ alpha) a column's location and scale tolerate: their ranks stay
// within the central 20%..80% (docs/proofs/scale.md §6).
constexpr double kColumnTolerance = 0.3;

// What reliability() judges of a column from the plan alone (n once counted; the grid end and the
// spread are the run's): the run's facts (set_status) and a dry run's (dry_run.hpp) come from here.
template <class Plan>
SelectionFacts planned_column_facts(const Plan& p) {
  return {.rank_error = p.rank_error, .n = p.n, .tolerance = kColumnTolerance, .alpha = p.o.alpha,
          .epsilon = p.epsilon};
}

// A column's facts (reliability.hpp) and the status read off them: a rank error too large for
// the rows, or a coarse cell at its grid's end, is insufficient_data (it takes precedence); a
// released MAD within 2 resolutions of 0 is degenerate (the scale and MAD are then 0). `what` names the
// estimate ("the location", "the location and scale").
template <class Column, class Plan>
void set_status(Column& c, const Plan& p, bool at_grid_end, const char* what) {
  c.facts = planned_column_facts(p);
  c.facts.at_grid_end = at_grid_end;
  c.facts.degenerate = c.mad <= 2 * std::max(c.resolution, std::numeric_limits<double>::min());
  SelectionFacts rank = c.facts;
  rank.degenerate = false;
  const Reliability r = assess(rank, what, "");
  if (!r.usable) {
    c.status = ScaleStatus::insufficient_data;
    c.reason = r.cause + "; " + r.would_suffice;
  } else if (c.facts.degenerate) {
    c.status = ScaleStatus::degenerate;
    c.reason = fmt::format("the private MAD ({}) is within 2 times the location's resolution "
                           "({}): at least half of the values lie within it of the location (a "
                           "value most rows share, or a spread finer than the resolution)",
                           format_number(c.mad), format_number(c.resolution));
    c.scale = 0;  // and the MAD: half of the values are, up to the resolution, equal
    c.mad = 0;
  }
}

// The diagnostics both estimators print around their columns' own JSON.
template <class Estimate, class ColumnJson>
nlohmann::json columns_diagnostics(const Estimate& e, const char* estimator,
                                   ColumnJson column_json) {
  nlohmann::json cols = nlohmann::json::array();
  for (const auto& c : e.columns) cols.push_back(column_json(c));
  nlohmann::json j = {{"estimator", estimator},
                      {"columns", cols},
                      {"epsilon_per_selection", e.epsilon_per_call},
                      {"rank_error", e.rank_error},
                      {"beta", e.beta},
                      {"neighbouring", to_string(e.neighbouring)},
                      {"charged", ledger_json(e.entries)}};
  if (counts_rows(e.neighbouring)) j["n_lower_bound"] = e.n;
  return j;
}

}  // namespace dpstats::scale_detail
