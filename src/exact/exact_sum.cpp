#include "dpstats/exact/exact_sum.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

namespace dpstats::exact {

double box_quantum(std::int64_t n) {
  require(n >= 1, fmt::format("n must be >= 1, got {}", n));
  require(n <= (std::int64_t{1} << 52), fmt::format("n must be <= 2^52, got {}", n));
  const int bits = 53 - static_cast<int>(std::bit_width(static_cast<std::uint64_t>(n)));
  return std::ldexp(1.0, std::min(bits, 40));
}

int ball_bits(std::int64_t n) {
  require(n >= 1, fmt::format("n must be >= 1, got {}", n));
  const int lg = static_cast<int>(std::bit_width(static_cast<std::uint64_t>(n)));  // ⌈log2(n+1)⌉
  return std::clamp(52 - lg, 1, 30);
}

double ball_lattice_sensitivity(std::int64_t d, int bits) {
  const double unit = 1 + (static_cast<double>(d) + 4) * 0x1p-52;
  return 2 * unit * std::ldexp(1.0, bits) + std::sqrt(static_cast<double>(d));
}

namespace {

// Rows [begin, end) of box_sum: one word per coordinate. `poison` becomes NaN if any cell is NaN
// or infinite (x·0 is then NaN), so the data are validated in the same pass. The poison is kept
// per column (an element-wise add, which vectorises; a single running sum would be an in-order
// floating-point reduction, which does not). Cloned for AVX-512 and AVX2, chosen at run time.
__attribute__((target_clones("avx512f", "avx2", "default")))
void box_rows(const double* __restrict__ X, Eigen::Index stride, Eigen::Index d,
              const double* __restrict__ lo, double width, double pre, double scale,
              std::int64_t begin, std::int64_t end, std::uint64_t* __restrict__ words,
              double* poison) {
  std::vector<double> bad_columns(static_cast<std::size_t>(d), 0.0);
  double* __restrict__ bad = bad_columns.data();
  for (std::int64_t i = begin; i < end; ++i) {
    const double* __restrict__ row = X + i * stride;
    for (Eigen::Index j = 0; j < d; ++j) {
      bad[j] += row[j] * 0.0;
      add(words[j], box_value(row[j], lo[j], width, pre) * scale);
    }
  }
  double total = 0;
  for (double b : bad_columns) total += b;
  *poison += total;
}

}  // namespace

BoxSum box_sum(const ConstMatrixRef& X, const Vector& lower, double width, double Q, int threads) {
  const Eigen::Index n = X.rows(), d = X.cols();
  require(lower.size() == d, fmt::format("lower bounds have length {}, data have {} columns",
                                         lower.size(), d));
  // Q = box_quantum(n) for this process's rows, or (a rank's share of distributed rows) the
  // quantum of all rows, which is smaller: the rank's partial sum stays exact either way.
  require(Q > 0 && (n == 0 || Q <= box_quantum(n)), "box_sum: Q must be in (0, box_quantum(n)]");
  // scale maps [0, width] into [0, Q]; rounding keeps every row's contribution in [0, Q]. A
  // width so small that Q / width overflows (below about 2^-984, e.g. bounds estimated around an
  // atom of zeros) is first brought up by pre = 2^k, exactly: (v 2^k) (Q / (width 2^k)) is then
  // the product of the same scaled numbers. Otherwise pre = 1 and the bits are those of v Q/width.
  const double pre = std::isfinite(Q / width) ? 1.0 : std::ldexp(1.0, -std::ilogb(width));
  const double scale = Q / (width * pre);
  std::vector<double> poison(static_cast<std::size_t>(std::max(threads, 1)), 0.0);
  const double* data = X.data();
  const Eigen::Index stride = X.outerStride();
  BoxSum out;
  out.sums = row_sums(n, d, Q, threads, [&](int p, std::int64_t b, std::int64_t e, std::uint64_t* w) {
    box_rows(data, stride, d, lower.data(), width, pre, scale, b, e, w,
             &poison[static_cast<std::size_t>(p)]);
  });
  for (double p : poison) out.finite = out.finite && std::isfinite(p);
  return out;
}

BallSum::BallSum(std::int64_t d, double clip, std::int64_t capacity)
    : d_(d), capacity_(capacity), clip_(clip), bits_(0) {
  require(d >= 1, "dimension must be >= 1");
  check_positive(clip, "clip");
  require(capacity >= 1 && capacity < (std::int64_t{1} << 40), "capacity must be in [1, 2^40)");
  bits_ = ball_bits(capacity);
  words_.assign(static_cast<std::size_t>(d), 0);
}

void BallSum::add(const Eigen::Ref<const Vector>& v) {
  require(count_ < capacity_, "exact sum: more vectors than its capacity");
  require(v.size() == d_, "exact sum: wrong dimension");
  const double f = ball_factor(v.norm(), clip_, std::ldexp(1.0, bits_));
  for (std::int64_t j = 0; j < d_; ++j) exact::add(words_[static_cast<std::size_t>(j)], v[j] * f);
  ++count_;
}

void BallSum::merge(const BallSum& other) {
  require(other.d_ == d_ && other.clip_ == clip_ && other.capacity_ == capacity_,
          "exact sum: merged sums must share dimension, clip and capacity");
  require(count_ + other.count_ <= capacity_, "exact sum: more vectors than its capacity");
  for (std::size_t j = 0; j < words_.size(); ++j) words_[j] += other.words_[j];
  count_ += other.count_;
}

Vector BallSum::lattice_sum() const {
  Vector s(d_);
  for (std::int64_t j = 0; j < d_; ++j)
    s[j] = static_cast<double>(total(words_[static_cast<std::size_t>(j)], count_));
  return s;
}

}  // namespace dpstats::exact
