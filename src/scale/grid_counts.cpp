// The scale layer's data pass (grid_counts.hpp).
#include "grid_counts.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <utility>
#include <new>

#include <sys/mman.h>

#include "dpstats/error.hpp"
#include "dpstats/scale/grid_quantile.hpp"

namespace dpstats::scale_detail {

DyadicSteps dyadic_steps(double lower, double upper, std::size_t points) {
  check_finite(lower, "lower");
  check_finite(upper, "upper");
  require(lower < upper, "lower must be < upper, got lower = {}, upper = {}", format_number(lower),
          format_number(upper));
  require(points >= 2, "points must be >= 2, got {}", points);
  const double step = (upper / 2 - lower / 2) / static_cast<double>(points - 1) * 2;
  int e = 0;
  std::frexp(step, &e);
  DyadicSteps s;
  s.h = std::ldexp(1.0, e - 1);  // the largest power of two <= step
  s.first = std::floor(lower / s.h);
  s.last = std::ceil(upper / s.h);
  // The ends first·h and last·h must be finite: next to ±DBL_MAX the multiples that cover
  // [lower, upper] reach ±2^1024 (an infinite point, a cell of infinite width).
  s.exact = step > 0x1p-1000 && std::isfinite(step) && std::fabs(s.first) < 0x1p52 &&
            std::fabs(s.last) < 0x1p52 && std::isfinite(s.first * s.h) &&
            std::isfinite(s.last * s.h);
  return s;
}

GridIndex GridIndex::log(int per_octave, bool nonnegative) {
  GridIndex g;
  g.points_ = log_grid(per_octave, nonnegative);
  g.size_ = g.points_.size();
  g.log_ = true;
  g.m_ = per_octave;
  if (std::has_single_bit(static_cast<unsigned>(per_octave))) {
    g.shift_ = std::countr_zero(static_cast<unsigned>(per_octave));
    g.exact_ = {.shift = 52 - g.shift_, .top = std::int64_t{1} << (11 + g.shift_),
                .m = per_octave, .zero = 0, .keep_below = nonnegative ? 0 : -1};
    g.exact_log_ = true;
  }
  g.nonnegative_ = nonnegative;
  g.positives_ = nonnegative ? g.points_.size() - 1 : (g.points_.size() - 1) / 2;
  g.zero_ = nonnegative ? 0 : g.positives_;
  g.exact_.zero = static_cast<std::int64_t>(g.zero_);
  return g;
}

GridIndex GridIndex::points(std::vector<double> points) {
  require(points.size() >= 2, "a grid needs at least 2 points, got {}", points.size());
  GridIndex g;
  g.points_ = std::move(points);
  g.size_ = g.points_.size();
  g.lower_ = g.points_.front();
  const double span = g.points_.back() - g.points_.front();
  g.per_step_ = std::isfinite(span) && span > 0
                    ? static_cast<double>(g.points_.size() - 1) / span
                    : 0;  // an overflowing span: the correction (a binary search) does it all
  return g;
}

GridIndex GridIndex::geometric(std::vector<double> points) {
  GridIndex g = GridIndex::points(std::move(points));
  const std::vector<double>& p = g.points_;
  constexpr double kMin = std::numeric_limits<double>::min();
  if (!(p.front() >= kMin) || !std::isfinite(p.back())) return g;  // searched
  double step = std::numeric_limits<double>::infinity();  // the narrowest relative step
  for (std::size_t i = 0; i + 1 < p.size(); ++i) step = std::min(step, p[i + 1] / p[i] - 1);
  if (!(step > 0)) return g;
  // A bucket [2^k (1 + a 2^(s-52)), 2^k (1 + (a + 1) 2^(s-52))) is at most 2^(s-52) wide
  // relative to its values, below the step for s = 52 + e - 2 (2^(e-1) <= step < 2^e); the
  // table below checks that no bucket holds two points all the same.
  int e = 0;
  std::frexp(step, &e);
  const int shift = std::clamp(52 + e - 2, 0, 52);
  const auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
  const auto start = [&](std::uint64_t bucket) { return std::bit_cast<double>(bucket << shift); };
  const std::uint64_t first = (bits(p.front()) >> shift) - 1;  // >= 0: p_0 is normal
  std::uint64_t last = (bits(p.back()) >> shift) + 1;
  double hi = start(last);
  if ((last << shift) > bits(std::numeric_limits<double>::max())) {
    hi = std::numeric_limits<double>::max();
    last = bits(hi) >> shift;
  }
  if (last - first >= (std::uint64_t{1} << 20)) return g;
  std::vector<std::uint32_t> table;
  for (std::uint64_t b = first; b <= last; ++b)
    table.push_back(static_cast<std::uint32_t>(
        std::lower_bound(p.begin(), p.end(), start(b)) - p.begin()));
  table.push_back(static_cast<std::uint32_t>(p.size()));  // beyond the last bucket
  for (std::size_t t = 0; t + 1 < table.size(); ++t)
    if (table[t + 1] - table[t] > 1) return g;  // two points in a bucket: searched
  table.pop_back();
  g.geometric_ = true;
  g.geo_lo_ = start(first);
  g.geo_hi_ = hi;
  g.geo_shift_ = static_cast<std::uint64_t>(shift);
  g.geo_first_ = first;
  g.geo_table_ = std::move(table);
  g.padded_ = p;
  g.padded_.push_back(std::numeric_limits<double>::infinity());
  return g;
}

GridIndex GridIndex::dyadic(double lower, double upper, std::size_t points) {
  // dyadic_grid's points k h, k = first..last, with no vector of them; where it falls back to
  // linear_grid, that grid (stored), looked up as below when its steps happen to be equal powers
  // of two.
  const DyadicSteps s = dyadic_steps(lower, upper, points);
  if (!s.exact) {
    GridIndex g = GridIndex::points(linear_grid(lower, upper, points));
    const std::span<const double> p = g.grid();
    const double h = p[1] - p[0];
    int e = 0;
    if (std::frexp(h, &e) == 0.5 && std::isfinite(p.back() - p.front()) &&
        p.back() == p.front() + static_cast<double>(p.size() - 1) * h) {
      g.dyadic_ = true;
      g.step_ = h;
      g.per_step_ = 1 / h;
      g.last_index_ = static_cast<double>(p.size() - 1);
      g.upper_ = p.back();
    }
    return g;
  }
  // The arithmetic lookup reads x - p_0, finite for x in [p_0, p_{N-1}] only when the span is:
  // a wider grid (about ±DBL_MAX) is stored and searched.
  if (!std::isfinite(s.last * s.h - s.first * s.h))
    return GridIndex::points(dyadic_grid(lower, upper, points));
  GridIndex g;
  g.size_ = static_cast<std::size_t>(s.last - s.first) + 1;
  g.dyadic_ = true;
  g.first_ = s.first;
  g.step_ = s.h;
  g.per_step_ = 1 / s.h;
  g.lower_ = s.first * s.h;  // exact: |k| < 2^52
  g.upper_ = s.last * s.h;
  g.last_index_ = static_cast<double>(g.size_ - 1);
  return g;
}

std::span<const double> GridIndex::grid() const {
  require(size_ == points_.size(), "GridIndex::grid: a dyadic grid's points are not stored");
  return points_;
}

std::size_t GridIndex::search(double x) const {
  return static_cast<std::size_t>(std::upper_bound(points_.begin(), points_.end(), x) -
                                  points_.begin());
}

namespace {

struct BinPool {
  std::mutex mutex;
  std::vector<std::pair<std::uint32_t*, std::size_t>> buffers;  // (buffer, bytes)
  std::size_t bytes = 0;
};

BinPool& bin_pool() {
  static BinPool pool;
  return pool;
}

constexpr std::size_t kPooledBytes = std::size_t{64} << 20;

}  // namespace

void FreeBins::operator()(std::uint32_t* p) const {
  BinPool& pool = bin_pool();
  {
    const std::lock_guard<std::mutex> lock(pool.mutex);
    if (pool.bytes + bytes <= kPooledBytes) {
      pool.buffers.emplace_back(p, bytes);
      pool.bytes += bytes;
      return;
    }
  }
  munmap(p, bytes);
}

BinBuffer bin_buffer(std::size_t count) {
  constexpr std::size_t kPage = 4096;
  const std::size_t used = count * sizeof(std::uint32_t);
  const std::size_t bytes = (used + kPage - 1) / kPage * kPage;
  {
    // The smallest pooled buffer that holds the bins: zeroed where they lie (the next passes'
    // grids are smaller than the first's, and a fresh buffer's pages cost a fault each).
    BinPool& pool = bin_pool();
    const std::lock_guard<std::mutex> lock(pool.mutex);
    auto best = pool.buffers.end();
    for (auto it = pool.buffers.begin(); it != pool.buffers.end(); ++it)
      if (it->second >= bytes && (best == pool.buffers.end() || it->second < best->second))
        best = it;
    if (best != pool.buffers.end()) {
      const auto [p, capacity] = *best;
      pool.bytes -= capacity;
      pool.buffers.erase(best);
      std::memset(p, 0, used);
      return BinBuffer(p, FreeBins{capacity});
    }
  }
  // Fresh anonymous pages are zero: no memset. Base pages, not huge ones: a log grid's bins are
  // mostly never touched, and only the touched 4 KiB pages are faulted in and zeroed (a 2 MiB
  // page per four columns' bins was 50 MB to zero for a 10^6 x 100 pass, the kernel's time
  // varying from run to run; the pass's own time was the same on either).
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  return BinBuffer(static_cast<std::uint32_t*>(m), FreeBins{bytes});
}

bool avx2_rows() {
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  return avx2;
}

int count_parts(std::int64_t rows, std::size_t bins_per_row, int threads) {
  constexpr double kMemory = 1 << 30;  // bytes of 32-bit bins over all parts
  const double per_part = static_cast<double>(bins_per_row) * sizeof(std::uint32_t);
  int parts = std::clamp(threads, 1, std::max(1, static_cast<int>(kMemory / per_part)));
  const std::int64_t per_bin_limit = 0xffffffffLL;  // rows of one part stay below 2^32
  while (rows / parts >= per_bin_limit) ++parts;
  return parts;
}

}  // namespace dpstats::scale_detail
