#include "dpstats/median/radius.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/mechanisms/above_threshold.hpp"
#include "dpstats/parallel.hpp"

namespace dpstats {

namespace {

double squared_distance(const ConstMatrixRef& X, Eigen::Index a, Eigen::Index b) {
  const Eigen::Index d = X.cols();
  const double* x = X.data() + a * d;
  const double* y = X.data() + b * d;
  double s = 0;
  for (Eigen::Index j = 0; j < d; ++j) {
    const double t = x[j] - y[j];
    s += t * t;
  }
  return s;
}

void check_radii(double r_min, double R) {
  check_positive(r_min, "min_radius");
  check_positive(R, "radius");
}

// Grid radius r·2^(t−1) (t is 1-based).
double grid_radius(double r_min, int t) { return std::ldexp(r_min, t - 1); }

// Uniform random permutation of {0, …, m−1} (Fisher–Yates on the secure or seeded bits).
std::vector<std::int64_t> random_permutation(std::int64_t m, RandomBits& bits) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(m));
  std::iota(p.begin(), p.end(), 0);
  for (std::int64_t i = m - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(bits.uniform_below(static_cast<std::uint64_t>(i + 1)));
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

// ‖x_a − x_b‖² for the pairs (a_i, b_i): one SIMD-cloned kernel for every radius search (the
// pairs' rows are gathered, the d coordinates vectorised).
__attribute__((target_clones("avx2", "default")))
void pair_distances(const double* X, Eigen::Index stride, Eigen::Index d, const std::int64_t* a,
                    const std::int64_t* b, std::int64_t count, double* out) {
  for (std::int64_t i = 0; i < count; ++i) {
    const double* x = X + a[i] * stride;
    const double* y = X + b[i] * stride;
    double s = 0;
    for (Eigen::Index j = 0; j < d; ++j) {
      const double t = x[j] - y[j];
      s += t * t;
    }
    out[i] = s;
  }
}

// #{s : ‖x_i − x_{p[(i − begin)·k + s]}‖² <= r2} summed over rows i in [begin, end).
__attribute__((target_clones("avx2", "default")))
std::int64_t count_within(const double* X, Eigen::Index stride, Eigen::Index d, std::int64_t begin,
                          std::int64_t end, const std::int64_t* p, int k, double r2) {
  std::int64_t hits = 0;
  for (std::int64_t i = begin; i < end; ++i) {
    const double* x = X + i * stride;
    for (int s = 0; s < k; ++s) {
      const double* y = X + p[(i - begin) * k + s] * stride;
      double sum = 0;
      for (Eigen::Index j = 0; j < d; ++j) {
        const double t = x[j] - y[j];
        sum += t * t;
      }
      hits += sum <= r2;
    }
  }
  return hits;
}

// The bins of one permutation's m pairs (S_i, S_perm[i]): bins[t] counts the pairs whose first
// grid radius covering them is t (t = T: beyond the grid).
std::vector<std::int64_t> pair_bins(const RowMatrix& S, const std::vector<std::int64_t>& perm,
                                    const std::vector<double>& grid2) {
  const auto m = static_cast<std::int64_t>(perm.size());
  std::vector<std::int64_t> a(static_cast<std::size_t>(m));
  std::iota(a.begin(), a.end(), 0);
  std::vector<double> d2(static_cast<std::size_t>(m));
  pair_distances(S.data(), S.outerStride(), S.cols(), a.data(), perm.data(), m, d2.data());
  std::vector<std::int64_t> bins(grid2.size() + 1, 0);
  for (double v : d2)
    ++bins[static_cast<std::size_t>(std::lower_bound(grid2.begin(), grid2.end(), v) - grid2.begin())];
  return bins;
}

// The rows ids[0..m) of the dataset spread over the shard's ranks, in that order, on rank 0 (an
// empty matrix elsewhere): each rank sends (position, row) records of its own rows among the ids
// to rank 0. Rank 0 sees those rows (docs/guide.md, "Running on a cluster": the trust model).
RowMatrix gather_on_root(const ConstMatrixRef& X, const std::vector<std::int64_t>& ids,
                         const RowShard& shard) {
  Communicator& comm = comm_or_single(shard.comm);
  const Eigen::Index d = X.cols();
  const auto m = static_cast<Eigen::Index>(ids.size());
  if (comm.size() == 1) {
    RowMatrix S(m, d);
    for (Eigen::Index i = 0; i < m; ++i) S.row(i) = X.row(ids[static_cast<std::size_t>(i)]);
    return S;
  }
  std::vector<double> records;
  for (Eigen::Index i = 0; i < m; ++i) {
    const std::int64_t local = ids[static_cast<std::size_t>(i)] - shard.offset;
    if (local < 0 || local >= X.rows()) continue;
    records.push_back(static_cast<double>(i));  // exact: m < 2^53
    records.insert(records.end(), X.row(local).data(), X.row(local).data() + d);
  }
  std::vector<Bytes> send(static_cast<std::size_t>(comm.size()));
  send[0] = to_bytes(records);
  const auto got = comm.alltoall(send);
  if (comm.rank() != 0) return RowMatrix(0, d);
  RowMatrix S(m, d);
  for (const auto& bytes : got) {
    const auto v = from_bytes<std::vector<double>>(bytes);
    const auto width = static_cast<std::size_t>(d) + 1;  // position, then the row
    for (std::size_t p = 0; p + width <= v.size(); p += width)
      S.row(static_cast<Eigen::Index>(v[p])) = Eigen::Map<const Vector>(v.data() + p + 1, d).transpose();
  }
  return S;
}

// The first rows of `parts` parts of [begin, end) with about equal pair counts (row i owns the
// n − 1 − i pairs (i, l > i)); cut.back() = end.
std::vector<std::int64_t> pair_cuts(std::int64_t n, std::int64_t begin, std::int64_t end,
                                    std::size_t parts) {
  // Pairs owned by the rows before i.
  auto before = [n](std::int64_t i) {
    return static_cast<double>(i) * (static_cast<double>(n) - 0.5 * static_cast<double>(i + 1));
  };
  const double first = before(begin), pairs = before(end) - first;
  std::vector<std::int64_t> cut = {begin};
  for (std::int64_t i = begin, p = 1; i < end && p < static_cast<std::int64_t>(parts); ++i) {
    if (before(i) - first >= pairs * static_cast<double>(p) / static_cast<double>(parts))
      cut.push_back(i), ++p;
  }
  while (cut.size() <= parts) cut.push_back(end);
  return cut;
}

// RadiusFinder's bins (see radius_finder) of the pairs owned by the rows [begin, end): those rows
// cut into `threads` parts of about equal pair counts, each part binning into its own n·(T + 1)
// counts, merged by integer addition: the same bins for any cut of [0, n) into ranges and parts.
std::vector<std::int32_t> pair_bins_rows(const ConstMatrixRef& X, const std::vector<double>& r2,
                                         std::int64_t begin, std::int64_t end, int threads) {
  const auto n = static_cast<std::int64_t>(X.rows());
  const auto width = r2.size() + 1;
  const auto parts = static_cast<std::size_t>(
      std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(1, (end - begin) / 256)));
  const std::vector<std::int64_t> cut = pair_cuts(n, begin, end, parts);
  std::vector<std::vector<std::int32_t>> bins(parts);
  parallel_tasks(parts, threads, [&](std::size_t p) {
    std::vector<std::int32_t> own(static_cast<std::size_t>(n) * width, 0);
    for (std::int64_t i = cut[p]; i < cut[p + 1]; ++i) {
      ++own[static_cast<std::size_t>(i) * width];  // self, at b = 0
      for (std::int64_t l = i + 1; l < n; ++l) {
        const double d2 = squared_distance(X, i, l);
        const auto b = static_cast<std::size_t>(std::lower_bound(r2.begin(), r2.end(), d2) - r2.begin());
        ++own[static_cast<std::size_t>(i) * width + b];
        ++own[static_cast<std::size_t>(l) * width + b];
      }
    }
    bins[p] = std::move(own);
  });
  for (std::size_t p = 1; p < parts; ++p)
    for (std::size_t c = 0; c < bins[0].size(); ++c) bins[0][c] += bins[p][c];
  return std::move(bins[0]);
}

// Every rank's rows, in rank order (the global row order), on every rank (RadiusFinder pairs
// every row with every other: its O(n²d) work bounds n, so the n·d words are cheap beside it).
RowMatrix gather_everywhere(const ConstMatrixRef& X, Communicator& comm) {
  const Eigen::Index d = X.cols();
  const RowMatrix mine = X;  // contiguous rows
  const auto got = comm.allgather(to_bytes(std::vector<double>(mine.data(), mine.data() + mine.size())));
  std::vector<double> all;
  for (const auto& bytes : got) {
    const auto v = from_bytes<std::vector<double>>(bytes);
    all.insert(all.end(), v.begin(), v.end());
  }
  RowMatrix A(static_cast<Eigen::Index>(all.size()) / d, d);
  std::copy(all.begin(), all.end(), A.data());
  return A;
}

// RadiusFinder's bins over every row: one process bins them all; on P ranks every rank bins the
// pairs of its P-th of [0, n) (cut by pair counts, not by where the rows live) and the bins are
// added exactly (allreduce_sum).
std::vector<std::int32_t> pair_bins_all(const ConstMatrixRef& X, const std::vector<double>& r2,
                                        int threads, const RowShard& shard) {
  Communicator& comm = comm_or_single(shard.comm);
  if (comm.size() == 1) return pair_bins_rows(X, r2, 0, X.rows(), threads);
  const RowMatrix all = gather_everywhere(X, comm);
  const auto n = static_cast<std::int64_t>(all.rows());
  const auto cut = pair_cuts(n, 0, n, static_cast<std::size_t>(comm.size()));
  const auto r = static_cast<std::size_t>(comm.rank());
  const std::vector<std::int32_t> own = pair_bins_rows(all, r2, cut[r], cut[r + 1], threads);
  std::vector<std::int64_t> words(own.begin(), own.end());
  comm.allreduce_sum(words);
  return {words.begin(), words.end()};  // each count <= n < 2^31
}

// What a radius search releases (trivially copyable: rank 0 broadcasts it).
struct PermutedOutcome {
  double r_hat = 0;
  int step = 0;
  bool fell_back = false;
};

// The search on the gathered subsample S (rank 0): the k permutations' pair distances binned on
// the grid (one task per permutation, bins merged by integer addition), then AboveThreshold over
// the cumulative counts.
PermutedOutcome permuted_search(const RowMatrix& S, const std::vector<std::vector<std::int64_t>>& perms,
                                double r_min, double R, int T, double epsilon, int threads, Rng& rng) {
  const auto k = static_cast<int>(perms.size());
  std::vector<double> grid2(static_cast<std::size_t>(T));
  for (int t = 1; t <= T; ++t) grid2[static_cast<std::size_t>(t - 1)] = std::pow(grid_radius(r_min, t), 2);
  std::vector<std::vector<std::int64_t>> bins(static_cast<std::size_t>(k));
  parallel_tasks(static_cast<std::size_t>(k), threads,
                 [&](std::size_t l) { bins[l] = pair_bins(S, perms[l], grid2); });
  AboveThreshold at(kFastRadiusThreshold * static_cast<double>(S.rows()), kPermutedRadiusSensitivity,
                    epsilon, rng);
  std::int64_t hits = 0;
  for (int t = 1; t <= T; ++t) {
    for (const auto& b : bins) hits += b[static_cast<std::size_t>(t - 1)];
    if (at.query(static_cast<double>(hits) / k)) return {grid_radius(r_min, t), t, false};
  }
  return {R, 0, true};
}

struct StepCount {
  bool above = false;
  std::int64_t pairs = 0;  // distances computed
};

// One grid step of Alg. 2: rows in blocks of kBlock, each block's n·k partners drawn in row order
// (i, then s) from one bit reader, its hits counted on up to `threads` threads (per-part counts,
// summed: the same count for any thread count). After each block, the step's outcome is settled
// when even the extreme completions agree: `q` above at hits/k (every later pair a miss) or not
// above at (hits + k·rows left)/k (every later pair a hit). The block size is fixed, so the draws
// and the decision do not depend on `threads`.
StepCount fast_radius_step(const ConstMatrixRef& X, double r2, int k,
                           const AboveThreshold::Pending& q, Rng& rng, int threads,
                           std::vector<std::int64_t>& partners) {
  constexpr std::int64_t kBlock = 1024;
  const auto n = static_cast<std::int64_t>(X.rows());
  const auto kk = static_cast<std::int64_t>(k);
  RandomBits bits(rng);
  StepCount c;
  std::int64_t hits = 0;
  for (std::int64_t begin = 0; begin < n; begin += kBlock) {
    const std::int64_t end = std::min(n, begin + kBlock);
    partners.resize(static_cast<std::size_t>((end - begin) * kk));
    for (auto& p : partners) p = static_cast<std::int64_t>(bits.uniform_below(static_cast<std::uint64_t>(n)));
    std::vector<std::int64_t> part(static_cast<std::size_t>(std::max(threads, 1)), 0);
    parallel_ranges(end - begin, threads, 256, [&](int p, std::int64_t b, std::int64_t e) {
      part[static_cast<std::size_t>(p)] =
          count_within(X.data(), X.outerStride(), X.cols(), begin + b, begin + e,
                       partners.data() + b * kk, k, r2);
    });
    for (auto h : part) hits += h;
    c.pairs += (end - begin) * kk;
    const double lo = static_cast<double>(hits) / k;
    const double hi = static_cast<double>(hits + (n - end) * kk) / k;
    if (q.above(lo)) return c.above = true, c;
    if (!q.above(hi)) return c;
  }
  return c;  // not reached: at the last block lo = hi
}

}  // namespace

