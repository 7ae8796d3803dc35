// Column units of the mean family (mean/units.hpp; docs/proofs/mean.md §1).
#include "dpstats/mean/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/scale/winsorized_scale.hpp"

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

WinsorizedScaleOptions winsorized_options(const PrivacyLoss& share, double alpha) {
  WinsorizedScaleOptions wo;
  wo.loss = share;
  wo.q = winsorizing_quantile(alpha);
  wo.tail_radius = kTailRadius;
  return wo;
}

// The share split between the MAD step (3/5: three selections per column) and the winsorised
// step (the rest: one selection, one sum, one count per column); the two parts compose to at
// most the share (docs/proofs/mean.md §1).
struct SplitShare {
  PrivacyLoss mad, winsorized;
};
SplitShare split_share(const PrivacyLoss& share) {
  if (share.kind == LossKind::zcdp) {
    const double a = share.rho * 0.6;
    return {PrivacyLoss::zcdp(a), PrivacyLoss::zcdp((share.rho - a) * (1 - 1e-12))};
  }
  const double a = share.epsilon * 0.6;
  return {PrivacyLoss::pure(a), PrivacyLoss::pure(remainder_after(share.epsilon, a))};
}

}  // namespace

double winsorizing_quantile(double alpha) {
  return 1 - 2 * std::clamp(alpha, 0.05, 0.25);
}

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
  const SplitShare s = split_share(share);
  Ledger l = private_scale_entries(scale_options(s.mad, alpha, 4, 1), static_cast<std::size_t>(d));
  const Ledger w = winsorized_scale_entries(winsorized_options(s.winsorized, alpha),
                                            static_cast<std::size_t>(d));
  l.insert(l.end(), w.begin(), w.end());
  return l;
}

Reliability planned_units_reliability(const PrivacyLoss& share, Eigen::Index d, double alpha,
                                      std::int64_t n) {
  const ScaleOptions so = scale_options(split_share(share).mad, alpha, 4, 1);
  return assess(planned_scale_facts(so, static_cast<std::size_t>(d), static_cast<double>(n)),
                "the location and scale of each column", "--scale");
}

UnitsEstimate estimate_units(const RowsView& rows, const PrivacyLoss& share, double alpha,
                             double widen, int threads, ReleaseBudget& account, Rng& rng,
                             Communicator* comm) {
  const ConstMatrixRef& X = rows.matrix();
  const SplitShare s = split_share(share);
  ScaleOptions so = scale_options(s.mad, alpha, widen, threads);
  so.comm = comm;
  // The release's plan charged units_entries: the layer's mechanisms claim them.
  const ScaleEstimate est = private_scale(rows, so, account, rng);
  UnitsEstimate out;
  out.diagnostics = est.diagnostics();
  out.diagnostics["share"] = share.describe();
  out.units.location = est.location();
  out.units.scale = est.scale();
  out.units.estimated = true;
  const Vector mad_scale = est.scale();
  // The clip grid starts at the MAD (the 0.5-quantile of |x − m| <= the q-quantile); a
  // degenerate column (MAD 0, abstained below) gets the smallest normal double.
  const Vector reference =
      (mad_scale / 1.482602218505602).cwiseMax(std::numeric_limits<double>::min());
  WinsorizedScaleOptions wo = winsorized_options(s.winsorized, alpha);
  wo.comm = comm;
  const WinsorizedScale w = winsorized_scale(
      rows, out.units.location, reference, wo, account, rng,
      [&](std::size_t j, double ws, bool reliable) {
        const double mad = mad_scale[static_cast<Eigen::Index>(j)];
        return reliable ? std::max(mad, ws) : mad;
      });
  // Too few rows for the clip's selection at this share: the MAD scale alone (stated).
  out.units.scale = w.reliable ? mad_scale.cwiseMax(w.scale()) : mad_scale;
  const std::int64_t n = comm ? allreduce_count(*comm, static_cast<std::int64_t>(X.rows()))
                              : static_cast<std::int64_t>(X.rows());
  out.units.tail_noise = w.noise_scale / static_cast<double>(n);
  out.units.tail_fraction.resize(X.cols());
  for (std::size_t j = 0; j < w.columns.size(); ++j)
    out.units.tail_fraction[static_cast<Eigen::Index>(j)] = w.columns[j].tail_fraction;
  out.diagnostics["mad_scale"] = std::vector<double>(mad_scale.data(), mad_scale.data() + mad_scale.size());
  out.diagnostics["winsorized"] = w.diagnostics();
  out.diagnostics["winsorized"]["q"] = winsorizing_quantile(alpha);
  out.diagnostics["values"] = std::vector<double>(out.units.scale.data(),
                                                  out.units.scale.data() + out.units.scale.size());
  out.diagnostics["rule"] =
      w.reliable ? "scale = max(1.4826 MAD, Gaussian-calibrated winsorised second moment)"
                 : "scale = 1.4826 MAD (the winsorising clip's rank error exceeds (1 - q) n / 2 "
                   "at this share and n: the winsorised scale is not used)";
  // The one rule of the scale layer (scale/reliability.hpp): a release never rests on units it
  // calls unusable; the reason names the cause (a nearly constant column, too few rows for the
  // share) and what would suffice.
  const Reliability r = reliability(est, "--scale");
  out.diagnostics["reliability"] = r.json();
  if (!r.usable) out.abstained = r.reason();
  return out;
}

AffineRows units_view(const ConstMatrixRef& X, const ColumnUnits& u) {
  require(u.location.size() == X.cols() && u.scale.size() == X.cols(),
          "units: {} columns of units for {} columns of data", u.scale.size(), X.cols());
  return AffineRows(X, u.location, u.scale.cwiseInverse(), 1e150);
}

RowMatrix to_units(const ConstMatrixRef& X, const ColumnUnits& u) {
  return units_view(X, u).materialise();
}

Vector from_units(const Vector& z, const ColumnUnits& u) {
  return u.location + u.scale.cwiseProduct(z);
}

}  // namespace dpstats
