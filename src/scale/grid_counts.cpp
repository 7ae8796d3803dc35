// The scale layer's data pass (grid_counts.hpp).
#include "grid_counts.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/mman.h>

#include "dpstats/error.hpp"
#include "dpstats/scale/grid_quantile.hpp"

namespace dpstats::scale_detail {
namespace {

constexpr double kSmallestNormal = 0x1p-1022;

std::uint64_t bits_of(double x) { return std::bit_cast<std::uint64_t>(x); }

}  // namespace

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
  return g;
}

// log2 of a positive normal double within 0.004: the exponent plus f + 0.3466 f (1 - f) for the
// fraction f in [0, 1) (log2(1 + f) to that accuracy); a guess for the correction below.
std::size_t GridIndex::geometric_guess(double x) const {
  if (!(x >= lower_)) return 0;
  if (x < kSmallestNormal) return 0;
  const std::uint64_t b = bits_of(x);
  const double f = static_cast<double>(b & ((std::uint64_t{1} << 52) - 1)) * 0x1p-52;
  const double log2x = static_cast<double>(static_cast<int>(b >> 52) - 1023) + f +
                       0.3466 * f * (1 - f);
  const double t = (log2x - log2_base_) * m_ + 1;
  if (t < 0) return 0;
  return t >= static_cast<double>(points_.size()) ? points_.size() : static_cast<std::size_t>(t);
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

void FreeBins::operator()(std::uint32_t* p) const { std::free(p); }

BinBuffer bin_buffer(std::size_t count) {
  constexpr std::size_t kPage = std::size_t{1} << 21;
  const std::size_t bytes = (count * sizeof(std::uint32_t) + kPage - 1) / kPage * kPage;
  auto* p = static_cast<std::uint32_t*>(std::aligned_alloc(kPage, bytes));
  if (p == nullptr) throw std::bad_alloc();
  madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without huge pages the bins still work
  std::memset(p, 0, bytes);
  return BinBuffer(p);
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
