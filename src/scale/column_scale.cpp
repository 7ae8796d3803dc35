// Per-column private location, scale and bounds (column_scale.hpp; docs/proofs/scale.md §2).
#include "dpstats/scale/column_scale.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "dpstats/scale/share.hpp"
#include "column_stages.hpp"
#include "columns.hpp"
#include "shared_pass.hpp"

namespace dpstats {
namespace {

using namespace scale_detail;
using Plan = ColumnPlan<ScaleOptions>;
constexpr std::size_t kCallsPerColumn = 3;

void check_options(const ScaleOptions& o) {
  check_column_options(o);
  require(o.widen > 0 && o.widen <= 1e6, "widen must be in (0, 1e6], got {}",
          format_number(o.widen));
}

// Post-processing of a column's released cells: scale, bounds, facts and status.
ColumnScale finish_column(const RefinedMedian& m, std::size_t mad_cell, const Plan& p) {
  ColumnScale c;
  c.location = m.location;
  c.resolution = m.resolution;
  const std::span<const double> g = p.abs_grid.grid();
  c.mad = GridCell{g[mad_cell], g[mad_cell + 1], mad_cell}.midpoint();
  const bool mad_at_end = mad_cell + 2 == g.size();
  c.scale = std::min(kMadToSigma * c.mad, kMaxDouble);
  c.lo = clamp_finite(c.location - p.o.widen * c.scale);
  c.hi = clamp_finite(c.location + p.o.widen * c.scale);
  set_status(c, p, m.at_end || mad_at_end, "the location and scale");
  if (c.status == ScaleStatus::degenerate) {
    c.lo = clamp_finite(c.location - c.resolution);
    c.hi = clamp_finite(c.location + c.resolution);
  }
  return c;
}

// The failure probability of each event: every selection and, under add/remove, the row count.
double event_beta(const ScaleOptions& o, std::size_t d) {
  return o.beta / static_cast<double>(kCallsPerColumn * d + (counts_rows(o.neighbouring) ? 1 : 0));
}

// The public plan of d columns (n unset): the run's and a dry run's.
Plan scale_plan(const ScaleOptions& o, std::size_t d) {
  Plan p = column_plan(o, kCallsPerColumn * d);
  p.rank_error = grid_quantile_rank_error(p.epsilon, p.signed_grid.grid().size(), event_beta(o, d));
  return p;
}

}  // namespace

const char* to_string(ScaleStatus s) {
  switch (s) {
    case ScaleStatus::ok: return "ok";
    case ScaleStatus::degenerate: return "degenerate";
    case ScaleStatus::insufficient_data: return "insufficient_data";
  }
  return "unknown";
}

Ledger private_scale_entries(const ScaleOptions& o, std::size_t d) {
  check_options(o);
  require(d >= 1, "d must be >= 1, got {}", d);
  Ledger entries = column_entries(o, d, "scale",
                                  {"coarse median cell on the log grid",
                                   "refined median on a linear grid", "MAD cell on the log grid"});
  if (dry_run_active())
    note_planned_check({fmt::format("the location and scale ({} columns)", d),
                        planned_column_facts(scale_plan(o, d)),
                        count_margin(o.loss, o.neighbouring, event_beta(o, d)),
                        entries.back().purpose});
  return entries;
}

SelectionFacts planned_scale_facts(const ScaleOptions& o, std::size_t d, double n) {
  check_options(o);
  require(d >= 1 && n >= 1, "d and n must be >= 1, got d = {}, n = {}", d, format_number(n));
  // scale_plan's numbers without building its grids (the signed log grid alone is 1 MB, and a
  // share search asks for these facts many times): the same epsilon and rank error.
  const double epsilon =
      per_call_epsilon(selection_share(o.loss, o.neighbouring), kCallsPerColumn * d);
  return {.rank_error = grid_quantile_rank_error(epsilon, log_grid_points(o.per_octave, false),
                                                 event_beta(o, d)),
          .n = rows_for_plan(n, o.loss, o.neighbouring, event_beta(o, d)),
          .tolerance = kColumnTolerance,
          .alpha = o.alpha,
          .epsilon = epsilon};
}

ScaleEstimate private_scale(const RowsView& X, const ScaleOptions& o, ReleaseBudget& account,
                            Rng& rng) {
  // Checked rows (one process): the shared pass says so, and nothing else is kept across calls.
  scale_detail::SharedPass checked;
  checked.checked = true;
  return scale_detail::private_scale(X.matrix(), o, account, rng,
                                     X.checked() ? &checked : nullptr);
}

ScaleEstimate scale_detail::private_scale(const ConstMatrixRef& X, const ScaleOptions& o,
                                          ReleaseBudget& account, Rng& rng, SharedPass* shared) {
  check_options(o);
  Communicator& comm = comm_or_single(o.comm);
  const std::int64_t n =
      guarded_rows(X, comm, fingerprint_of("scale", o, X.cols()), was_checked(shared));
  const auto d = static_cast<std::size_t>(X.cols());
  ScaleEstimate out;
  out.entries = private_scale_entries(o, d);
  all_or_none(comm, [&] { account.claim(out.entries); });

  Plan p = scale_plan(o, d);
  p.n = rows_for_checks(n, o.loss, o.neighbouring, event_beta(o, d), comm, rng);
  stamp(out, p, d);
  // The coarse and refined median, then the MAD about it, each for every column at once, in
  // three passes: the first and the last banded where a pilot gives bands (one process).
  std::optional<Pilot> pilot;
  std::optional<BandedPass> median_bands;
  ColumnBins* kept = coarse_pass(shared, o.per_octave);
  if (shared != nullptr && shared->median) {
    pilot = shared->pilot;
    median_bands = std::move(shared->median);
  } else if (comm.size() == 1 && (shared == nullptr || !shared->full_passes) &&
             (kept == nullptr || kept->parts.empty())) {
    if ((pilot = plan_pilot(X, p.epsilon, o.per_octave)))
      median_bands = median_pass(X, *pilot, p.signed_grid, false, o.threads);
  }
  ColumnGenerators gens(rng, d);
  const std::vector<RefinedMedian> median =
      refined_medians(X, p.signed_grid, o.refine_points, p.epsilon, p.epsilon, gens, o.threads,
                      comm, kept, median_bands ? &*median_bands : nullptr);
  std::vector<double> location(d);
  for (std::size_t j = 0; j < d; ++j) location[j] = median[j].location;
  const std::vector<const GridIndex*> abs_grids = same_grid(p.abs_grid, d);
  std::optional<BandedPass> mad_bands;
  if (median_bands) mad_bands = mad_pass(X, *pilot, location, p.abs_grid, o.threads);
  const auto mad =
      mad_bands
          ? banded_cells(
                X, abs_grids, {&location},
                [&](std::size_t j) {
                  return band_counts(X, *mad_bands, j, p.abs_grid, {&location}, 0.5);
                },
                0.5, p.epsilon, gens, o.threads)
          : column_quantile_cells(X, abs_grids, distance_to(location), 0.5, p.epsilon, gens,
                                  o.threads, comm);
  for (std::size_t j = 0; j < d; ++j) out.columns[j] = finish_column(median[j], mad[j], p);
  return out;
}

void scale_detail::check_and_band(SharedPass& s, const ConstMatrixRef& X, const ScaleOptions& o,
                                  Communicator& comm) {
  if (comm.size() == 1 && X.rows() > 0 && X.cols() > 0 && !s.checked && s.per_octave == 0) {
    check_options(o);
    const auto d = static_cast<std::size_t>(X.cols());
    const Plan p = scale_plan(o, d);
    s.pilot = plan_pilot(X, p.epsilon, o.per_octave);
    if (s.pilot) {
      s.median = median_pass(X, *s.pilot, p.signed_grid, true, o.threads);
      if (!s.median) {
        check_data(X);  // throws, naming the first cell that is not finite
        throw std::logic_error("check_and_band: a cell was flagged that check_data accepts");
      }
      s.checked = true;
      return;
    }
  }
  check_and_count(s, X, o.per_octave, o.threads, comm);
}

}  // namespace dpstats
