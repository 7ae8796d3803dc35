// Column units of the mean family (mean/units.hpp; docs/proofs/mean.md §1).
#include "dpstats/mean/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/scale/column_scale.hpp"

namespace dpstats {
namespace {

ScaleOptions scale_options(const PrivacyLoss& share, double alpha, double widen, int threads) {
  ScaleOptions so;
  so.loss = share;
  so.alpha = std::min(alpha, 0.25);
  so.widen = widen;
  so.threads = std::clamp(threads, 1, 256);
  return so;
}

}  // namespace

void check_supplied_scale(const std::vector<double>& scale, Eigen::Index d, const char* name) {
  require(scale.size() == 1 || static_cast<Eigen::Index>(scale.size()) == d,
          fmt::format("{} must hold one value for every column or one per column (d = {}), got "
                      "{} values",
                      name, d, scale.size()));
  for (double s : scale)
    require(std::isfinite(s) && s > 0,
            fmt::format("{} must be > 0 and finite (the data's spread in its own units, e.g. "
                        "its standard deviation per column), got {}",
                        name, s));
}

ColumnUnits supplied_units(const std::vector<double>& scale, Eigen::Index d) {
  check_supplied_scale(scale, d);
  ColumnUnits u;
  u.location = Vector::Zero(d);
  u.scale = scale.size() == 1 ? Vector::Constant(d, scale[0])
                              : Eigen::Map<const Vector>(scale.data(), d).eval();
  return u;
}

Ledger units_entries(const PrivacyLoss& share, Eigen::Index d, double alpha) {
  return private_scale_entries(scale_options(share, alpha, 4, 1), static_cast<std::size_t>(d));
}

UnitsEstimate estimate_units(const ConstMatrixRef& X, const PrivacyLoss& share, double alpha,
                             double widen, int threads, Rng& rng) {
  const ScaleOptions so = scale_options(share, alpha, widen, threads);
  // The release's account was charged these entries with its plan; this Budget only lets the
  // layer run (it holds exactly the share).
  ReleaseBudget scratch(share, share.kind == LossKind::zcdp ? Accountant::zcdp : Accountant::basic);
  const ScaleEstimate est = private_scale(X, so, scratch, rng);
  UnitsEstimate out;
  out.diagnostics = est.diagnostics();
  out.diagnostics["share"] = share.describe();
  out.units.location = est.location();
  out.units.scale = est.scale();
  out.units.estimated = true;
  for (std::size_t j = 0; j < est.columns.size(); ++j) {
    const ColumnScale& c = est.columns[j];
    if (c.status != ScaleStatus::ok) {
      out.abstained = fmt::format(
          "the scale of column {} could not be estimated privately ({}: {}); supply scale "
          "(--scale) or give the estimate a larger scale_share",
          j, to_string(c.status), c.reason);
      break;
    }
  }
  return out;
}

RowMatrix to_units(const ConstMatrixRef& X, const ColumnUnits& u) {
  RowMatrix Z(X.rows(), X.cols());
  const Vector inv = u.scale.cwiseInverse();
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = 0; j < X.cols(); ++j)  // clamped: a huge outlier stays finite
      Z(i, j) = std::clamp((X(i, j) - u.location[j]) * inv[j], -1e150, 1e150);
  return Z;
}

Vector from_units(const Vector& z, const ColumnUnits& u) {
  return u.location + u.scale.cwiseProduct(z);
}

}  // namespace dpstats
