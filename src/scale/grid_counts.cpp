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

GridIndex GridIndex::log(int per_octave, bool nonnegative) {
  GridIndex g;
  g.points_ = log_grid(per_octave, nonnegative);
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
  g.lower_ = g.points_.front();
  const double span = g.points_.back() - g.points_.front();
  g.per_step_ = std::isfinite(span) && span > 0
                    ? static_cast<double>(g.points_.size() - 1) / span
                    : 0;  // an overflowing span: the correction (a binary search) does it all
  return g;
}

GridIndex GridIndex::geometric(std::vector<double> points, double base, int per_octave) {
  GridIndex g = GridIndex::points(std::move(points));
  g.geometric_ = true;
  g.lower_ = base;
  g.log2_base_ = std::log2(base);
  g.m_ = per_octave;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  g.padded_ = {-kInf, -kInf};
  g.padded_.insert(g.padded_.end(), g.points_.begin(), g.points_.end());
  g.padded_.insert(g.padded_.end(), {kInf, kInf});
  return g;
}

GridIndex GridIndex::dyadic(double lower, double upper, std::size_t points) {
  GridIndex g = GridIndex::points(dyadic_grid(lower, upper, points));
  const std::span<const double> p = g.grid();
  const double h = p[1] - p[0];
  // dyadic_grid's own points (not its linear_grid fallback): equal power-of-two steps
  int e = 0;
  if (std::frexp(h, &e) == 0.5 && p.back() == p.front() + static_cast<double>(p.size() - 1) * h) {
    g.dyadic_ = true;
    g.step_ = h;
    g.per_step_ = 1 / h;
    g.last_index_ = static_cast<double>(p.size() - 1);
    g.upper_ = p.back();
  }
  return g;
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
  std::free(p);
}

BinBuffer bin_buffer(std::size_t count) {
  constexpr std::size_t kPage = std::size_t{1} << 21;
  const std::size_t bytes = (count * sizeof(std::uint32_t) + kPage - 1) / kPage * kPage;
  std::uint32_t* p = nullptr;
  {
    BinPool& pool = bin_pool();
    const std::lock_guard<std::mutex> lock(pool.mutex);
    const auto it = std::find_if(pool.buffers.begin(), pool.buffers.end(),
                                 [&](const auto& b) { return b.second == bytes; });
    if (it != pool.buffers.end()) {
      p = it->first;
      pool.bytes -= bytes;
      pool.buffers.erase(it);
    }
  }
  if (p == nullptr) {
    p = static_cast<std::uint32_t*>(std::aligned_alloc(kPage, bytes));
    if (p == nullptr) throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without huge pages the bins still work
  }
  std::memset(p, 0, bytes);
  return BinBuffer(p, FreeBins{bytes});
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
