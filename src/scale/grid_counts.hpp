// The scale layer's data pass: for every column at once, the counts of values below every point
// of the column's grid, in one pass over the rows (threads across rows, one set of integer bins
// per part, added exactly), with no per-column copy or sort (issue 27 item 6). Internal to
// src/scale.
//
// A value's bin is #{grid points <= x}, so that below[i] = #{x < p_i} is a prefix sum of the bins.
// The log grid's bin is read off the double's bits (sign, exponent, top mantissa bits; exact for
// a power-of-two per_octave) and the linear grid's by arithmetic; both are then corrected against
// the stored points, so the counts are exactly those of a sort and merge for any grid.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/data/matrix.hpp"
#include "dpstats/parallel.hpp"

namespace dpstats::scale_detail {

// The magnitude of x (not NaN) clamped to DBL_MAX, sign kept: clamp(x, -DBL_MAX, DBL_MAX) on
// the bits, which the compiler keeps in SIMD registers (a double min is a branch to it).
inline double clamp_magnitude(double x) {
  const auto bits = std::bit_cast<std::int64_t>(x);
  const std::int64_t sign = bits & std::numeric_limits<std::int64_t>::min();
  const std::int64_t magnitude = bits ^ sign, top = 0x7fefffffffffffff;  // DBL_MAX
  return std::bit_cast<double>((magnitude < top ? magnitude : top) | sign);
}

// dyadic_grid's plan: h the largest power of two <= the step (upper - lower) / (points - 1), and
// the points k h for k = first..last (first = floor(lower / h), last = ceil(upper / h)), exact
// when |k| < 2^52, h > 2^-1000 and first h, last h are finite; otherwise (exact false)
// dyadic_grid is linear_grid's.
struct DyadicSteps {
  double h = 0, first = 0, last = 0;
  bool exact = false;
};
DyadicSteps dyadic_steps(double lower, double upper, std::size_t points);

class GridIndex {
 public:
  static constexpr std::uint64_t kTopBits = 0x7fefffffffffffff;  // DBL_MAX
  // log_grid(per_octave, nonnegative) with its bit lookup.
  static GridIndex log(int per_octave, bool nonnegative);
  // Any strictly increasing finite grid (linear_grid's): arithmetic lookup between its ends.
  static GridIndex points(std::vector<double> points);
  // A geometric grid, e.g. base·2^(i/per_octave), i = 0, 1, ... (any strictly increasing grid
  // of positive normal points): lookup from a table of the values' top bits and one comparison
  // (Geometric below); a grid too fine for the table (over 2^20 buckets) is searched.
  static GridIndex geometric(std::vector<double> points);
  // dyadic_grid(lower, upper, points): exact points p_0 + k h, looked up and read with no stored
  // point (a refine grid holds ~2^16 of them per column; grid() is not available).
  static GridIndex dyadic(double lower, double upper, std::size_t points);

