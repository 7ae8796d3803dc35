#include "dpstats/solvers/exact_sum.hpp"

#include <bit>
#include <cmath>

#include "dpstats/error.hpp"

namespace dpstats::optimize {

namespace {
int sum_bits(std::int64_t k) {
  const int lg = static_cast<int>(std::bit_width(static_cast<std::uint64_t>(k)));  // ⌈log2(k+1)⌉
  return std::min(30, 52 - lg);
}
}  // namespace

ClippedVectorSum::ClippedVectorSum(std::int64_t d, double clip, std::int64_t capacity)
    : d_(d), capacity_(capacity), clip_(clip), bits_(sum_bits(capacity)),
      acc_(static_cast<std::size_t>(d), 0.0) {
  require(d >= 1, "dimension must be >= 1");
  check_positive(clip, "clip");
  require(capacity >= 1 && capacity < (std::int64_t{1} << 40), "capacity must be in [1, 2^40)");
}

void ClippedVectorSum::add(const Vector& v) {
  require(count_ < capacity_, "ClippedVectorSum: more vectors than its capacity");
  require(v.size() == d_, "ClippedVectorSum: wrong dimension");
  const double norm = v.norm();
  // Scale to the integer grid: ‖v‖ <= c becomes <= 2^b; |values| < 2^51, so adding and
  // subtracting 1.5·2^52 rounds to the nearest integer exactly (no fast-math in this build).
  const double scale = std::ldexp(1.0, bits_) / std::max(clip_, norm);
  constexpr double kRound = 0x1.8p52;
  for (std::int64_t j = 0; j < d_; ++j) {
    acc_[static_cast<std::size_t>(j)] += (v[j] * scale + kRound) - kRound;
  }
  ++count_;
}

Vector ClippedVectorSum::sum() const {
  const double unit = clip_ * std::ldexp(1.0, -bits_);
  Vector s(d_);
  for (std::int64_t j = 0; j < d_; ++j) s[j] = acc_[static_cast<std::size_t>(j)] * unit;
  return s;
}

double ClippedVectorSum::sensitivity() const {
  const double d = static_cast<double>(d_);
  const double grid = std::ldexp(1.0, bits_);
  const double lattice = 2 * (1 + (d + 4) * 0x1p-52) * grid + std::sqrt(d);
  return lattice * clip_ / grid + static_cast<double>(capacity_) * clip_ * 0x1p-50;
}

}  // namespace dpstats::optimize
