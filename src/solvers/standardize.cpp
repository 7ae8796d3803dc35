// Private standardisation and the intercept (standardize.hpp).
#include "dpstats/solvers/standardize.hpp"

#include <fmt/format.h>

#include <string>

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

LocationOptions centring_options(const PrivacyLoss& share) {
  LocationOptions o;
  o.loss = share;
  o.final_mad = false;  // four selections per column: the spread is scale enough to standardise
  return o;
}

Centring private_centring(const ConstMatrixRef& rows, const PrivacyLoss& share,
                          ReleaseBudget& account, Rng& rng, const Vector* labels) {
  const Eigen::Index d = rows.cols();
  RowMatrix table;
  if (labels) {
    table.resize(rows.rows(), d + 1);
    table.leftCols(d) = rows;
    table.col(d) = *labels;
  }
  const LocationEstimate est = private_location(labels ? ConstMatrixRef(table) : rows,
                                                centring_options(share), account, rng);
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
  for (std::size_t j = 0; j < est.columns.size(); ++j) {
    if (est.columns[j].status == ScaleStatus::insufficient_data && !c.abstained) {
      c.abstained = fmt::format("the private centring of column {} has no guarantee: {}",
                                labels && j + 1 == est.columns.size() ? "y" : std::to_string(j + 1),
                                est.columns[j].reason);
    }
  }
  return c;
}

}  // namespace dpstats::optimize
