// Private standardisation and the intercept (standardize.hpp).
#include "dpstats/solvers/standardize.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/scale/reliability.hpp"

namespace dpstats::optimize {

RowMatrix Standardization::apply(const ConstMatrixRef& X) const {
  const Eigen::Index d = X.cols();
  RowMatrix Z(X.rows(), d + 1);
  for (Eigen::Index j = 0; j < d; ++j) {
    if (scale[j] > 0) {
      Z.col(j) = (X.col(j).array() - location[j]) / scale[j];
    } else {
      Z.col(j).setZero();
    }
  }
  Z.col(d).setOnes();
  return Z;
}

Vector Standardization::apply_labels(const Vector& y) const {
  if (!labels) return y;
  return (y.array() - label_location) / label_scale;
}

Vector Standardization::to_user_units(const Vector& v) const {
  if (v.size() == 0) return v;
  const Eigen::Index d = location.size();
  const double sy = labels ? label_scale : 1.0;
  Vector out(d + 1);
  double b = (labels ? label_location : 0.0) + sy * v[d];
  for (Eigen::Index j = 0; j < d; ++j) {
    out[j] = scale[j] > 0 ? sy * v[j] / scale[j] : 0.0;
    b -= out[j] * location[j];
  }
  out[d] = b;
  return out;
}

double Standardization::bound_of(double raw_bound) const {
  double smallest = std::numeric_limits<double>::infinity();
  for (Eigen::Index j = 0; j < scale.size(); ++j)
    if (scale[j] > 0) smallest = std::min(smallest, scale[j]);
  if (!std::isfinite(smallest)) return 1;  // every column degenerate: z = (0, ..., 0, 1)
  const double z = (raw_bound + location.norm()) / smallest;
  return std::sqrt(z * z + 1);
}

LocationOptions centring_options(const PrivacyLoss& share) {
  LocationOptions o;
  o.loss = share;
  o.final_mad = false;  // four selections per column: the spread is scale enough to standardise
  return o;
}

Centring private_centring(const ConstMatrixRef& rows, const PrivacyLoss& share,
                          ReleaseBudget& account, Rng& rng, const Vector* labels,
                          Communicator* comm) {
  const Eigen::Index d = rows.cols();
  RowMatrix table;
  if (labels) {
    table.resize(rows.rows(), d + 1);
    table.leftCols(d) = rows;
    table.col(d) = *labels;
  }
  LocationOptions lo = centring_options(share);
  lo.comm = comm;
  const LocationEstimate est =
      private_location(labels ? ConstMatrixRef(table) : rows, lo, account, rng);
  Centring c;
  Standardization& st = c.standardization;
  st.location = est.location().head(d);
  st.scale = est.scale().head(d);
  st.diagnostics = est.diagnostics();
  st.diagnostics["model"] =
      "x . w + b: the estimate is (w_1..w_d, b); the fit ran on z_j = (x_j - location_j) / "
      "scale_j and a constant 1 (a degenerate column gets w_j = 0)";
  if (labels) {
    st.labels = true;
    st.label_location = est.columns.back().location;
    st.label_scale = est.columns.back().scale > 0 ? est.columns.back().scale : 1.0;
    st.diagnostics["labels"] =
        "the last column is the label: the fit ran on (y - location) / scale, mapped back";
  }
  // The rule of scale/reliability.hpp on every column; a degenerate column (most values equal:
  // its spread is not resolved) is accepted, dropped from the fit (w_j = 0) and listed.
  LocationEstimate judged = est;
  std::vector<std::string> dropped;
  for (std::size_t j = 0; j < est.columns.size(); ++j) {
    if (est.columns[j].status != ScaleStatus::degenerate) continue;
    judged.columns[j].status = ScaleStatus::ok;
    judged.columns[j].facts.degenerate = false;
    if (!(labels && j + 1 == est.columns.size())) dropped.push_back(std::to_string(j + 1));
  }
  if (!dropped.empty()) st.diagnostics["dropped_columns"] = dropped;
  Reliability r = reliability(judged, "centre = false (fit x . w in the data's units)");
  r.estimate = "the centring (" + r.estimate + ")";
  st.diagnostics["reliability"] = r.json();
  if (!r.usable) c.abstained = r.reason();
  return c;
}


namespace {

// 2 m S_j of the offset check (standardize.hpp), an exact integer: each row adds
// 2 (1{v < 0} + 1/2 1{v = 0}) in {0, 1, 2}, so that the ranks' counts merge exactly.
std::vector<std::int64_t> zero_ranks_twice(const ConstMatrixRef& rows, const Vector* labels) {
  const Eigen::Index d = rows.cols(), c = d + (labels ? 1 : 0);
  const auto side = [](double v) -> std::int64_t { return v < 0 ? 2 : (v == 0 ? 1 : 0); };
  std::vector<std::int64_t> k(static_cast<std::size_t>(c), 0);
  for (Eigen::Index i = 0; i < rows.rows(); ++i) {
    for (Eigen::Index j = 0; j < d; ++j) k[static_cast<std::size_t>(j)] += side(rows(i, j));
    if (labels) k[static_cast<std::size_t>(d)] += side((*labels)[i]);
  }
  return k;
}

// S_j = k_j / (2m) over every rank's rows (one process: this process's).
Vector zero_ranks(const ConstMatrixRef& rows, std::int64_t m, const Vector* labels,
                  Communicator& comm) {
  std::vector<std::int64_t> k = zero_ranks_twice(rows, labels);
  if (comm.size() > 1) comm.allreduce_sum(k);
  Vector s(static_cast<Eigen::Index>(k.size()));
  for (std::size_t j = 0; j < k.size(); ++j) {
    s[static_cast<Eigen::Index>(j)] = static_cast<double>(k[j]) / static_cast<double>(2 * m);
  }
  return s;
}

}  // namespace

namespace {

const char* const kOffsetPurpose = "offset check: noisy mid-rank of 0 per column (fit without centring)";

// The check's mechanism on c columns: Gaussian at rho (l2 sensitivity sqrt(c)) or Laplace at
// epsilon (l1 sensitivity c).
struct OffsetMechanism {
  std::optional<GaussianMechanism> gaussian;
  std::optional<LaplaceMechanism> laplace;
  LedgerEntry entry() const {
    return gaussian ? gaussian->ledger_entry(kOffsetPurpose) : laplace->ledger_entry(kOffsetPurpose);
  }
};

OffsetMechanism offset_mechanism(Eigen::Index c, const PrivacyLoss& share, NoiseMode noise) {
  OffsetMechanism m;
  const auto cs = static_cast<std::size_t>(c);
  if (share.kind == LossKind::zcdp)
    m.gaussian.emplace(GaussianMechanism::from_rho(std::sqrt(static_cast<double>(c)), share.rho, cs, noise));
  else
    m.laplace.emplace(static_cast<double>(c), share.epsilon, cs, noise);
  return m;
}

}  // namespace

LedgerEntry offset_check_entry(Eigen::Index columns, const PrivacyLoss& share, NoiseMode noise) {
  return offset_mechanism(columns, share, noise).entry();
}

OffsetCheck offset_check(const ConstMatrixRef& rows, std::int64_t rows_per_unit,
                         const Vector* labels, const PrivacyLoss& share, NoiseMode noise,
                         ReleaseBudget& account, Rng& rng, Communicator* ranks,
                         bool class_labels) {
  Communicator& comm = comm_or_single(ranks);
  const Eigen::Index d = rows.cols(), c = d + (labels ? 1 : 0);
  const std::int64_t all_rows =
      comm.size() == 1 ? rows.rows() : allreduce_count(comm, static_cast<std::int64_t>(rows.rows()));
  const double units = static_cast<double>(all_rows / rows_per_unit);
  const Vector S = zero_ranks(rows, rows_per_unit, labels, comm);
  const OffsetMechanism mech = offset_mechanism(c, share, noise);
  all_or_none(comm, [&] { account.claim(mech.entry()); });
  OffsetCheck out;
  Vector noisy;
  double sd = 0;
  if (mech.gaussian) {
    noisy = on_root(comm, [&] { return Vector(mech.gaussian->apply(S, rng)); });
    sd = mech.gaussian->sigma();
    out.diagnostics["rho"] = share.rho;
  } else {
    noisy = on_root(comm, [&] { return Vector(mech.laplace->apply(S, rng)); });
    sd = std::sqrt(2.0) * mech.laplace->noise_scale();
    out.diagnostics["epsilon"] = share.epsilon;
  }
  nlohmann::json cols = nlohmann::json::array();
  std::string far, unsure;
  const auto append = [](std::string& list, const std::string& name) {
    list += (list.empty() ? "" : ", ") + name;
  };
  out.noise_sd_fraction = sd / units;
  for (Eigen::Index j = 0; j < c; ++j) {
    const double f = std::clamp(noisy[j] / units, 0.0, 1.0), minority = std::min(f, 1 - f);
    const bool is_far = minority < kOffsetMinority;
    // Class labels: unsure until the band rules out a minority class under the threshold.
    const double floor = class_labels && labels && j == d ? kOffsetMinority : 0;
    const bool is_unsure = !is_far && minority - kOffsetBandZ * out.noise_sd_fraction <= floor;
    const std::string name = labels && j == d ? "y" : std::to_string(j + 1);
    cols.push_back({{"column", name}, {"fraction_below_zero", f}, {"far", is_far},
                    {"unsure", is_unsure}});
    if (is_far) append(far, name);
    if (is_unsure) append(unsure, name);
  }
  if (!far.empty()) out.far = far;
  if (!unsure.empty()) out.unsure = unsure;
  out.diagnostics.update(
      {{"columns", cols}, {"threshold", kOffsetMinority}, {"noise_sd_fraction", out.noise_sd_fraction},
       {"rule", fmt::format("a column is far from centred when fewer than {:.0f}% of the units "
                            "lie on one side of 0 (noisy mid-rank of 0; for a Gaussian column "
                            "|mean| > 1.28 sd), unsure when the one-sided 95% noise band of that "
                            "share reaches 0{}", 100 * kOffsetMinority,
                            class_labels ? " (for the class labels y: reaches the threshold)"
                                         : "")}});
  return out;
}

std::size_t centring_units_needed(const LocationOptions& o, std::size_t d) {
  std::size_t hi = 1;
  while (hi < (std::size_t{1} << 50) && private_location_shortfall(o, hi, d)) hi *= 2;
  std::size_t lo = hi / 2;  // shortfall at lo (or lo == 0), none at hi
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (private_location_shortfall(o, mid, d) ? lo : hi) = mid;
  }
  return hi;
}

