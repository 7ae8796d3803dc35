#include "dpstats/random/discrete_laplace.hpp"

#include <fmt/format.h>

#include <bit>

#include "dpstats/error.hpp"

namespace dpstats {
namespace {

std::uint64_t checked_scale_num(std::uint64_t scale_num) {
  constexpr std::uint64_t kMaxScaleNum = std::uint64_t{1} << 56;
  if (scale_num < 1 || scale_num >= kMaxScaleNum) {
    throw InvalidArgument(
        fmt::format("discrete_laplace: scale_num must be in [1, 2^56), got {}", scale_num));
  }
  return scale_num;
}

}  // namespace

DiscreteLaplace::DiscreteLaplace(std::uint64_t scale_num, std::uint64_t scale_den)
    : num_(checked_scale_num(scale_num)),
      den_(scale_den),
      den_shift_(std::has_single_bit(scale_den) ? std::countr_zero(scale_den) : -1),
      accept_(scale_num) {
  if (scale_den < 1) throw InvalidArgument("discrete_laplace: scale_den must be >= 1, got 0");
}

std::int64_t DiscreteLaplace::operator()(RandomBits& bits) const {
  constexpr u128 kMaxMagnitude = (static_cast<u128>(1) << 63) - 1;
  // CKS20 Alg. 2 with t = num/den. X = U + num·V has P(X = x) ∝ exp(-x/num): U ∝ exp(-U/num) on
  // {0, ..., num - 1} (a uniform accepted with probability exp(-U/num)) and
  // V ~ Geometric(1 - e^-1) (Bernoulli(e^-1) successes before a failure). So Y = floor(X/den) has
  // P(Y = y) ∝ exp(-y/t). A fair sign, with (negative, 0) rejected, makes it two-sided without
  // doubling the mass at 0.
  for (;;) {
    const std::uint64_t u = bits.uniform_below(num_);
    if (!accept_(bits, u)) continue;
    std::uint64_t v = 0;
    while (bernoulli_exp_minus_one(bits)) ++v;  // 2^64 successes would take centuries of draws
    const u128 x = u + static_cast<u128>(num_) * v;
    const u128 y = den_shift_ >= 0 ? x >> den_shift_ : x / den_;
    const bool negative = bits.bit();
    if (negative && y == 0) continue;
    const auto magnitude = static_cast<std::int64_t>(y > kMaxMagnitude ? kMaxMagnitude : y);
    return negative ? -magnitude : magnitude;
  }
}

std::int64_t DiscreteLaplace::operator()(Rng& rng) const {
  RandomBits bits(rng);
  return (*this)(bits);
}

std::int64_t discrete_laplace(Rng& rng, std::uint64_t scale_num, std::uint64_t scale_den) {
  return DiscreteLaplace(scale_num, scale_den)(rng);
}

}  // namespace dpstats
