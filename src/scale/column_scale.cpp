// Per-column private location, scale and bounds (column_scale.hpp; docs/proofs/scale.md §2).
#include "dpstats/scale/column_scale.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

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
  // Three passes over the rows, each for every column at once: the coarse and refined median,
  // then the MAD about it.
  ColumnGenerators gens(rng, d);
  const std::vector<RefinedMedian> median =
      refined_medians(X, p.signed_grid, o.refine_points, p.epsilon, p.epsilon, gens, o.threads,
                      comm, coarse_pass(shared, o.per_octave));
  std::vector<double> location(d);
  for (std::size_t j = 0; j < d; ++j) location[j] = median[j].location;
  const auto mad = column_quantile_cells(X, same_grid(p.abs_grid, d), distance_to(location), 0.5,
                                         p.epsilon, gens, o.threads, comm);
  for (std::size_t j = 0; j < d; ++j) out.columns[j] = finish_column(median[j], mad[j], p);
  return out;
}

}  // namespace dpstats
