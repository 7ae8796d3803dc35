// A per-user view of labelled data (docs/proofs/user-level.md §1, §3): rows (a, y) with a
// user-id column, regrouped user-major with exactly m items per user.
//
// Per-user preprocessing only (privacy-safe: each user's items are a function of that user's rows
// alone): when bounds are given, features are clipped to the public norm bound A and labels to
// [−B, B]; a user with more than m rows keeps its first m, one with fewer repeats its own rows
// cyclically. n (number of distinct ids) and m are public: neighbouring datasets replace the whole
// data of one user. Without bounds nothing is clipped (fit_user_level then takes the bounds from
// its options or estimates them privately, and clips a copy with `bounded`).
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "dpstats/data/matrix.hpp"

namespace dpstats::optimize {

class UserDataset {
 public:
  // X: rows × p features, y: rows labels, users: rows ids; m >= 1 the public number of items
  // per user (required: the row count is not public under user-level neighbouring, so m is
  // never derived from it).
  UserDataset(const ConstMatrixRef& X, const Vector& y, const std::vector<std::int64_t>& users,
              std::int64_t m, std::optional<double> feature_bound = std::nullopt,
              std::optional<double> label_bound = std::nullopt);
  // Already user-major: rows u·m .. u·m+m−1 belong to user u.
  UserDataset(RowMatrix X, Vector y, std::int64_t m,
              std::optional<double> feature_bound = std::nullopt,
              std::optional<double> label_bound = std::nullopt);

  // A copy with features clipped to A and labels to [−B, B] (and labels replaced by `labels`
  // when given, e.g. the {0, 1} -> ±1 mapping). Also counts the users with a clipped row.
  UserDataset bounded(double feature_bound, double label_bound,
                      const Vector* labels = nullptr) const;
  // A copy with the features replaced by X (the same rows, e.g. privately standardised; any
  // column count) and no bounds: the same users, ids, m and total_users().
  UserDataset with_features(RowMatrix X) const;
  // A copy with the users u for which keep[u] holds (this process's users, in order), with the
  // same m and bounds; `total` is the kept users over every rank (set as total_users() when
  // this dataset was gathered, else the kept users here).
  UserDataset subset(const std::vector<bool>& keep, std::int64_t total) const;
  // Users with at least one row whose norm exceeds A (non-private: a private count releases it).
  std::int64_t users_clipped_at(double feature_bound) const;

  // Already user-major (rows u·m .. u·m+m−1 are user ids[u]'s) and already within the bounds A
  // and B, which it records without clipping again (e.g. every rank's users stacked on rank 0 by
  // users_on_root, home_rank.hpp: bit for bit the rows they had).
  static UserDataset stacked(RowMatrix X, Vector y, std::vector<std::int64_t> ids, std::int64_t m,
                             double A, double B);
  // No user (a rank that is no user's home; home_rank.hpp): d columns, m items per user.
  static UserDataset none(std::int64_t d, std::int64_t m, std::optional<double> feature_bound,
                          std::optional<double> label_bound);

  // The users held here (what the per-user loops run over).
  std::int64_t num_users() const { return n_; }
  // The users over every rank (gather_users sets it; = num_users() in one process): the public n
  // of every schedule, sensitivity and mean.
  std::int64_t total_users() const { return total_n_ >= 0 ? total_n_ : n_; }
  void set_total_users(std::int64_t n) { total_n_ = n; }
  // Whether the users were gathered to their home ranks (set_total_users was called).
  bool gathered() const { return total_n_ >= 0; }
  std::int64_t items_per_user() const { return m_; }
  std::int64_t dim() const { return features_.cols(); }
  // +inf when the data were given no bound (nothing clipped).
  double feature_bound() const { return A_; }
  double label_bound() const { return B_; }
  bool has_feature_bound() const { return A_ < std::numeric_limits<double>::infinity(); }
  bool has_label_bound() const { return B_ < std::numeric_limits<double>::infinity(); }
  const double* features(std::int64_t user, std::int64_t k) const {
    return features_.data() + (user * m_ + k) * features_.cols();
  }
  double label(std::int64_t user, std::int64_t k) const { return labels_[user * m_ + k]; }
  const RowMatrix& all_features() const { return features_; }
  const Vector& all_labels() const { return labels_; }
  // The ids of the users in user-major order (for the constructor from ids).
  const std::vector<std::int64_t>& ids() const { return ids_; }

 private:
  void clip();
  RowMatrix features_;
  Vector labels_;
  std::vector<std::int64_t> ids_;
  UserDataset() = default;
  std::int64_t n_ = 0, m_ = 0;
  std::int64_t total_n_ = -1;  // -1: this process holds every user
  double A_ = std::numeric_limits<double>::infinity();
  double B_ = std::numeric_limits<double>::infinity();
};

}  // namespace dpstats::optimize