  // The stored points (every grid but a dyadic one).
  std::span<const double> grid() const;
  std::size_t size() const { return size_; }
  std::size_t bins() const { return size_ + 1; }
  double point(std::size_t i) const {
    return points_.empty() ? (first_ + static_cast<double>(i)) * step_ : points_[i];
  }
  double front() const { return point(0); }
  double back() const { return point(size_ - 1); }
  // #{grid points <= x}, in [0, grid().size()]: the guess corrected against the stored points.
  [[gnu::always_inline]] std::size_t bin(double x) const {
    if (exact_log_) return exact_log_bin(x);
    if (dyadic_) return dyadic_bin(x);
    if (geometric_) return geometric_bin(x);
    std::size_t b = log_ ? log_guess(x) : linear_guess(x);
    const std::size_t n = points_.size();
    if (b > n) b = n;
    if (b > 0 && points_[b - 1] > x) {
      --b;
      if (b > 0 && points_[b - 1] > x) return search(x);
    } else if (b < n && points_[b] <= x) {
      ++b;
      if (b < n && points_[b] <= x) return search(x);
    }
    return b;
  }
  // The log grid with per_octave m = 2^s: its points 2^k (1 + j/m) are exact doubles, so the bin
  // is read off the bits, with no correction and no branch (a value's sign is as likely as not;
  // the data pass computes a row's bins in SIMD registers, grid_counts below). With b the bits
  // of |x| and v = 2^63 + b for x > 0, 2^63 - b for x < 0 (-0 made +0 first), the points' v are
  // the multiples of 2^(52 - s) outside (2^63 - 2^52, 2^63 + 2^52) and 2^63 itself, so
  // t = v >> (52 - s) counts them: for a normal x > 0, q = t - 2^(11 + s) - m indexes the point
  // p_q <= x < p_{q+1}; for a normal x < 0, 2^(11 + s) - t = ceil(b / 2^(52 - s)) (a point's b
  // is a multiple). A subnormal's t falls in the gap around 0 and is clamped to 0's neighbour
  // bins; DBL_MAX is the one point that is not of that form (and +/-inf land with +/-DBL_MAX).
  struct ExactLog {
    std::int64_t shift = 0, top = 0, m = 0, zero = 0;  // 52 - s, 2^(11 + s), m, 0's index
    std::int64_t keep_below = 0;                       // -1, or 0 on a nonnegative grid
    [[gnu::always_inline]] std::int64_t operator()(double x) const {
      const std::uint64_t u = std::bit_cast<std::uint64_t>(x + 0.0);  // -0 -> +0
      const std::uint64_t negative = u >> 63, mask = 0 - negative;
      const std::uint64_t b = u & ~(std::uint64_t{1} << 63);
      const std::uint64_t v = (std::uint64_t{1} << 63) + ((b ^ mask) + negative);
      const std::int64_t origin = static_cast<std::int64_t>(v >> shift) - top - m;
      // x > 0: negatives, 0, p_0..p_q (, DBL_MAX); a subnormal: just above 0
      const std::int64_t a0 = zero + 2 + origin, a1 = zero + 1;
      const std::int64_t above = (a0 > a1 ? a0 : a1) + static_cast<std::int64_t>(u == kTopBits);
      // x < 0: #{r : p_r >= |x|} = P - 1 - q + [x is a point]; a subnormal: just below 0
      const std::int64_t b0 = zero + origin + 2 * m;
      const std::int64_t below = (b0 < zero ? b0 : zero) & keep_below;
      return above ^ ((above ^ below) & static_cast<std::int64_t>(mask));
    }
  };
  // The same on a nonnegative grid (keep_below 0, zero 0) in fewer instructions: a negative x's
  // bin is 0, and for x >= +0, v >> shift = top + (bits >> shift), so the bin is
  // max(2 + (bits >> shift) - m, 1) (+1 at DBL_MAX), as operator() computes it.
  struct ExactLogNonnegative {
    std::int64_t shift = 0, m = 0;
    [[gnu::always_inline]] std::int64_t operator()(double x) const {
      const std::uint64_t u = std::bit_cast<std::uint64_t>(x + 0.0);  // -0 -> +0
      const std::int64_t a0 = static_cast<std::int64_t>(u >> shift) + 2 - m;
      const std::int64_t above = (a0 > 1 ? a0 : 1) + static_cast<std::int64_t>(u == kTopBits);
      return static_cast<std::int64_t>(u) < 0 ? 0 : above;
    }
  };
  bool is_exact_log() const { return exact_log_; }
  bool is_nonnegative() const { return nonnegative_; }
  ExactLogNonnegative exact_log_nonnegative() const { return {exact_.shift, exact_.m}; }
  const ExactLog& exact_log() const { return exact_; }
  // The geometric grid's lookup, exact with one comparison: a value c clamped to [lo, hi] falls
  // in the bucket of the doubles sharing the bits above `shift` (buckets narrower than the
  // grid's spacing, so that each holds at most one point); table[bucket - first] is the count
  // of points below the bucket, and c's bin is that count plus [p_count <= c] (points padded
  // with +inf). Every step but the two loads has no branch, so that a pass computes a row's
  // buckets in SIMD registers (geometric_rows below); bin(x) == geometric_bin(x).
  struct Geometric {
    double lo = 0, hi = 0;  // the ends of the buckets the table covers (0 <= lo, hi <= DBL_MAX)
    std::uint64_t shift = 0, first = 0;
    std::span<const std::uint32_t> table;
    const double* points = nullptr;  // the points, then +inf
    [[gnu::always_inline]] double clamp(double x) const {
      const double c = x > lo ? x : lo;
      return c < hi ? c : hi;
    }
    [[gnu::always_inline]] std::uint64_t bucket(double c) const {
      return (std::bit_cast<std::uint64_t>(c) >> shift) - first;
    }
    [[gnu::always_inline]] std::size_t bin(double x) const {
      const double c = clamp(x);
      const std::uint32_t below = table[bucket(c)];
      return below + static_cast<std::size_t>(points[below] <= c);
    }
  };
  bool is_geometric() const { return geometric_; }
  Geometric geometric_lookup() const {
    return {geo_lo_, geo_hi_, geo_shift_, geo_first_, geo_table_, padded_.data()};
  }

