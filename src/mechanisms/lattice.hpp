// Internal: the pieces shared by the lattice-secure mechanisms (Laplace, Gaussian) and the
// vector entry points of every additive mechanism.
#pragma once
#include <fmt/format.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "dpstats/error.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::mechanisms_detail {

__extension__ typedef __int128 i128;

constexpr double kInputBound = 0x1p60;   // lattice coordinates of the clamped input
constexpr double kOutputBound = 0x1p62;  // lattice coordinates of the release

// The largest power of two <= x, for a positive normal x.
inline double power_of_two_floor(double x) {
  int exponent = 0;
  std::frexp(x, &exponent);  // x = f 2^exponent, f in [0.5, 1)
  return std::ldexp(1.0, exponent - 1);
}

inline void check_dimension(std::size_t dimension) {
  require(dimension >= 1, "dimension must be >= 1, got 0");
}

// The value itself is private: the message does not show it.
inline void check_value(double value) {
  if (!std::isfinite(value)) {
    throw InvalidArgument("value must be finite (got a NaN or infinite entry)");
  }
}

inline void check_vector(const Eigen::Ref<const Eigen::VectorXd>& value, std::size_t dimension) {
  if (static_cast<std::size_t>(value.size()) != dimension) {
    throw InvalidArgument(fmt::format("value has length {} but the mechanism's dimension is {}",
                                      value.size(), dimension));
  }
  for (Eigen::Index i = 0; i < value.size(); ++i) {
    if (!std::isfinite(value[i])) {
      throw InvalidArgument(
          fmt::format("value must be finite (got a NaN or infinite entry at position {})", i));
    }
  }
}

// The integer nearest to x for |x| <= 2^60 (ties to even), exactly: below 2^52, adding and
// subtracting 2^52 rounds once, to the nearest integer, in the default rounding mode (never
// changed here); from 2^52 on every double is an integer. Inline, where llround is a libm call.
inline std::int64_t nearest_integer(double x) {
  constexpr double kShift = 0x1p52;
  const double a = std::fabs(x);
  return static_cast<std::int64_t>(std::copysign(a < kShift ? (a + kShift) - kShift : a, x));
}

// The release g·clamp(k + noise) with k = round(clamp(value)/g). x/g is exact (a power-of-two
// scaling of a clamped value; computed as x·(1/g), the same correctly rounded value, because g
// and 1/g are powers of two in the normal range and a loop hoists the one division), and so is
// the rounding to k; |k| <= 2^60, and clamping the exact
// sum k + Y to ±2^62 is a function of it (a sampler's own clamp at ±(2^63 - 1) only acts where
// k + Y is beyond ±2^62 anyway). The double returned is post-processing of the integer release.
inline double release(double value, double g, std::int64_t noise) {
  const double clamped = std::clamp(value, -kInputBound * g, kInputBound * g);
  const std::int64_t k = nearest_integer(clamped * (1 / g));
  const i128 sum = static_cast<i128>(k) + noise;
  const auto bound = static_cast<i128>(kOutputBound);
  return static_cast<double>(static_cast<std::int64_t>(std::clamp(sum, -bound, bound))) * g;
}

// A mechanism's scalar release from a generator: one bit reader for the one draw.
template <class Mechanism>
double apply_scalar(const Mechanism& m, double value, Rng& rng) {
  RandomBits bits(rng);
  return m.apply(value, bits);
}

// A mechanism's vector release: every coordinate noised in order from one bit reader.
template <class Mechanism>
Eigen::VectorXd apply_vector(const Mechanism& m, const Eigen::Ref<const Eigen::VectorXd>& value,
                             Rng& rng) {
  check_vector(value, m.dimension());
  Eigen::VectorXd out(value.size());
  RandomBits bits(rng);
  for (Eigen::Index i = 0; i < value.size(); ++i) out[i] = m.apply(value[i], bits);
  return out;
}

}  // namespace dpstats::mechanisms_detail