// FastRadius draws its partners as it goes (their number is decided by the noise): the
// AboveThreshold run is (epsilon, delta)-DP by KLTY Lemma 5 (docs/proofs/median.md §2).
LedgerEntry fast_radius_ledger(double epsilon, double delta) {
  check_epsilon(epsilon);
  check_delta_positive(delta);
  return proved_entry(PrivacyLoss::approximate(epsilon, delta), "KLTY Lemma 5, docs/proofs/median.md §2",
                      "fast_radius (KLTY Alg. 2)",
                      {AboveThreshold::entry(kFastRadiusSensitivity, epsilon, false,
                                             "fast_radius queries")});
}
LedgerEntry permuted_radius_ledger(double epsilon) {
  return AboveThreshold::entry(kPermutedRadiusSensitivity, epsilon, false,
                               "fast_radius (permutation design)");
}
LedgerEntry radius_finder_ledger(double epsilon) {
  return AboveThreshold::entry(kRadiusFinderSensitivity, epsilon, false,
                               "radius_finder (HSU24 Alg. 1)");
}

int fast_radius_steps(double r_min, double R) {
  check_radii(r_min, R);
  return static_cast<int>(std::ceil(std::log2(R / r_min)));
}

int fast_radius_partners(int steps, double delta) {
  check_delta_positive(delta);
  require(steps >= 1, "steps must be >= 1");
  return static_cast<int>(std::ceil(3.0 * std::log(4.0 * steps / delta)));
}