 private:
  // A dyadic grid's points p_0 + k h are exact, so t = fl(x - p_0) / h decides: fl is monotone,
  // so a non-integer t lies strictly between the same multiples as x - p_0; an integer t = k needs
  // one exact comparison with p_k = p_0 + k h. Values outside the grid (most of them: the grid is
  // narrow) clamp t and are then set to 0 or N, with no branch.
  [[gnu::always_inline]] std::size_t dyadic_bin(double x) const {
    const double t = (x - lower_) * per_step_;
    const double clamped = std::min(std::max(t, 0.0), last_index_);
    const auto k = static_cast<std::int64_t>(clamped);  // floor; below 2^53
    const double kd = static_cast<double>(k);
    std::size_t b =
        static_cast<std::size_t>(k + 1) - (t == kd && x < lower_ + kd * step_ ? 1 : 0);
    b = x < lower_ ? 0 : b;
    const std::size_t beyond = 0 - static_cast<std::size_t>(x >= upper_);  // as a mask: no branch
    return b ^ ((b ^ size_) & beyond);
  }
  [[gnu::always_inline]] std::size_t exact_log_bin(double x) const {
    return static_cast<std::size_t>(exact_(x));
  }
  // Otherwise a guess within one point of the bin, except at the grids' edges, at points that are
  // not exact or merged, or far outside a linear grid's range; a binary search then finds it.
  [[gnu::always_inline]] std::size_t log_guess(double x) const {
    const double a = std::fabs(x);
    if (a < 0x1p-1022) {
      if (x >= 0) return zero_ + 1;
      return nonnegative_ ? 0 : zero_;
    }
    const std::uint64_t b = std::bit_cast<std::uint64_t>(a);
    const std::uint64_t exponent = b >> 52, fraction = b & ((std::uint64_t{1} << 52) - 1);
    const std::uint64_t q = (exponent - 1) * static_cast<std::uint64_t>(m_) +
                            ((fraction * static_cast<std::uint64_t>(m_)) >> 52);
    if (x > 0) return zero_ + 2 + q;
    if (nonnegative_) return 0;
    return positives_ - 1 - q;
  }
  [[gnu::always_inline]] std::size_t linear_guess(double x) const {
    if (!(x >= lower_)) return 0;
    const double t = (x - lower_) * per_step_ + 1;  // NaN for an overflowing span (inf · 0)
    return !(t < static_cast<double>(points_.size())) ? points_.size()
                                                      : static_cast<std::size_t>(t);
  }
  [[gnu::always_inline]] std::size_t geometric_bin(double x) const {
    return geometric_lookup().bin(x);
  }
  std::size_t search(double x) const;

