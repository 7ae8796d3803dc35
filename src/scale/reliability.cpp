// The one reliability rule of the scale layer (reliability.hpp; docs/proofs/scale.md §6).
#include "dpstats/scale/reliability.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"
#include "dpstats/registry.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/location.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/scale/winsorized_scale.hpp"

namespace dpstats {
namespace {

// The public parameter that would replace the estimate, as the tool and Python spell it: an
// option's name or flag alone ("--bounds", "feature_bound") as "--bounds (Python: bounds=)",
// for a reason that reaches both; any other text (already naming both) as it is.
std::string give(std::string_view option) {
  if (option.empty()) return {};
  std::string name(option.substr(option.starts_with("--") ? 2 : 0));
  std::replace(name.begin(), name.end(), '-', '_');
  const bool plain = std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (!plain || name.empty()) return fmt::format(", or give {}", option);
  return fmt::format(", or give {} (Python: {}=)", cli_spelling(name), name);
}

template <class Columns>
Reliability per_column(const Columns& columns, std::string_view what, std::string_view option) {
  std::vector<Reliability> parts;
  for (std::size_t j = 0; j < columns.size(); ++j)
    parts.push_back(assess(columns[j].facts, fmt::format("{} of column {}", what, j + 1), option));
  return first_unusable(parts, std::string(what));
}

// A bound's side (§7b) when the anchor's cell holds most rows: resolved, nearly empty, or
// unusable because the rows beyond that value on this side are too few for the scan's rank error.
Reliability assess_side(const SelectionFacts& f, std::string estimate, std::string_view option) {
  const double low = f.beyond - f.beyond_noise, high = f.beyond + f.beyond_noise;
  const double out = f.designed_out + f.rank_error;
  if (!f.atom || low >= 2 * out || high <= 2 * f.designed_out)
    return Reliability::ok(std::move(estimate));
  // n (p - coverage) >= 2 t + noise with p = beyond / n, coverage = 2 designed_out / n: the rows
  // that would resolve the side at this epsilon, the share of rows off the value kept. A side the
  // count cannot tell from empty (low <= 0: the lower side of a 0/1 flag) is read as empty: its
  // count (within its noise bound of 0) plus that bound must fall below coverage n, so about
  // 2 noise / coverage rows, or the count's epsilon raised by 2 noise / (2 designed_out) (the
  // bound scales as 1 / epsilon). Reading the noise of an empty side as a share of rows asked
  // for 128 000 rows of a 2 000-row flag where 37 000 suffice.
  const double n = std::max(f.n, 1.0), p = std::max(f.beyond, 0.0) / n;
  const double coverage = 2 * f.designed_out / n, need = p - coverage;
  std::string suffice;
  if (low <= 0 && coverage > 0)
    suffice = fmt::format("about {:.0f} rows at this epsilon, or about {:.2g} times this "
                          "estimate's share of epsilon, to tell a side with so few rows from none",
                          std::ceil(2 * f.beyond_noise / coverage),
                          std::max(1.0, f.beyond_noise / std::max(f.designed_out, 0.5)));
  else if (need > 0)
    suffice = fmt::format("about {:.0f} rows with the same share of other values",
                          std::ceil((2 * f.rank_error + f.beyond_noise) / need));
  else
    suffice = fmt::format("about {:.2g} times this estimate's share of epsilon to tell so few "
                          "rows from none",
                          std::max(1.0, f.beyond_noise / std::max(2 * f.designed_out - std::max(f.beyond, 0.0), 1.0)));
  return Reliability::unusable(
      std::move(estimate),
      fmt::format("most rows equal one value: about {:.0f} rows lie beyond it on this side, "
                  "fewer than twice the {:.0f} rows the bound may leave out (it may stop short "
                  "of all of them)",
                  std::max(f.beyond, 0.0), out),
      suffice + give(option));
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

double rows_needed(const SelectionFacts& f) {
  require(f.rank_error >= 0 && f.tolerance > 0 && f.alpha >= 0,
          "rows_needed: rank_error and alpha must be >= 0 and tolerance > 0");
  const double room = f.tolerance - f.alpha;
  if (!(room > 0)) return std::numeric_limits<double>::infinity();
  // The least integer n with t <= room * n, exactly as the comparison rounds.
  double n = std::ceil(f.rank_error / room);
  while (f.rank_error > room * n) n += 1;
  while (n >= 1 && f.rank_error <= room * (n - 1)) n -= 1;
  return n;
}

Reliability assess(const SelectionFacts& f, std::string estimate, std::string_view option) {
  require(f.rank_error >= 0 && f.n >= 0 && f.tolerance > 0 && f.alpha >= 0,
          "assess: rank_error, n and alpha must be >= 0 and tolerance > 0");
  // The rank error first: when it is too large for the rows, the released cell (at the grid's
  // end, or a spread at the resolution) is noise, and "most values are equal" would name the
  // wrong cause (issue 27: a 40-row normal column was called constant).
  const double room = f.tolerance - f.alpha, needed = rows_needed(f);
  if (!(f.n >= needed)) {
    std::string suffice =
        room > 0 ? fmt::format("about {:.0f} {} at this epsilon", needed, f.unit)
                 : fmt::format("a corrupted fraction below {}", format_number(f.tolerance));
    if (room > 0 && f.n > 0)  // the rank error scales as 1 / epsilon
      suffice += fmt::format(", or about {:.2g} times this estimate's share of epsilon",
                             f.rank_error / (room * f.n));
    return Reliability::unusable(
        std::move(estimate),
        fmt::format("its rank error {0:.0f} {3} is more than {1} of the {2:.0f} {3}", f.rank_error,
                    format_number(room), f.n, f.unit),
        suffice + give(option));
  }
  if (f.at_grid_end)
    return Reliability::unusable(std::move(estimate),
                                 "the released cell is the end of its grid (the values lie "
                                 "beyond the range the estimate can resolve)",
                                 fmt::format("more {} or a larger epsilon may suffice", f.unit) +
                                     give(option));
  if (f.degenerate)
    return Reliability::unusable(std::move(estimate),
                                 "the released spread is at or below the resolution: at least half "
                                 "of the values are equal up to it (one value most rows share, as "
                                 "in a 0/1 flag or a zero-inflated count, or a spread finer than "
                                 "the location's resolution, about 1e-6 of its magnitude)",
                                 "the estimate cannot resolve this column's spread (subtract a "
                                 "public offset from a column far from 0 to give it a finer "
                                 "resolution)" + give(option));
  if (f.side) return assess_side(f, std::move(estimate), option);
  return Reliability::ok(std::move(estimate));
}

Reliability reliability(const ScaleEstimate& e, std::string_view option) {
  return per_column(e.columns, "the location and scale", option);
}

Reliability reliability(const LocationEstimate& e, std::string_view option) {
  return per_column(e.columns, "the location", option);
}

Reliability reliability(const NormQuantile& e, std::string_view option) {
  return assess(e.facts, fmt::format("the {} quantile of the norms", format_number(e.q)), option);
}

Reliability reliability(const WinsorizedScale& e, std::string_view option) {
  SelectionFacts f = e.facts;
  for (const WinsorizedColumn& c : e.columns) f.at_grid_end = f.at_grid_end || c.clip_at_end;
  return assess(f, "the winsorised scale", option);
}

}  // namespace dpstats
