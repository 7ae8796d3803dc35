#include "dpstats/user_level/home_rank.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/error.hpp"

namespace dpstats::optimize {

int home_rank(std::int64_t user_id, int ranks) {
  require(ranks >= 1, fmt::format("ranks must be >= 1, got {}", ranks));
  // splitmix64's finaliser: consecutive ids land on different ranks.
  auto z = static_cast<std::uint64_t>(user_id) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<int>(z % static_cast<std::uint64_t>(ranks));
}

namespace {

// One row on the wire: id, global row id, label, d features (8 bytes each).
struct Row {
  std::int64_t id = 0, global = 0;
  std::size_t at = 0;  // offset of the row's record in its message
  std::size_t from = 0;
};

void put(Bytes& b, const void* p) {
  const auto* c = static_cast<const std::uint8_t*>(p);
  b.insert(b.end(), c, c + 8);
}

// Local checks before any row moves (every rank stops together on one rank's bad row).
void check_shard(const ConstMatrixRef& X, const Vector& y, const std::vector<std::int64_t>& users) {
  require(y.size() == X.rows(), "y must have one label per row of X (the counts are not shown)");
  require(static_cast<Eigen::Index>(users.size()) == X.rows(),
          "users must have one id per row of X (the counts are not shown)");
  require(X.allFinite(), "X has a NaN or infinite value");
  require(y.allFinite(), "y must be finite");
}

}  // namespace

UserDataset gather_users(Communicator& comm, const ConstMatrixRef& X, const Vector& y,
                         const std::vector<std::int64_t>& users, std::int64_t m,
                         std::optional<double> feature_bound, std::optional<double> label_bound) {
  if (comm.size() == 1) return UserDataset(X, y, users, m, feature_bound, label_bound);
  const std::int64_t d = X.cols();
  const HomeRankOptions guarded{m, feature_bound, label_bound};
  check_agreement(comm, fingerprint_of("user-level rows", guarded, d),
                  "the user-level rows' columns and options");
  require(m >= 1, fmt::format("items_per_user must be >= 1, got {}: the public number of items "
                              "per user", m));
  all_or_none(comm, [&] { check_shard(X, y, users); });
  const ShardRows rows = shard_rows(comm, X.rows());
  require(rows.total > 0, "the user-level data have no row on any rank");
  const int P = comm.size();
  std::vector<Bytes> send(static_cast<std::size_t>(P));
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    Bytes& b = send[static_cast<std::size_t>(home_rank(users[static_cast<std::size_t>(i)], P))];
    const std::int64_t global = rows.offset + i;
    put(b, &users[static_cast<std::size_t>(i)]);
    put(b, &global);
    const double label = y[i];
    put(b, &label);
    for (Eigen::Index j = 0; j < d; ++j) {
      const double v = X(i, j);
      put(b, &v);
    }
  }
  const std::vector<Bytes> got = comm.alltoall(send);
  const std::size_t record = static_cast<std::size_t>(d + 3) * 8;
  std::vector<Row> in;
  for (std::size_t r = 0; r < got.size(); ++r) {
    for (std::size_t at = 0; at + record <= got[r].size(); at += record) {
      Row row{0, 0, at, r};
      std::memcpy(&row.id, got[r].data() + at, 8);
      std::memcpy(&row.global, got[r].data() + at + 8, 8);
      in.push_back(row);
    }
  }
  // A user's rows in the order one process reads them.
  std::sort(in.begin(), in.end(), [](const Row& a, const Row& b) {
    return a.id != b.id ? a.id < b.id : a.global < b.global;
  });
  std::set<std::int64_t> ids;
  for (const Row& r : in) ids.insert(r.id);
  const std::int64_t n = allreduce_count(comm, static_cast<std::int64_t>(ids.size()));
  const std::int64_t items = m;
  if (in.empty()) {
    UserDataset none = UserDataset::none(d, items, feature_bound, label_bound);
    none.set_total_users(n);
    return none;
  }
  RowMatrix Xh(static_cast<Eigen::Index>(in.size()), d);
  Vector yh(static_cast<Eigen::Index>(in.size()));
  std::vector<std::int64_t> uh(in.size());
  for (std::size_t k = 0; k < in.size(); ++k) {
    const std::uint8_t* p = got[in[k].from].data() + in[k].at;
    uh[k] = in[k].id;
    std::memcpy(&yh[static_cast<Eigen::Index>(k)], p + 16, 8);
    std::memcpy(Xh.row(static_cast<Eigen::Index>(k)).data(), p + 24, static_cast<std::size_t>(d) * 8);
  }
  UserDataset out(Xh, yh, uh, items, feature_bound, label_bound);
  out.set_total_users(n);
  return out;
}

UserDataset users_on_root(Communicator& comm, const UserDataset& data) {
  if (comm.size() == 1) return data;
  const std::int64_t m = data.items_per_user(), d = data.dim();
  const std::size_t record = static_cast<std::size_t>(1 + m + m * d);  // id, m labels, m rows
  std::vector<double> mine;
  mine.reserve(static_cast<std::size_t>(data.num_users()) * record);
  for (std::int64_t u = 0; u < data.num_users(); ++u) {
    double id = 0;
    std::memcpy(&id, &data.ids()[static_cast<std::size_t>(u)], 8);  // the id's bits
    mine.push_back(id);
    for (std::int64_t k = 0; k < m; ++k) mine.push_back(data.label(u, k));
    for (std::int64_t k = 0; k < m; ++k) mine.insert(mine.end(), data.features(u, k), data.features(u, k) + d);
  }
  std::vector<Bytes> send(static_cast<std::size_t>(comm.size()));
  send[0] = to_bytes(mine);
  const std::vector<Bytes> got = comm.alltoall(send);
  if (comm.rank() != 0) {
    const auto bound = [](bool has, double v) { return has ? std::optional<double>(v) : std::nullopt; };
    UserDataset none = UserDataset::none(d, m, bound(data.has_feature_bound(), data.feature_bound()),
                                         bound(data.has_label_bound(), data.label_bound()));
    none.set_total_users(data.total_users());
    return none;
  }
  std::vector<double> all;
  for (const Bytes& b : got) {
    const auto v = from_bytes<std::vector<double>>(b);
    all.insert(all.end(), v.begin(), v.end());
  }
  const std::size_t n = all.size() / record;
  std::vector<std::pair<std::int64_t, std::size_t>> order(n);  // (id, record)
  for (std::size_t r = 0; r < n; ++r) {
    std::memcpy(&order[r].first, &all[r * record], 8);
    order[r].second = r;
  }
  std::sort(order.begin(), order.end());
  RowMatrix X(static_cast<Eigen::Index>(n * static_cast<std::size_t>(m)), d);
  Vector y(X.rows());
  std::vector<std::int64_t> ids(n);
  for (std::size_t u = 0; u < n; ++u) {
    const double* p = &all[order[u].second * record];
    ids[u] = order[u].first;
    for (std::int64_t k = 0; k < m; ++k) {
      const auto row = static_cast<Eigen::Index>(u) * m + k;
      y[row] = p[1 + k];
      X.row(row) = Eigen::Map<const Vector>(p + 1 + m + k * d, d).transpose();
    }
  }
  UserDataset out = UserDataset::stacked(std::move(X), std::move(y), std::move(ids), m,
                                         data.feature_bound(), data.label_bound());
  out.set_total_users(data.total_users());
  return out;
}

}  // namespace dpstats::optimize
