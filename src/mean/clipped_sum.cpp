#include "dpstats/mean/clipped_sum.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include "dpstats/parallel.hpp"

#include "dpstats/error.hpp"

namespace dpstats {

namespace {

constexpr double kMagic = 0x1p52;  // adding 2^52 rounds a value in [0, 2^52) to an integer
const std::uint64_t kMagicBits = std::bit_cast<std::uint64_t>(kMagic);

// Rows [begin, end): per-coordinate sums of round(clamp(x - lower, 0, width) · scale), in u64.
// The integer is read from the mantissa of (v + 2^52); the sum of the bit patterns wraps modulo
// 2^64 and the n·bits(2^52) offset is removed at the end, so the result is exact. `poison`
// becomes NaN if any cell is NaN or infinite (x·0 is then NaN), which the caller checks, so the
// data are validated in the same pass. Cloned for AVX2 where the CPU has it.
__attribute__((target_clones("avx2", "default")))
void sum_rows(const double* X, Eigen::Index stride, Eigen::Index d, const double* lo, double width,
              double scale, Eigen::Index begin, Eigen::Index end, std::uint64_t* acc,
              double* poison) {
  double bad = 0;
  for (Eigen::Index i = begin; i < end; ++i) {
    const double* row = X + i * stride;
    for (Eigen::Index j = 0; j < d; ++j) {
      bad += row[j] * 0.0;
      const double v = std::min(std::max(row[j] - lo[j], 0.0), width);
      acc[j] += std::bit_cast<std::uint64_t>(v * scale + kMagic);
    }
  }
  const auto rows = static_cast<std::uint64_t>(end - begin);
  for (Eigen::Index j = 0; j < d; ++j) acc[j] -= rows * kMagicBits;
  *poison = bad;
}

}  // namespace

double sum_quantum(std::int64_t n) {
  require(n >= 1, fmt::format("n must be >= 1, got {}", n));
  require(n <= (std::int64_t{1} << 52), fmt::format("n must be <= 2^52, got {}", n));
  const int bits = 53 - static_cast<int>(std::bit_width(static_cast<std::uint64_t>(n)));
  return std::ldexp(1.0, std::min(bits, 40));
}

QuantisedSum quantised_clipped_sum(const ConstMatrixRef& X, const Vector& lower, double width,
                                   int threads) {
  const Eigen::Index n = X.rows(), d = X.cols();
  require(n > 0 && d > 0,
          fmt::format("X must have at least one row and one column, got {} x {}", n, d));
  require(lower.size() == d, fmt::format("lower bounds have length {}, data have {} columns",
                                         lower.size(), d));
  check_positive(width, "width (upper - lower)");
  for (Eigen::Index j = 0; j < d; ++j) check_finite(lower[j], "lower bound");
  QuantisedSum out;
  out.quantum = sum_quantum(n);
  out.lower = lower;
  out.width = width;
  // scale maps [0, width] into [0, Q]; rounding keeps every row's contribution in [0, Q].
  const double scale = out.quantum / width;

  threads = std::clamp(threads, 1, static_cast<int>(std::max<Eigen::Index>(1, n / 65536)));
  std::vector<std::uint64_t> acc(static_cast<std::size_t>(threads * d), 0);
  std::vector<double> poison(static_cast<std::size_t>(threads), 0);
  const double* data = X.data();
  const Eigen::Index stride = X.outerStride();
  // parallel_ranges cuts [0, n) into exactly `threads` parts (threads <= n / 65536).
  parallel_ranges(n, threads, 65536, [&](int t, std::int64_t b, std::int64_t e) {
    sum_rows(data, stride, d, lower.data(), width, scale, b, e, acc.data() + t * d,
             poison.data() + t);
  });
  for (double p : poison) {
    if (!std::isfinite(p)) check_data(X);  // throws, naming the first bad cell
  }
  out.sums = Vector::Zero(d);
  for (Eigen::Index j = 0; j < d; ++j) {
    std::uint64_t s = 0;
    for (int t = 0; t < threads; ++t) s += acc[static_cast<std::size_t>(t * d + j)];
    out.sums[j] = static_cast<double>(s);  // exact: s <= n·Q <= 2^53
  }
  return out;
}

Vector QuantisedSum::to_mean(const Vector& s, std::int64_t n) const {
  const double denom = static_cast<double>(n) * quantum;
  return lower.array() + width * (s.array() / denom);
}

}  // namespace dpstats
