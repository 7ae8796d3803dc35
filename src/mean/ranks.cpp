// The mean family over ranks (ranks_internal.hpp).
#include <map>

#include "dpstats/comm/json.hpp"
#include "dpstats/mean/units.hpp"
#include "dpstats/mechanisms/range_ht.hpp"
#include "dpstats/random/partition.hpp"
#include "ranks_internal.hpp"

namespace dpstats::mean_detail {
namespace {

// Every rank's bins, added bin by bin (exact integer counts): the bins one process would count.
RangeBins merge(Communicator& comm, const RangeBins& local) {
  std::vector<std::int64_t> words;
  for (const auto& coordinate : local) {
    words.push_back(static_cast<std::int64_t>(coordinate.size()));
    for (const auto& [bin, count] : coordinate) {
      words.push_back(bin);
      words.push_back(count);
    }
  }
  const auto all = comm.allgather(to_bytes(words));
  std::vector<std::map<std::int64_t, std::int64_t>> sums(local.size());
  for (const auto& b : all) {
    const auto w = from_bytes<std::vector<std::int64_t>>(b);
    std::size_t at = 0;
    for (auto& coordinate : sums) {
      require(at < w.size(), "q_range: ranks hold different column counts");
      const auto k = static_cast<std::size_t>(w[at++]);
      for (std::size_t i = 0; i < k; ++i, at += 2) coordinate[w[at]] += w[at + 1];
    }
  }
  RangeBins out(local.size());
  for (std::size_t j = 0; j < sums.size(); ++j) out[j].assign(sums[j].begin(), sums[j].end());
  return out;
}

}  // namespace

std::int64_t guarded_rows(const ConstMatrixRef& X, Communicator& comm,
                          const std::string& fingerprint, const char* what, int threads) {
  if (comm.size() == 1) {
    check_data(X, "X", threads);
    return static_cast<std::int64_t>(X.rows());
  }
  check_agreement(comm, fingerprint, what);
  all_or_none(comm, [&] {
    if (X.rows() > 0) check_data(X, "X", threads);
  });
  const std::int64_t n = allreduce_count(comm, static_cast<std::int64_t>(X.rows()));
  require(n > 0, "X must have at least one row and one column, got 0 x {} (over {} ranks)",
          X.cols(), comm.size());
  return n;
}

void report_clipped(const mean_detail::Mech& count, const ConstMatrixRef& X, const Vector& lower,
                    const Vector& upper, std::int64_t n, double tolerated, const char* what,
                    Communicator& comm, Rng& rng, nlohmann::json& diag) {
  const std::int64_t outside = allreduce_count(comm, mean_detail::rows_outside(X, lower, upper));
  diag["clipped"] = on_root_json(comm, [&] {
    nlohmann::json d;
    mean_detail::report_clipped(count, outside, n, tolerated, what, false, rng, d);
    return d["clipped"];
  });
}

namespace {

// q_range over several ranks on a matrix's rows or a view's (every rank's bins, merged).
template <class Rows>
std::optional<RangeResult> ranked_q_range(const Rows& X, std::int64_t n, const RangeOptions& o,
                                          Communicator& comm, Rng& rng, int threads) {
  const auto d = static_cast<std::size_t>(X.cols());
  const EpsilonDelta per = q_range_coordinate_budget(o, d);
  RangeBins local;
  all_or_none(comm, [&] { local = q_range_bins(X, o.sigma, threads); });
  const RangeBins bins = merge(comm, local);
  // [side, centre...] or nothing when the range step abstained.
  const Vector packed = on_root(comm, [&] {
    const auto r = q_range_release(bins, n, o, per, rng);
    if (!r) return Vector();
    Vector v(r->centre.size() + 1);
    v << r->side, r->centre;
    return v;
  });
  if (packed.size() == 0) return std::nullopt;
  RangeResult r;
  r.side = packed[0];
  r.centre = packed.tail(packed.size() - 1);
  r.entry = q_range_entry(o, d);
  return r;
}

}  // namespace

std::optional<RangeResult> q_range(const ConstMatrixRef& X, std::int64_t n, const RangeOptions& o,
                                   Communicator& comm, Rng& rng, int threads) {
  if (comm.size() == 1) return dpstats::q_range(X, o, rng);
  return ranked_q_range(X, n, o, comm, rng, threads);
}

std::optional<RangeResult> q_range(const AffineRows& X, std::int64_t n, const RangeOptions& o,
                                   Communicator& comm, Rng& rng, int threads) {
  if (comm.size() > 1) return ranked_q_range(X, n, o, comm, rng, threads);
  const auto d = static_cast<std::size_t>(X.cols());
  auto r = dpstats::q_range(X, o, q_range_coordinate_budget(o, d), rng, 1);
  if (r) r->entry = q_range_entry(o, d);
  return r;
}

namespace {

// q_range-ht over ranks on a matrix's rows or a view's (copy_row(i, out) writes local row i).
template <class Rows, class CopyRow>
std::optional<Vector> ranked_q_range_ht(const Rows& X, CopyRow copy_row, std::int64_t n,
                                        const RangeHtOptions& o, Communicator& comm, Rng& rng,
                                        int threads) {
  if (comm.size() == 1) {
    const auto r = dpstats::q_range_ht(X, o, rng);
    if (!r) return std::nullopt;
    return r->centre;
  }
  const int m = q_range_ht_partitions(o);
  const Eigen::Index d = X.cols();
  const RangeOptions part = q_range_ht_part_options(o);
  // Rank 0 draws the partition of the n global rows (what one process draws first); each rank
  // keeps the parts of its own rows.
  const std::vector<int> all = on_root(comm, [&] { return q_range_ht_parts(n, o, rng); });
  const std::int64_t offset = shard_rows(comm, X.rows()).offset;
  const auto rows = rows_of_parts(all, m, offset, X.rows());
  // Every part's occupied bins, as m·d coordinates, merged exactly in one exchange.
  RangeBins local;
  all_or_none(comm, [&] {
    RowMatrix Y;
    for (const auto& r : rows) {
      Y.resize(static_cast<Eigen::Index>(r.size()), d);
      for (std::size_t k = 0; k < r.size(); ++k)
        copy_row(static_cast<Eigen::Index>(r[k]), Y.row(static_cast<Eigen::Index>(k)).data());
      RangeBins b = q_range_bins(Y, part.sigma, threads);
      for (auto& c : b) local.push_back(std::move(c));
    }
  });
  const RangeBins bins = merge(comm, local);
  // [centre] or nothing when every part abstained: the parts' releases in part order, then the
  // median, on rank 0.
  const Vector centre = on_root(comm, [&] {
    const EpsilonDelta per = q_range_coordinate_budget(part, static_cast<std::size_t>(d));
    std::vector<Vector> centres;
    int failed = 0;
    for (int l = 0; l < m; ++l) {
      const RangeBins one(bins.begin() + static_cast<std::ptrdiff_t>(l) * d,
                          bins.begin() + static_cast<std::ptrdiff_t>(l + 1) * d);
      const auto r = q_range_release(one, n * (l + 1) / m - n * l / m, part, per, rng);
      if (r) {
        centres.push_back(r->centre);
      } else {
        ++failed;
      }
    }
    const auto r = q_range_ht_median(centres, failed, o, d);
    return r ? r->centre : Vector();
  });
  if (centre.size() == 0) return std::nullopt;
  return centre;
}

}  // namespace

std::optional<Vector> q_range_ht(const ConstMatrixRef& X, std::int64_t n,
                                 const RangeHtOptions& o, Communicator& comm, Rng& rng,
                                 int threads) {
  const auto copy_row = [&](Eigen::Index i, double* out) {
    std::copy(X.row(i).data(), X.row(i).data() + X.cols(), out);
  };
  return ranked_q_range_ht(X, copy_row, n, o, comm, rng, threads);
}

std::optional<Vector> q_range_ht(const AffineRows& X, std::int64_t n, const RangeHtOptions& o,
                                 Communicator& comm, Rng& rng, int threads) {
  const auto copy_row = [&](Eigen::Index i, double* out) { X.row(i, out); };
  return ranked_q_range_ht(X, copy_row, n, o, comm, rng, threads);
}

std::optional<ColumnUnits> units_step(const ConstMatrixRef& X, const mean_detail::AuxPlan& aux,
                                      const std::optional<std::vector<double>>& scale,
                                      double alpha, double widen, int threads, Communicator& comm,
                                      ReleaseBudget& account,
                                      Rng& rng, nlohmann::json& diag,
                                      std::optional<std::string>& abstained) {
  return mean_detail::units_step(X, aux, scale, alpha, widen, threads, account, rng, diag, abstained,
                                  comm.size() > 1 ? &comm : nullptr);
}

}  // namespace dpstats::mean_detail
