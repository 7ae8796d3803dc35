// Column units of the mean family (issue #15; docs/proofs/mean.md §1). Every mean of this family
// runs on z_ij = (x_ij − location_j) / scale_j and maps its estimate back, so no public scale
// silently defaults to 1:
//  * a supplied scale (one value for every column, or one per column) is used as given, with
//    location 0 (the methods find the location themselves);
//  * an absent scale is estimated by the substrate's scale layer: private median and
//    1.4826 × private MAD per column (scale/column_scale.hpp, 3/5 of the share), then the
//    Gaussian-calibrated winsorised second moment around that median (scale/winsorized_scale.hpp,
//    the rest); scale = max(MAD scale, winsorised scale), so a skewed or heavy-tailed column is
//    measured by a standard-deviation-like unit (what PRIME's σ²I / Σ ⪯ σ²I models assume), not
//    by its MAD. The share is charged up front by the caller with the rest of its plan
//    (units_entries). The winsorised step also releases each column's noisy fraction of rows
//    beyond kTailRadius final scales (`tail_fraction`), for the drivers' model check.
// The map z ↦ x is fixed before the algorithm reads z, so the algorithm's guarantee on z holds
// on x (one replaced row of x replaces one row of z) and the two parts compose sequentially.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/data/affine_rows.hpp"
#include "dpstats/data/checked_rows.hpp"
#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/reliability.hpp"

#include "dpstats/seam.hpp"

namespace dpstats {

class Communicator;  // dpstats/comm/communicator.hpp

struct ColumnUnits {
  Vector location;         // 0 for a supplied scale
  Vector scale;            // > 0
  bool estimated = false;  // from the scale layer
  Vector tail_fraction;    // estimated only: noisy fraction of rows beyond kTailRadius scales
  double tail_noise = 0;   // the Laplace scale of tail_fraction (a fraction of n)
};
// The radius (in final scales) of the tail count.
inline constexpr double kTailRadius = 3;
// The winsorising quantile of |x − location|: 1 − 2·max(alpha, 0.05) (alpha <= 0.25), so the clip
// stays inside the clean rows' range when a fraction alpha is corrupted.
double winsorizing_quantile(double alpha);

// InvalidArgument unless `scale` has 1 or d entries, each > 0 and finite (`name` is the option).
void check_supplied_scale(const std::vector<double>& scale, Eigen::Index d,
                          const char* name = "scale");
// The supplied scale as units (location 0).
ColumnUnits supplied_units(const std::vector<double>& scale, Eigen::Index d);

// What estimating d columns' units from `share` (pure epsilon or zcdp rho) charges.
Ledger units_entries(const PrivacyLoss& share, Eigen::Index d, double alpha);

// The rule's verdict (scale/reliability.hpp) on the rank errors of estimate_units at `share`, d
// columns and n rows, from public values only: the units abstain on it, and a plan that gives no
// scale_share chooses its share by it (scale/share.hpp; docs/proofs/scale.md §9).
Reliability planned_units_reliability(const PrivacyLoss& share, Eigen::Index d, double alpha,
                                      std::int64_t n);

// The estimate, or the abstention reason (a column whose scale the layer could not estimate:
// nearly constant, or too few rows for the share). Draws the scale layer's noise; the caller
// has charged units_entries(share, d, alpha) with its plan on `account`, and the scale layer's
// mechanisms claim them there. `diagnostics` states the estimated values and what they cost.
struct UnitsEstimate {
  ColumnUnits units;
  nlohmann::json diagnostics;
  std::optional<std::string> abstained;
};
// comm: the ranks holding the rows (null: this process alone); each rank passes its own rows and
// every rank gets the single-process estimate of the union (noise drawn on rank 0). Rows a
// CheckedRows vouches for are not checked again.
UnitsEstimate estimate_units(const RowsView& X, const PrivacyLoss& share, double alpha,
                             double widen, int threads, ReleaseBudget& account, Rng& rng,
                             Communicator* comm = nullptr);

// z = (x − location) / scale, clamped to ±1e150 (a huge outlier stays finite), row by row (a
// fixed per-row map), read on the fly: no copy of X (the robust means' passes read this view).
AffineRows units_view(const ConstMatrixRef& X, const ColumnUnits& u);
// The same values as a matrix (units_view(X, u).materialise()).
RowMatrix to_units(const ConstMatrixRef& X, const ColumnUnits& u);
// location + scale ⊙ z.
Vector from_units(const Vector& z, const ColumnUnits& u);

}  // namespace dpstats