namespace {

// A list of checked columns ("1, 2, y") less the class labels "y" (listed last) when `strip`.
std::string without_labels(const std::string& list, bool strip) {
  if (!strip || (list != "y" && !list.ends_with(", y"))) return list;
  return list == "y" ? "" : list.substr(0, list.size() - 3);
}

}  // namespace

std::string offset_abstention(const OffsetCheck& oc, std::size_t have, std::size_t need,
                              const char* units, bool class_labels) {
  const std::string far = oc.far ? without_labels(*oc.far, class_labels) : "";
  const std::string unsure = oc.unsure ? without_labels(*oc.unsure, class_labels) : "";
  // Centring the features by hand does not balance the classes.
  const bool labels_far = oc.far && far != *oc.far;
  const bool labels = labels_far || (oc.unsure && unsure != *oc.unsure);
  std::vector<std::string> what;
  if (!far.empty()) what.push_back(fmt::format("column(s) {} lie far from 0 relative to their spread", far));
  if (!unsure.empty()) {
    what.push_back(fmt::format("the check's noise (sd {:.2g} of the {}) cannot tell whether "
                               "column(s) {} lie near 0", oc.noise_sd_fraction, units, unsure));
  }
  if (labels) {
    what.push_back(fmt::format("{} (one class under 10% of the {}: a fit without an intercept "
                               "cannot express that base rate)",
                               labels_far ? "the class labels are unbalanced"
                                          : "the check's noise cannot tell whether the class "
                                            "labels are balanced", units));
  }
  return fmt::format(
      "{} (private offset check), and {} {} are too few for a private centring: a fit without an "
      "intercept in these units has no useful guarantee. Give at least {} {} (the private "
      "centring then standardises the features and fits an intercept), {}or pass centre = false "
      "to fit x . w without an intercept in the data's units anyway",
      fmt::join(what, "; "), have, units, need, units,
      labels ? "" : "or supply centred, standardised features, ");
}

nlohmann::json fit_stated_error() {
  return {{"radius", nullptr},
          {"statement",
           "no stated error: the methods' excess-risk bounds hold in expectation, up to "
           "unspecified constants, under assumptions a release cannot check (the minimiser "
           "inside domain_radius, the Lipschitz/moment constants of the unclipped data); judge "
           "the model on held-out data (docs/proofs, \"Stated error\")"}};
}

}  // namespace dpstats::optimize
