// Absent per-column bounds (stats/stats.hpp): estimated privately by the scale layer
// (scale/column_scale.hpp: private median and MAD per column on a log grid) from `fraction` of
// the release's budget, planned and charged with the release's own mechanisms.
#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "internal.hpp"

namespace dpstats::stats::detail {

ScaleOptions bounds_scale_options(const StatOptions& o, double fraction) {
  ScaleOptions so;
  so.loss = o.privacy.delta == 0 ? PrivacyLoss::pure(o.privacy.epsilon * fraction)
                                 : PrivacyLoss::zcdp(total_rho(o) * fraction);
  so.threads = std::min(o.run.threads, 256);
  so.comm = o.run.comm;  // over ranks: the selections count every rank's rows
  return so;
}

Ledger bounds_plan(const StatOptions& o, const Shares& shares, std::size_t d) {
  if (!o.bounds.empty()) return {};
  return private_scale_entries(bounds_scale_options(o, shares.scale), d);
}

std::vector<ColumnBounds> estimate_bounds(const ConstMatrixRef& X, const StatOptions& o,
                                          double fraction, ReleaseBudget& account, Rng& rng,
                                          nlohmann::json& diagnostics) {
  const ScaleEstimate est = private_scale(X, bounds_scale_options(o, fraction), account, rng);
  std::vector<ColumnBounds> bounds;
  for (const auto& c : est.columns) {
    double lo = c.lo, hi = c.hi;
    if (!(hi > lo)) {  // degenerate column: a width of one resolution step around the location
      const double step = std::max({c.resolution, std::fabs(c.location) * 0x1p-40, 0x1p-1000});
      lo = c.location - step;
      hi = c.location + step;
    }
    bounds.push_back({lo, hi});
  }
  diagnostics["bounds_estimate"] = est.diagnostics();
  diagnostics["bounds_estimate"]["budget_share"] = fraction;
  diagnostics["bounds_estimate"]["note"] =
      "bounds were not given: estimated privately as location -/+ 4 robust scales per column";
  if (!est.all_ok())
    diagnostics["warning"] = "the private bounds estimate is not reliable for some column "
                             "(see bounds_estimate): give bounds, or use more data or budget";
  return bounds;
}

}  // namespace dpstats::stats::detail