RadiusResult fast_radius(const ConstMatrixRef& X, double r_min, double R, double epsilon,
                         double delta, Rng& rng, int threads) {
  check_data(X);
  check_epsilon(epsilon);
  check_delta_positive(delta);
  const int T = fast_radius_steps(r_min, R);
  RadiusResult r;
  r.ledger = fast_radius_ledger(epsilon, delta);
  r.grid_size = std::max(T, 0);
  if (T <= 0) {  // nothing to search (docs/proofs/median.md §2)
    r.r_hat = R;
    r.fell_back = true;
    return r;
  }
  const int k = fast_radius_partners(T, delta);
  const auto n = static_cast<std::int64_t>(X.rows());
  AboveThreshold at(kFastRadiusThreshold * static_cast<double>(n), kFastRadiusSensitivity, epsilon,
                    rng);
  std::vector<std::int64_t> partners;
  for (int t = 1; t <= T; ++t) {
    const double rt = grid_radius(r_min, t);
    // The step's outcome is decided as soon as bounds on hits settle it (docs/proofs/median.md
    // §2, "Early decision"): the query noise is drawn first, then fresh partners S_t^(i) for
    // rows i = 0, 1, … in blocks, until the noisy comparison is fixed whatever the rest are.
    const AboveThreshold::Pending q = at.next_query();
    const StepCount c = fast_radius_step(X, rt * rt, k, q, rng, threads, partners);
    r.distance_evaluations += c.pairs;
    if (at.record(q, c.above)) {
      r.r_hat = rt;
      r.step = t;
      return r;
    }
  }
  r.r_hat = R;
  r.fell_back = true;
  return r;
}

