// Absent per-column bounds (stats/stats.hpp): estimated privately by the scale layer's clipping
// bounds for means and sums (scale/clip_bounds.hpp: a private median anchor, then scans outwards
// to about the 0.005- and 0.995-quantiles) from `fraction` of the release's budget, planned and
// charged with the release's own mechanisms, and judged by the scale layer's one reliability
// rule (scale/reliability.hpp): a statistic abstains rather than rest on bounds that rule calls
// unusable (issue 27).
#include <fmt/format.h>

#include "dpstats/error.hpp"
#include "dpstats/scale/clip_bounds.hpp"
#include "internal.hpp"

namespace dpstats::stats::detail {

ClipBoundsOptions bounds_clip_options(const StatOptions& o, const Shares& shares) {
  const double fraction = shares.scale;
  ClipBoundsOptions co;
  co.judge_sides = shares.judge_sides;
  co.loss = o.privacy.delta == 0 ? PrivacyLoss::pure(o.privacy.epsilon * fraction)
                                 : PrivacyLoss::zcdp(total_rho(o) * fraction);
  co.threads = std::min(o.run.threads, 256);
  co.comm = o.run.comm;  // over ranks: the counts are every rank's rows
  return co;
}

Ledger bounds_plan(const StatOptions& o, const Shares& shares, std::size_t d) {
  if (!o.bounds.empty()) return {};
  return private_clip_bounds_entries(bounds_clip_options(o, shares), d);
}

std::optional<std::string> planned_bounds_abstention(const StatOptions& o, const Shares& shares,
                                                     std::size_t d, double n) {
  if (!o.bounds.empty()) return std::nullopt;
  const Reliability r = planned_reliability(bounds_clip_options(o, shares), d, n, "--bounds");
  if (r.usable) return std::nullopt;
  return r.reason();
}

namespace {

// Bounds estimated without the sides' parts (stat quantiles: Shares::judge_sides false) charged
// no fine cell and no side counts: their noise bound, rank error and per-column fields describe
// nothing that ran.
void omit_side_counts(nlohmann::json& estimate) {
  estimate.erase("rows_beyond_noise");
  estimate.erase("fine_cell_rank_error");
  for (auto& column : estimate["columns"]) {
    column.erase("rows_beyond_anchor");
    column.erase("rows_beyond_cell");
  }
}

}  // namespace

ColumnBoundsPlan estimate_bounds(const ConstMatrixRef& X, const StatOptions& o, const Shares& shares,
                                 ReleaseBudget& account, Rng& rng, nlohmann::json& diagnostics) {
  const double fraction = shares.scale;
  const ClipBounds est = private_clip_bounds(X, bounds_clip_options(o, shares), account, rng);
  ColumnBoundsPlan plan;
  plan.estimated = true;
  plan.reliability = reliability(est, "--bounds");
  for (const auto& c : est.columns) plan.bounds.push_back({c.lo, c.hi});
  diagnostics["bounds_estimate"] = est.diagnostics();
  if (!shares.judge_sides) omit_side_counts(diagnostics["bounds_estimate"]);
  diagnostics["bounds_estimate"]["budget_share"] = fraction;
  diagnostics["bounds_estimate"]["note"] =
      "bounds were not given: estimated privately per column (a private median, then private "
      "scans outwards to about its 0.005- and 0.995-quantiles)";
  diagnostics["bounds_estimate"]["reliability"] = plan.reliability.json();
  return plan;
}

}  // namespace dpstats::stats::detail