  std::vector<double> points_;
  std::size_t size_ = 0;  // the points, stored or not
  bool log_ = false, exact_log_ = false;
  // log: per_octave m = 2^shift when exact (else multiply), zero's index, positive points P.
  int m_ = 0, shift_ = -1;
  ExactLog exact_;
  std::size_t zero_ = 0, positives_ = 0;
  bool nonnegative_ = false;
  // linear: bin ~ (x - lower) * per_step + 1
  double lower_ = 0, per_step_ = 0;
  // geometric (Geometric above): the table's buckets and the points padded with +inf
  bool geometric_ = false;
  double geo_lo_ = 0, geo_hi_ = 0;
  std::uint64_t geo_shift_ = 0, geo_first_ = 0;
  std::vector<std::uint32_t> geo_table_;
  std::vector<double> padded_;
  // dyadic: p_k = lower_ + k step_ = (first_ + k) step_, step_ a power of two, per_step_ =
  // 1 / step_ exactly; upper_ = p_{N-1}
  bool dyadic_ = false;
  double step_ = 0, last_index_ = 0, upper_ = 0, first_ = 0;
};

// counts[j][i] = #{rows r : y(j, X(r, j)) < grid_j[i]} for i < grid_j.size(), and counts[j].back()
// the rows, over this process's rows; `grids[j]` is column j's grid. One pass over X.
template <class Transform>
std::vector<std::vector<std::int64_t>> column_counts(const ConstMatrixRef& X,
                                                     std::span<const GridIndex* const> grids,
                                                     Transform y, int threads);

// The same added exactly over every rank of comm (one int64 allreduce per column, in order).
template <class Transform>
std::vector<std::vector<std::int64_t>> merged_column_counts(const ConstMatrixRef& X,
                                                            std::span<const GridIndex* const> grids,
                                                            Transform y, int threads,
                                                            Communicator& comm) {
  auto counts = column_counts(X, grids, y, threads);
  if (comm.size() > 1)
    for (auto& c : counts) comm.allreduce_sum(c);
  return counts;
}

// Two independent passes' counts from one read of the rows (column_bins_pair below), each added
// exactly over every rank of comm.
template <class T1, class T2>
std::pair<std::vector<std::vector<std::int64_t>>, std::vector<std::vector<std::int64_t>>>
merged_column_counts_pair(const ConstMatrixRef& X, std::span<const GridIndex* const> grids1, T1 y1,
                          std::span<const GridIndex* const> grids2, T2 y2, int threads,
                          Communicator& comm);

// ---- implementation of the pass ----

// Rows per part are below 2^32 (the bins are 32-bit); the parts' memory is capped by using fewer
// parts for many wide grids.
int count_parts(std::int64_t rows, std::size_t bins_per_row, int threads);

// `count` zeroed 32-bit bins on fresh anonymous pages (zero as mapped; only the pages a pass
// touches are faulted in); a pass's buffers go back to a small process-wide pool (at most
// 64 MiB kept), from which a later pass takes the smallest that holds its bins and zeroes those
// instead of faulting in fresh pages.
struct FreeBins {
  std::size_t bytes = 0;
  void operator()(std::uint32_t* p) const;
};
using BinBuffer = std::unique_ptr<std::uint32_t[], FreeBins>;
BinBuffer bin_buffer(std::size_t count);

// Rows [begin, end) on one exact log grid: each row's bins first (one loop over the columns that
// the compiler keeps in SIMD registers: the lookup has no branch), then their counts. With
// `check` (the identity transform only), the rows' finiteness check is made in the same loop: a
// cell whose exponent bits are all ones (+-inf, NaN) is counted as 0, so that its bin stays inside
// the grid, and flagged; the return value is nonzero when some cell was (the bins are then of no
// use: the caller throws).
template <bool check, class Lookup, class Transform>
[[gnu::always_inline]] inline std::uint64_t exact_log_rows(const ConstMatrixRef& X,
                                                           std::int64_t begin, std::int64_t end,
                                                           Lookup g, Transform& y,
                                                           const std::size_t* __restrict off,
                                                           std::uint32_t* __restrict b,
                                                           std::int64_t* __restrict idx) {
  constexpr std::uint64_t kExponent = 0x7ff0000000000000;
  const auto d = static_cast<std::size_t>(X.cols());
  std::uint64_t flagged = 0;
  for (std::int64_t r = begin; r < end; ++r) {
    const double* __restrict row = X.row(r).data();
    for (std::size_t j = 0; j < d; ++j) {
      double x = y(j, row[j]);
      if constexpr (check) {
        const auto u = std::bit_cast<std::uint64_t>(x);
        const std::uint64_t bad = (u & kExponent) == kExponent ? ~std::uint64_t{0} : 0;
        flagged |= bad;
        x = std::bit_cast<double>(u & ~bad);
      }
      idx[j] = static_cast<std::int64_t>(off[j]) + g(x);
    }
    for (std::size_t j = 0; j < d; ++j) ++b[idx[j]];
  }
  return flagged;
}

// The same compiled for AVX2 (four lookups per instruction), called where the CPU has it: the
// portable build keeps its baseline, and the counts are the same integers either way.
template <bool check, class Lookup, class Transform>
[[gnu::target("avx2"), gnu::noinline]] std::uint64_t exact_log_rows_avx2(
    const ConstMatrixRef& X, std::int64_t begin, std::int64_t end, Lookup g, Transform& y,
    const std::size_t* off, std::uint32_t* b, std::int64_t* idx) {
  return exact_log_rows<check>(X, begin, end, g, y, off, b, idx);
}

// Rows [begin, end) on a grid per column, most of them narrow (the refine grids, over three
// cells of the log grid): a value below or above its column's grid is counted in SIMD registers
// (bin 0 or N), and only a value inside is looked up (a row with none is passed over at once).
template <class Transform>
[[gnu::always_inline]] inline void grid_rows(const ConstMatrixRef& X, std::int64_t begin,
                                             std::int64_t end,
                                             std::span<const GridIndex* const> grids, Transform& y,
                                             const std::size_t* off, std::uint32_t* b) {
  const auto d = static_cast<std::size_t>(X.cols());
  std::vector<double> lower(d), upper(d), value(d);
  std::vector<std::int64_t> below(d, 0), above(d, 0), inside(d);
  for (std::size_t j = 0; j < d; ++j) {
    lower[j] = grids[j]->front();
    upper[j] = grids[j]->back();
  }
  const double* __restrict lo = lower.data();
  const double* __restrict hi = upper.data();
  double* __restrict v = value.data();
  std::int64_t* __restrict under = below.data();
  std::int64_t* __restrict over = above.data();
  std::int64_t* __restrict in = inside.data();
  for (std::int64_t r = begin; r < end; ++r) {
    const double* __restrict row = X.row(r).data();
    std::int64_t any = 0;
    for (std::size_t j = 0; j < d; ++j) {
      const double x = y(j, row[j]);
      const std::int64_t l = x < lo[j], h = x >= hi[j];
      v[j] = x;
      under[j] += l;
      over[j] += h;
      in[j] = 1 - l - h;
      any |= in[j];
    }
    if (any == 0) continue;
    for (std::size_t j = 0; j < d; ++j)
      if (in[j] != 0) ++b[off[j] + grids[j]->bin(v[j])];
  }
  for (std::size_t j = 0; j < d; ++j) {  // a part's rows are below 2^32 (count_parts)
    b[off[j]] += static_cast<std::uint32_t>(under[j]);
    b[off[j] + grids[j]->size()] += static_cast<std::uint32_t>(over[j]);
  }
}

template <class Transform>
[[gnu::target("avx2"), gnu::noinline]] void grid_rows_avx2(
    const ConstMatrixRef& X, std::int64_t begin, std::int64_t end,
    std::span<const GridIndex* const> grids, Transform& y, const std::size_t* off,
    std::uint32_t* b) {
  grid_rows(X, begin, end, grids, y, off, b);
}

// Rows [begin, end) on a geometric grid per column (the winsorising clips'): each row's clamped
// values and buckets first (one loop over the columns with no branch and no load but the
// column's constants, kept in SIMD registers), then each bucket's count of points below and
// the one comparison, then the counts. The columns' tables are laid out one after another with
// the bins' offsets added, and the points in the bins' layout (column j's p_i at off[j] + i,
// +inf at off[j] + size), so that the second loop reads two flat arrays.
template <class Transform>
[[gnu::always_inline]] inline void geometric_rows(const ConstMatrixRef& X, std::int64_t begin,
                                                  std::int64_t end,
                                                  std::span<const GridIndex* const> grids,
                                                  Transform& y, const std::size_t* off,
                                                  std::uint32_t* b) {
  const auto d = static_cast<std::size_t>(X.cols());
  std::vector<double> lo_v(d), hi_v(d), points_v(off[d]), value_v(d);
  std::vector<std::uint64_t> shift_v(d), start_v(d), bucket_v(d);
  std::vector<std::uint32_t> table_v, bin_v(d);
  for (std::size_t j = 0; j < d; ++j) {
    const GridIndex::Geometric g = grids[j]->geometric_lookup();
    lo_v[j] = g.lo;
    hi_v[j] = g.hi;
    shift_v[j] = g.shift;
    start_v[j] = table_v.size() - g.first;  // wraps: bucket + start is the index in table_v
    for (std::uint32_t below : g.table)
      table_v.push_back(static_cast<std::uint32_t>(off[j]) + below);
    std::copy(g.points, g.points + grids[j]->size() + 1,
              points_v.begin() + static_cast<std::ptrdiff_t>(off[j]));
  }
  const double* __restrict lo = lo_v.data();
  const double* __restrict hi = hi_v.data();
  const std::uint64_t* __restrict shift = shift_v.data();
  const std::uint64_t* __restrict start = start_v.data();
  const std::uint32_t* __restrict table = table_v.data();
  const double* __restrict points = points_v.data();
  double* __restrict v = value_v.data();
  std::uint64_t* __restrict bucket = bucket_v.data();
  std::uint32_t* __restrict bin = bin_v.data();
  for (std::int64_t r = begin; r < end; ++r) {
    const double* __restrict row = X.row(r).data();
    for (std::size_t j = 0; j < d; ++j) {
      const double x = y(j, row[j]);
      const double c0 = x > lo[j] ? x : lo[j];
      const double c = c0 < hi[j] ? c0 : hi[j];
      v[j] = c;
      bucket[j] = (std::bit_cast<std::uint64_t>(c) >> shift[j]) + start[j];
    }
    for (std::size_t j = 0; j < d; ++j) {
      const std::uint32_t below = table[bucket[j]];
      bin[j] = below + static_cast<std::uint32_t>(points[below] <= v[j]);
    }
    for (std::size_t j = 0; j < d; ++j) ++b[bin[j]];
  }
}

template <class Transform>
[[gnu::target("avx2"), gnu::noinline]] void geometric_rows_avx2(
    const ConstMatrixRef& X, std::int64_t begin, std::int64_t end,
    std::span<const GridIndex* const> grids, Transform& y, const std::size_t* off,
    std::uint32_t* b) {
  geometric_rows(X, begin, end, grids, y, off, b);
}

bool avx2_rows();

// Rows [begin, end) counted into one part's bins (column j's at b + off[j]) by the lookup that
// fits the grids: one shared exact log grid in SIMD registers, one shared grid of another kind,
// a geometric grid per column, or any grid per column (grid_rows).
template <class Transform>
void count_rows(const ConstMatrixRef& X, std::int64_t begin, std::int64_t end,
                std::span<const GridIndex* const> grids, Transform& y, const std::size_t* off,
                std::uint32_t* b) {
  const auto d = static_cast<std::size_t>(X.cols());
  const bool shared = std::all_of(grids.begin(), grids.end(),
                                  [&](const GridIndex* g) { return g == grids[0]; });
  if (shared && grids[0]->is_exact_log()) {
    std::vector<std::int64_t> idx(d);
    const auto run = [&](auto g) {
      if (avx2_rows())
        exact_log_rows_avx2<false>(X, begin, end, g, y, off, b, idx.data());
      else
        exact_log_rows<false>(X, begin, end, g, y, off, b, idx.data());
    };
    if (grids[0]->is_nonnegative())
      run(grids[0]->exact_log_nonnegative());
    else
      run(grids[0]->exact_log());
    return;
  }
  if (shared) {  // one grid for every column: its lookup kept in registers
    const GridIndex& g = *grids[0];
    for (std::int64_t r = begin; r < end; ++r) {
      const double* row = X.row(r).data();
      for (std::size_t j = 0; j < d; ++j) ++b[off[j] + g.bin(y(j, row[j]))];
    }
    return;
  }
  if (std::all_of(grids.begin(), grids.end(),
                  [](const GridIndex* g) { return g->is_geometric(); })) {
    if (avx2_rows())
      geometric_rows_avx2(X, begin, end, grids, y, off, b);
    else
      geometric_rows(X, begin, end, grids, y, off, b);
    return;
  }
  // A grid per column (small or not): the values outside their column's grid, most of them on
  // the narrow refine and fine grids, are counted in SIMD registers, the rest looked up.
  if (avx2_rows())
    grid_rows_avx2(X, begin, end, grids, y, off, b);
  else
    grid_rows(X, begin, end, grids, y, off, b);
}

// A pass's bins: part k's bins of column j at parts[k].get() + offset[j] (grids[j]->bins() of
// them; a part with no rows has no buffer).
struct ColumnBins {
  std::vector<BinBuffer> parts;
  std::vector<std::size_t> offset;
};

inline std::vector<std::size_t> bin_offsets(std::span<const GridIndex* const> grids) {
  std::vector<std::size_t> offset(grids.size() + 1, 0);
  for (std::size_t j = 0; j < grids.size(); ++j) offset[j + 1] = offset[j] + grids[j]->bins();
  return offset;
}

template <class Transform>
ColumnBins column_bins(const ConstMatrixRef& X, std::span<const GridIndex* const> grids,
                       Transform y, int threads) {
  ColumnBins out;
  out.offset = bin_offsets(grids);
  const std::size_t total = out.offset.back();
  const int parts = count_parts(X.rows(), total, threads);
  out.parts.resize(static_cast<std::size_t>(parts));
  // Rows in order (X is read as a stream); the bins of every column live in one buffer
  // (bin_buffer).
  parallel_ranges(X.rows(), parts, 1, [&](int part, std::int64_t begin, std::int64_t end) {
    BinBuffer& h = out.parts[static_cast<std::size_t>(part)];
    h = bin_buffer(total);
    count_rows(X, begin, end, grids, y, out.offset.data(), h.get());
  });
  return out;
}

// column_bins on one exact log grid for every column, of the values themselves, with the rows'
// finiteness check made in the same read (exact_log_rows): the bins, and whether every cell was
// finite (when not, the bins are of no use).
inline std::pair<ColumnBins, bool> checked_log_bins(const ConstMatrixRef& X, const GridIndex& grid,
                                                    int threads) {
  const std::vector<const GridIndex*> grids(static_cast<std::size_t>(X.cols()), &grid);
  ColumnBins out;
  out.offset = bin_offsets(grids);
  const std::size_t total = out.offset.back();
  const int parts = count_parts(X.rows(), total, threads);
  out.parts.resize(static_cast<std::size_t>(parts));
  std::vector<std::uint64_t> flagged(static_cast<std::size_t>(parts), 0);
  parallel_ranges(X.rows(), parts, 1, [&](int part, std::int64_t begin, std::int64_t end) {
    BinBuffer& h = out.parts[static_cast<std::size_t>(part)];
    h = bin_buffer(total);
    std::vector<std::int64_t> idx(grids.size());
    auto y = [](std::size_t, double x) { return x; };
    flagged[static_cast<std::size_t>(part)] =
        avx2_rows()
            ? exact_log_rows_avx2<true>(X, begin, end, grid.exact_log(), y, out.offset.data(),
                                        h.get(), idx.data())
            : exact_log_rows<true>(X, begin, end, grid.exact_log(), y, out.offset.data(),
                                   h.get(), idx.data());
  });
  const bool finite = std::all_of(flagged.begin(), flagged.end(),
                                  [](std::uint64_t f) { return f == 0; });
  return {std::move(out), finite};
}

// Two independent passes' bins from one read of the rows (the second pass's grids or transform
// may not depend on the first's counts): each block of rows, while in cache, is counted on
// grids1 with y1 and on grids2 with y2. The same bins as column_bins(X, grids1, y1) and
// column_bins(X, grids2, y2).
template <class T1, class T2>
std::pair<ColumnBins, ColumnBins> column_bins_pair(const ConstMatrixRef& X,
                                                   std::span<const GridIndex* const> grids1,
                                                   T1 y1,
                                                   std::span<const GridIndex* const> grids2,
                                                   T2 y2, int threads) {
  constexpr std::int64_t kBlock = 512;  // rows of 100 doubles: 400 KiB, in L2
  std::pair<ColumnBins, ColumnBins> out;
  out.first.offset = bin_offsets(grids1);
  out.second.offset = bin_offsets(grids2);
  const std::size_t total1 = out.first.offset.back(), total2 = out.second.offset.back();
  const int parts = count_parts(X.rows(), total1 + total2, threads);
  out.first.parts.resize(static_cast<std::size_t>(parts));
  out.second.parts.resize(static_cast<std::size_t>(parts));
  parallel_ranges(X.rows(), parts, 1, [&](int part, std::int64_t begin, std::int64_t end) {
    BinBuffer& h1 = out.first.parts[static_cast<std::size_t>(part)];
    BinBuffer& h2 = out.second.parts[static_cast<std::size_t>(part)];
    h1 = bin_buffer(total1);
    h2 = bin_buffer(total2);
    for (std::int64_t b = begin; b < end; b += kBlock) {
      const std::int64_t e = std::min(end, b + kBlock);
      count_rows(X, b, e, grids1, y1, out.first.offset.data(), h1.get());
      count_rows(X, b, e, grids2, y2, out.second.offset.data(), h2.get());
    }
  });
  return out;
}

// A pass's counts: counts[j][i] = #{rows with a value below grid_j[i]}, counts[j].back() the rows.
inline std::vector<std::vector<std::int64_t>> bin_counts(const ColumnBins& pass,
                                                         std::span<const GridIndex* const> grids) {
  const std::size_t d = grids.size();
  std::vector<std::vector<std::int64_t>> counts(d);
  for (std::size_t j = 0; j < d; ++j) {
    std::vector<std::int64_t>& c = counts[j];
    for (const auto& h : pass.parts) {
      if (!h) continue;  // a part with no rows (or a rank with none)
      const std::uint32_t* part = h.get() + pass.offset[j];
      if (c.empty()) {
        c.assign(part, part + grids[j]->bins());
        continue;
      }
      for (std::size_t b = 0; b < c.size(); ++b) c[b] += part[b];
    }
    if (c.empty()) c.assign(grids[j]->bins(), 0);
    // bins -> counts below each point (prefix sums), then the total in the last word
    std::int64_t below = 0;
    for (std::size_t b = 0; b + 1 < c.size(); ++b) {
      below += c[b];
      c[b] = below;
    }
    c.back() += below;
  }
  return counts;
}

template <class Transform>
std::vector<std::vector<std::int64_t>> column_counts(const ConstMatrixRef& X,
                                                     std::span<const GridIndex* const> grids,
                                                     Transform y, int threads) {
  return bin_counts(column_bins(X, grids, y, threads), grids);
}

template <class T1, class T2>
std::pair<std::vector<std::vector<std::int64_t>>, std::vector<std::vector<std::int64_t>>>
merged_column_counts_pair(const ConstMatrixRef& X, std::span<const GridIndex* const> grids1, T1 y1,
                          std::span<const GridIndex* const> grids2, T2 y2, int threads,
                          Communicator& comm) {
  const auto pass = column_bins_pair(X, grids1, y1, grids2, y2, threads);
  auto counts = std::make_pair(bin_counts(pass.first, grids1), bin_counts(pass.second, grids2));
  if (comm.size() > 1) {
    for (auto& c : counts.first) comm.allreduce_sum(c);
    for (auto& c : counts.second) comm.allreduce_sum(c);
  }
  return counts;
}

}  // namespace dpstats::scale_detail
