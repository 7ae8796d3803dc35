// Accessors and diagnostics of the scale estimates (column_scale.hpp, norm_quantile.hpp).
#include <algorithm>

#include "dpstats/release.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "columns.hpp"

namespace dpstats {
namespace {

template <class Get>
Vector gather(const std::vector<ColumnScale>& columns, Get get) {
  Vector v(static_cast<Eigen::Index>(columns.size()));
  for (std::size_t j = 0; j < columns.size(); ++j) v[static_cast<Eigen::Index>(j)] = get(columns[j]);
  return v;
}

nlohmann::json column_json(const ColumnScale& c) {
  nlohmann::json j = {{"location", c.location}, {"scale", c.scale}, {"lo", c.lo},
                      {"hi", c.hi},             {"mad", c.mad},     {"resolution", c.resolution},
                      {"status", to_string(c.status)}};
  if (!c.reason.empty()) j["reason"] = c.reason;
  return j;
}

}  // namespace

Vector ScaleEstimate::location() const { return gather(columns, [](auto& c) { return c.location; }); }
Vector ScaleEstimate::scale() const { return gather(columns, [](auto& c) { return c.scale; }); }
Vector ScaleEstimate::lo() const { return gather(columns, [](auto& c) { return c.lo; }); }
Vector ScaleEstimate::hi() const { return gather(columns, [](auto& c) { return c.hi; }); }

bool ScaleEstimate::all_ok() const {
  return std::all_of(columns.begin(), columns.end(),
                     [](const ColumnScale& c) { return c.status == ScaleStatus::ok; });
}

nlohmann::json ScaleEstimate::diagnostics() const {
  return scale_detail::columns_diagnostics(
      *this, "private_scale (log-grid median, refined median, MAD)", column_json);
}

nlohmann::json NormQuantile::diagnostics() const {
  nlohmann::json j = {{"estimator", "private_norm_quantile (log-grid cell, upper end)"},
                      {"value", value},
                      {"cell", {cell_lo, cell_hi}},
                      {"q", q},
                      {"epsilon", epsilon},
                      {"rank_error", rank_error},
                      {"status", to_string(status)},
                      {"charged", ledger_json(entries)}};
  if (!reason.empty()) j["reason"] = reason;
  return j;
}

}  // namespace dpstats