RadiusResult fast_radius_permuted(const ConstMatrixRef& X, double r_min, double R, double epsilon,
                                  Rng& rng, const PermutedRadiusOptions& o) {
  check_data(X);
  check_epsilon(epsilon);
  require(o.permutations >= 1, fmt::format("permutations must be >= 1, got {}", o.permutations));
  require(o.subsample >= 1, fmt::format("subsample must be >= 1, got {}", o.subsample));
  const int T = fast_radius_steps(r_min, R);
  RadiusResult r;
  r.ledger = permuted_radius_ledger(epsilon);
  r.grid_size = std::max(T, 0);
  if (T <= 0) {
    r.r_hat = R;
    r.fell_back = true;
    return r;
  }
  Communicator& comm = comm_or_single(o.shard.comm);
  const std::int64_t n = total_rows(X, o.shard);
  const std::int64_t m = std::min(n, o.subsample);
  const int k = o.permutations;
  // Rank 0 draws the subsample's global ids and the k permutations (nothing depends on the data);
  // the subsample's rows are then gathered on rank 0, which searches.
  std::vector<std::vector<std::int64_t>> perms;
  const auto ids = on_root(comm, [&] {
    RandomBits bits(rng);
    // Data-independent subsample: the first m entries of a partial Fisher–Yates shuffle.
    std::vector<std::int64_t> rows(static_cast<std::size_t>(n));
    std::iota(rows.begin(), rows.end(), 0);
    if (m < n)
      for (std::int64_t i = 0; i < m; ++i) {
        const auto j = i + static_cast<std::int64_t>(bits.uniform_below(static_cast<std::uint64_t>(n - i)));
        std::swap(rows[static_cast<std::size_t>(i)], rows[static_cast<std::size_t>(j)]);
      }
    rows.resize(static_cast<std::size_t>(m));
    for (int l = 0; l < k; ++l) perms.push_back(random_permutation(m, bits));
    return rows;
  });
  const RowMatrix S = gather_on_root(X, ids, o.shard);
  r.distance_evaluations = m * k;
  const PermutedOutcome out = on_root(comm, [&] {
    return permuted_search(S, perms, r_min, R, T, epsilon, o.threads, rng);
  });
  r.r_hat = out.r_hat;
  r.step = out.step;
  r.fell_back = out.fell_back;
  return r;
}

