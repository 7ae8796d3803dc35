// The one reliability rule of the scale layer (reliability.hpp; docs/proofs/scale.md §6).
#include "dpstats/scale/reliability.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/location.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/scale/winsorized_scale.hpp"

namespace dpstats {
namespace {

std::string give(std::string_view option) {
  return option.empty() ? std::string() : fmt::format(", or give {}", option);
}

// A column status of the scale layer, as a Reliability.
Reliability from_status(ScaleStatus s, const std::string& reason, std::string estimate,
                        std::string_view option) {
  switch (s) {
    case ScaleStatus::ok: return Reliability::ok(std::move(estimate));
    case ScaleStatus::insufficient_data:
      return Reliability::unusable(std::move(estimate), reason,
                                   "more rows or a larger epsilon would suffice" + give(option));
    case ScaleStatus::degenerate:
      return Reliability::unusable(std::move(estimate), reason,
                                   "the values are (nearly) all equal" + give(option));
  }
  return Reliability::unusable(std::move(estimate), "unknown status", std::string(option));
}

template <class Columns>
Reliability per_column(const Columns& columns, std::string_view what, std::string_view option) {
  std::vector<Reliability> parts;
  for (std::size_t j = 0; j < columns.size(); ++j)
    parts.push_back(from_status(columns[j].status, columns[j].reason,
                                fmt::format("{} of column {}", what, j + 1), option));
  return first_unusable(parts, std::string(what));
}

}  // namespace

Reliability Reliability::ok(std::string estimate) {
  Reliability r;
  r.estimate = std::move(estimate);
  return r;
}

Reliability Reliability::unusable(std::string estimate, std::string cause,
                                  std::string would_suffice) {
  Reliability r;
  r.usable = false;
  r.estimate = std::move(estimate);
  r.cause = std::move(cause);
  r.would_suffice = std::move(would_suffice);
  return r;
}

std::string Reliability::reason() const {
  if (usable) return {};
  return fmt::format("the private estimate of {} is not usable: {}; {}", estimate, cause,
                     would_suffice);
}

nlohmann::json Reliability::json() const {
  return {{"usable", usable}, {"estimate", estimate}, {"cause", cause},
          {"would_suffice", would_suffice}};
}

Reliability first_unusable(std::span<const Reliability> parts, std::string estimate) {
  for (const Reliability& r : parts)
    if (!r.usable) return r;
  return Reliability::ok(std::move(estimate));
}

Reliability assess(const SelectionFacts& f, std::string estimate, std::string_view option) {
  require(f.rank_error >= 0 && f.n >= 0 && f.tolerance > 0 && f.alpha >= 0,
          "assess: rank_error, n and alpha must be >= 0 and tolerance > 0");
  if (f.at_grid_end)
    return Reliability::unusable(std::move(estimate),
                                 "the released cell is the end of its grid (the values lie "
                                 "beyond the range the estimate can resolve)",
                                 "more rows or a larger epsilon may suffice" + give(option));
  if (f.degenerate)
    return Reliability::unusable(std::move(estimate),
                                 "the released spread is at or below the resolution (most values "
                                 "are equal)",
                                 "the estimate cannot resolve this column" + give(option));
  const double room = f.tolerance - f.alpha;
  if (room > 0 && f.rank_error <= room * f.n) return Reliability::ok(std::move(estimate));
  std::string suffice =
      room > 0 ? fmt::format("about {:.0f} rows at this epsilon", std::ceil(f.rank_error / room))
               : fmt::format("a corrupted fraction below {}", format_number(f.tolerance));
  if (room > 0 && f.epsilon > 0 && f.n > 0)  // the rank error scales as 1 / epsilon
    suffice += fmt::format(", or epsilon >= {} for this estimate",
                           format_number(f.epsilon * f.rank_error / (room * f.n)));
  return Reliability::unusable(
      std::move(estimate),
      fmt::format("its rank error {:.0f} rows is more than {} of the {:.0f} rows", f.rank_error,
                  format_number(room), f.n),
      suffice + give(option));
}

Reliability reliability(const ScaleEstimate& e, std::string_view option) {
  return per_column(e.columns, "the location and scale", option);
}

Reliability reliability(const LocationEstimate& e, std::string_view option) {
  return per_column(e.columns, "the location", option);
}

Reliability reliability(const NormQuantile& e, std::string_view option) {
  return from_status(e.status, e.reason, fmt::format("the {} quantile of the norms", e.q),
                     option);
}

Reliability reliability(const WinsorizedScale& e, std::string_view option) {
  if (e.reliable) return Reliability::ok("the winsorised scale");
  return Reliability::unusable(
      "the winsorised scale",
      fmt::format("its clip selection's rank error ({:.0f} rows) exceeds the tolerated share",
                  e.rank_error),
      "more rows or a larger epsilon would suffice" + give(option));
}

}  // namespace dpstats
