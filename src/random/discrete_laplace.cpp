#include "dpstats/random/discrete_laplace.hpp"

#include <fmt/format.h>

#include "dpstats/error.hpp"
#include "dpstats/random/bernoulli.hpp"

namespace dpstats {

std::int64_t discrete_laplace(RandomBits& bits, std::uint64_t scale_num, std::uint64_t scale_den) {
  constexpr std::uint64_t kMaxScaleNum = std::uint64_t{1} << 56;
  if (!(scale_num >= 1 && scale_num < kMaxScaleNum)) {
    throw InvalidArgument(
        fmt::format("discrete_laplace: scale_num must be in [1, 2^56), got {}", scale_num));
  }
  if (!(scale_den >= 1)) {
    throw InvalidArgument("discrete_laplace: scale_den must be >= 1, got 0");
  }
  constexpr u128 kMaxMagnitude = (static_cast<u128>(1) << 63) - 1;
  // CKS20 Alg. 2 with t = scale_num / scale_den. X = U + scale_num·V has
  // P(X = x) ∝ exp(-x / scale_num) (U ∝ exp(-U/scale_num) on {0, ..., scale_num - 1} by rejection,
  // V ~ Geometric(1 - e^-1)), so Y = floor(X / scale_den) has P(Y = y) ∝ exp(-y / t). A fair sign
  // with the draw (negative, 0) rejected makes it two-sided without doubling the mass at 0.
  for (;;) {
    const std::uint64_t u = bits.uniform_below(scale_num);
    if (!bernoulli_exp(bits, u, scale_num)) continue;
    std::uint64_t v = 0;
    while (bernoulli_exp(bits, 1, 1)) ++v;  // 2^64 successes would take centuries of draws
    const u128 x = u + static_cast<u128>(scale_num) * v;
    const u128 y = scale_den == 1 ? x : x / scale_den;
    const bool negative = bits.bit();
    if (negative && y == 0) continue;
    const auto magnitude = static_cast<std::int64_t>(y > kMaxMagnitude ? kMaxMagnitude : y);
    return negative ? -magnitude : magnitude;
  }
}

std::int64_t discrete_laplace(Rng& rng, std::uint64_t scale_num, std::uint64_t scale_den) {
  RandomBits bits(rng);
  return discrete_laplace(bits, scale_num, scale_den);
}

}  // namespace dpstats