namespace {

// RadiusFinder's selection (rank 0): AboveThreshold over Q_j, the mean of the m largest of the
// rows' counts within r_j (the prefix sums of each row's bins).
PermutedOutcome radius_finder_search(const std::vector<std::int32_t>& bins, std::int64_t n,
                                     std::int64_t m, int T, double r_min, double epsilon,
                                     double beta, Rng& rng) {
  const auto width = static_cast<std::size_t>(T) + 1;
  // counts[j*n + i] = #{l : ||x_i − x_l|| <= r_j}: the prefix sums of row i's bins.
  std::vector<std::int32_t> counts(static_cast<std::size_t>(n) * T);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int32_t running = 0;
    for (int j = 0; j < T; ++j) {
      running += bins[static_cast<std::size_t>(i) * width + static_cast<std::size_t>(j)];
      counts[static_cast<std::size_t>(j * n + i)] = running;
    }
  }
  const double theta =
      static_cast<double>(m) + 18.0 / epsilon * std::log(2.0 * T / beta);
  AboveThreshold at(theta, kRadiusFinderSensitivity, epsilon, rng);
  std::vector<std::int32_t> c(static_cast<std::size_t>(n));
  for (int j = 0; j < T; ++j) {
    std::copy_n(counts.begin() + j * n, n, c.begin());
    std::nth_element(c.begin(), c.begin() + (m - 1), c.end(), std::greater<>());
    const double q = static_cast<double>(std::accumulate(c.begin(), c.begin() + m, std::int64_t{0})) /
                     static_cast<double>(m);
    if (at.query(q)) return {grid_radius(r_min, j + 1), j + 1, false};
  }
  return {grid_radius(r_min, T), 0, true};  // HSU24: r_J, flagged
}

}  // namespace

RadiusResult radius_finder(const ConstMatrixRef& X, double r_min, double R, double epsilon,
                           double beta, Rng& rng, double gamma, int threads,
                           const RowShard& shard) {
  check_data(X);
  check_epsilon(epsilon);
  check_radii(r_min, R);
  require(beta > 0 && beta < 1, fmt::format("beta must be in (0, 1), got {}", beta));
  require(gamma >= 0.5 && gamma <= 1, fmt::format("gamma must be in [0.5, 1], got {}", gamma));
  const std::int64_t n = total_rows(X, shard);
  const int J = std::max(0, static_cast<int>(std::floor(std::log2(2 * R / r_min))));
  const int T = J + 1;
  RadiusResult r;
  r.grid_size = T;
  r.ledger = radius_finder_ledger(epsilon);
  const auto m = static_cast<std::int64_t>(std::ceil(gamma * static_cast<double>(n) - 1e-9));
  // bins[i*(T+1) + b] = #{l : b is the first grid index with ||x_i − x_l||² <= r_b²} (b = T:
  // beyond the grid; self included at b = 0). Each pair's distance is computed once and binned
  // for both rows: O(n² log T) instead of sorting every row's n distances.
  std::vector<double> r2(static_cast<std::size_t>(T));
  for (int j = 0; j < T; ++j) r2[static_cast<std::size_t>(j)] = std::pow(grid_radius(r_min, j + 1), 2);
  const std::vector<std::int32_t> bins = pair_bins_all(X, r2, threads, shard);
  r.distance_evaluations = n * (n - 1) / 2;
  const PermutedOutcome out = on_root(comm_or_single(shard.comm), [&] {
    return radius_finder_search(bins, n, m, T, r_min, epsilon, beta, rng);
  });
  r.r_hat = out.r_hat;
  r.step = out.step;
  r.fell_back = out.fell_back;
  return r;
}

}  // namespace dpstats
