// Absent per-column bounds (stats/stats.hpp): estimated privately by the scale layer
// (scale/column_scale.hpp: private median and MAD per column on a log grid) from `fraction` of
// the release's budget, charged to the release's account before its own mechanisms, and judged
// by the scale layer's one reliability rule (scale/reliability.hpp): a statistic abstains rather
// than rest on bounds that rule calls unusable (issue 27).
#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "internal.hpp"

namespace dpstats::stats::detail {

ColumnBoundsPlan estimate_bounds(const ConstMatrixRef& X, const StatOptions& o, double fraction,
                                 ReleaseBudget& account, Rng& rng, nlohmann::json& diagnostics) {
  ScaleOptions so;
  so.loss = o.privacy.delta == 0 ? PrivacyLoss::pure(o.privacy.epsilon * fraction)
                                 : PrivacyLoss::zcdp(total_rho(o) * fraction);
  so.alpha = 0;  // no corrupted fraction is declared: every row counts
  so.threads = std::min(o.run.threads, 256);
  so.comm = o.run.comm;  // over ranks: the selections count every rank's rows
  const ScaleEstimate est = private_scale(X, so, account, rng);
  ColumnBoundsPlan plan;
  plan.estimated = true;
  plan.reliability = reliability(est, "--bounds");
  for (const auto& c : est.columns) plan.bounds.push_back({c.lo, c.hi});
  diagnostics["bounds_estimate"] = est.diagnostics();
  diagnostics["bounds_estimate"]["budget_share"] = fraction;
  diagnostics["bounds_estimate"]["note"] =
      "bounds were not given: estimated privately as location -/+ 4 robust scales per column";
  diagnostics["bounds_estimate"]["reliability"] = plan.reliability.json();
  return plan;
}

}  // namespace dpstats::stats::detail
