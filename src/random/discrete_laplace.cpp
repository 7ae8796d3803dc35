#include "dpstats/random/discrete_laplace.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "dpstats/error.hpp"
#include "dpstats/random/geometric.hpp"

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
    : num_(checked_scale_num(scale_num)), den_(scale_den) {
  if (scale_den < 1) throw InvalidArgument("discrete_laplace: scale_den must be >= 1, got 0");
}

std::int64_t DiscreteLaplace::operator()(RandomBits& bits) const {
  constexpr std::uint64_t kMaxMagnitude = (std::uint64_t{1} << 63) - 1;
  // CKS20 Alg. 2: a geometric magnitude with P(Y >= y) = exp(-y/t) (here floor(t·E), E ~ Exp(1),
  // see geometric.hpp) and a fair sign, with (negative, 0) rejected so that 0 is not counted
  // twice: P(y) ∝ exp(-|y|/t).
  for (;;) {
    const std::uint64_t y = std::min(exponential_floor(bits, num_, den_), kMaxMagnitude);
    const bool negative = bits.bit();
    if (negative && y == 0) continue;
    const auto magnitude = static_cast<std::int64_t>(y);
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
