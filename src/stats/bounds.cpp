// Absent per-column bounds (stats/stats.hpp): estimated privately from scale_share of the budget.
#include <fmt/format.h>

#include "dpstats/error.hpp"
#include "internal.hpp"

namespace dpstats::stats::detail {

std::vector<ColumnBounds> estimate_bounds(const ConstMatrixRef&, const StatOptions&, double,
                                          ReleaseBudget&, Rng&, nlohmann::json&) {
  throw InvalidArgument(
      "bounds is required: one (lower, upper) per column (or one for all columns) that the "
      "values are clipped to; choose them from knowledge of the data (e.g. age in [0, 120]), "
      "never from the data themselves");
}

}  // namespace dpstats::stats::detail
