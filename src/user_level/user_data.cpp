#include "dpstats/user_level/user_data.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include <fmt/format.h>

#include "dpstats/error.hpp"

namespace dpstats::optimize {

UserDataset::UserDataset(const ConstMatrixRef& X, const Vector& y,
                         const std::vector<std::int64_t>& users, std::int64_t m,
                         std::optional<double> feature_bound, std::optional<double> label_bound) {
  check_data(X, "X");
  if (feature_bound) check_positive(*feature_bound, "feature_bound");
  if (label_bound) check_positive(*label_bound, "label_bound");
  A_ = feature_bound.value_or(A_);
  B_ = label_bound.value_or(B_);
  require(y.size() == X.rows(), "y must have one label per row of X");
  require(static_cast<Eigen::Index>(users.size()) == X.rows(),
          "users must have one id per row of X");
  require(y.allFinite(), "y must be finite");
  require(m >= 1, fmt::format("items_per_user must be >= 1, got {}: the public number of items "
                              "per user (each user's rows are truncated to it, or repeated)", m));
  std::map<std::int64_t, std::vector<Eigen::Index>> rows;
  for (Eigen::Index i = 0; i < X.rows(); ++i) rows[users[static_cast<std::size_t>(i)]].push_back(i);
  n_ = static_cast<std::int64_t>(rows.size());
  m_ = m;
  features_.resize(n_ * m_, X.cols());
  labels_.resize(n_ * m_);
  std::int64_t u = 0;
  for (const auto& [id, r] : rows) {
    ids_.push_back(id);
    for (std::int64_t k = 0; k < m_; ++k) {
      const Eigen::Index src = r[static_cast<std::size_t>(k) % r.size()];
      features_.row(u * m_ + k) = X.row(src);
      labels_[u * m_ + k] = y[src];
    }
    ++u;
  }
  clip();
}

UserDataset::UserDataset(RowMatrix X, Vector y, std::int64_t m,
                         std::optional<double> feature_bound, std::optional<double> label_bound)
    : features_(std::move(X)), labels_(std::move(y)), m_(m) {
  check_data(features_, "X");
  if (feature_bound) check_positive(*feature_bound, "feature_bound");
  if (label_bound) check_positive(*label_bound, "label_bound");
  A_ = feature_bound.value_or(A_);
  B_ = label_bound.value_or(B_);
  require(m >= 1, "items_per_user m must be >= 1");
  require(labels_.size() == features_.rows() && labels_.allFinite(),
          "y must hold one finite label per row of X");
  require(features_.rows() % m == 0, "user-major data needs rows = n·m");
  n_ = features_.rows() / m;
  for (std::int64_t u = 0; u < n_; ++u) ids_.push_back(u);
  clip();
}

UserDataset UserDataset::none(std::int64_t d, std::int64_t m, std::optional<double> feature_bound,
                              std::optional<double> label_bound) {
  require(d >= 1 && m >= 1, "an empty user dataset still needs d >= 1 and m >= 1");
  if (feature_bound) check_positive(*feature_bound, "feature_bound");
  if (label_bound) check_positive(*label_bound, "label_bound");
  UserDataset out;
  out.features_.resize(0, d);
  out.labels_.resize(0);
  out.m_ = m;
  out.A_ = feature_bound.value_or(out.A_);
  out.B_ = label_bound.value_or(out.B_);
  return out;
}

UserDataset UserDataset::bounded(double feature_bound, double label_bound,
                                 const Vector* labels) const {
  check_positive(feature_bound, "feature_bound");
  check_positive(label_bound, "label_bound");
  UserDataset out = *this;
  if (labels) {
    require(labels->size() == labels_.size(), "bounded: one label per row");
    out.labels_ = *labels;
  }
  out.A_ = std::min(A_, feature_bound);
  out.B_ = std::min(B_, label_bound);
  out.clip();
  return out;
}

UserDataset UserDataset::stacked(RowMatrix X, Vector y, std::vector<std::int64_t> ids,
                                 std::int64_t m, double A, double B) {
  require(m >= 1, "items_per_user m must be >= 1");
  require(X.rows() == static_cast<Eigen::Index>(ids.size()) * m && y.size() == X.rows(),
          "stacked: rows = users·m, one label per row");
  UserDataset out;
  out.features_ = std::move(X);
  out.labels_ = std::move(y);
  out.ids_ = std::move(ids);
  out.m_ = m;
  out.n_ = static_cast<std::int64_t>(out.ids_.size());
  out.A_ = A;
  out.B_ = B;
  return out;
}

UserDataset UserDataset::with_features(RowMatrix X) const {
  require(X.rows() == features_.rows(),
          "with_features: one row per item (" + std::to_string(features_.rows()) + "), got " +
              std::to_string(X.rows()));
  require(X.allFinite(), "with_features: the features have a NaN or infinite value");
  UserDataset out = *this;
  out.features_ = std::move(X);
  out.A_ = std::numeric_limits<double>::infinity();
  out.B_ = std::numeric_limits<double>::infinity();
  return out;
}

UserDataset UserDataset::subset(const std::vector<bool>& keep, std::int64_t total) const {
  require(static_cast<std::int64_t>(keep.size()) == n_, "subset: one flag per user");
  UserDataset out = *this;
  out.ids_.clear();
  std::int64_t k = 0;
  for (std::int64_t u = 0; u < n_; ++u) {
    if (!keep[static_cast<std::size_t>(u)]) continue;
    out.features_.middleRows(k * m_, m_) = features_.middleRows(u * m_, m_);
    out.labels_.segment(k * m_, m_) = labels_.segment(u * m_, m_);
    out.ids_.push_back(ids_[static_cast<std::size_t>(u)]);
    ++k;
  }
  out.features_.conservativeResize(k * m_, Eigen::NoChange);
  out.labels_.conservativeResize(k * m_);
  out.n_ = k;
  out.total_n_ = gathered() ? total : -1;
  return out;
}

std::int64_t UserDataset::users_clipped_at(double feature_bound) const {
  std::int64_t users = 0;
  for (std::int64_t u = 0; u < n_; ++u) {
    bool any = false;
    for (std::int64_t k = 0; k < m_ && !any; ++k)
      any = features_.row(u * m_ + k).norm() > feature_bound;
    users += any ? 1 : 0;
  }
  return users;
}

void UserDataset::clip() {
  for (Eigen::Index i = 0; i < features_.rows(); ++i) {
    const double norm = features_.row(i).norm();
    if (norm > A_) features_.row(i) *= A_ / norm;
    labels_[i] = std::clamp(labels_[i], -B_, B_);
  }
}

}  // namespace dpstats::optimize
