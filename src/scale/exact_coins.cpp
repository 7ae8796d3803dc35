// Exact coins of the scale layer (exact_coins.hpp; docs/proofs/scale.md §1c).
#include "exact_coins.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/random/bernoulli.hpp"
#include "dpstats/random/exp_constant.hpp"

namespace dpstats::scale_detail {
namespace {

constexpr double kFar = 44;  // e^-44 < 2^-63: its window decides a trial from about two bits

// Bernoulli(e^-44), exactly, from the constant's precomputed 64-bit window.
bool exp_minus_44(RandomBits& bits) {
  static const ExpConstant c{44, 1};
  static const ExpConstant::Window w = c.window();
  return bernoulli_exp_constant(bits, c, w);
}

}  // namespace

bool bernoulli_exp_fast(RandomBits& bits, double gamma) {
  require(std::isfinite(gamma) && gamma >= 0, "bernoulli_exp_fast: gamma must be finite and >= 0");
  // exp(-gamma) = e^-44 · exp(-(gamma - 44)), independent factors. gamma - 44 is exact for
  // 44 <= gamma < 2^55 (Sterbenz below 88; above, 44 is a multiple of ulp(gamma) <= 4 and so is
  // the difference, which has fewer significant bits than gamma); beyond 2^55 the probability is
  // below exp(-2^55) and the first factor ends the loop with probability 1 - e^-44 each time.
  while (gamma >= kFar) {
    if (!exp_minus_44(bits)) return false;
    gamma -= kFar;
  }
  return bernoulli_exp(bits, gamma);
}

bool bernoulli_exp_fast(RandomBits& bits, u128 num, u128 den) {
  require(den >= 1 && (den >> 64) == 0, "bernoulli_exp_fast: den must be in [1, 2^64)");
  const u128 step = static_cast<u128>(44) * den;  // < 2^70
  while (num >= step) {
    if (!exp_minus_44(bits)) return false;
    num -= step;
  }
  return bernoulli_exp(bits, num, den);
}

std::size_t permute_and_flip_gaps(std::span<const double> gamma, RandomBits& bits) {
  require(!gamma.empty() && gamma.size() < (std::size_t{1} << 31),
          "permute_and_flip_gaps: between 1 and 2^31 - 1 candidates");
  constexpr std::uint32_t kFarBit = std::uint32_t{1} << 31;
  std::vector<std::uint32_t> walk;  // candidate index, with kFarBit when its e^-44 came true
  for (std::size_t i = 0; i < gamma.size(); ++i) {
    require(std::isfinite(gamma[i]) && gamma[i] >= 0,
            "permute_and_flip_gaps: gamma[{}] must be finite and >= 0", i);
    if (gamma[i] < kFar) {
      walk.push_back(static_cast<std::uint32_t>(i));
    } else if (exp_minus_44(bits)) {
      walk.push_back(static_cast<std::uint32_t>(i) | kFarBit);
    }
  }
  // Lazy Fisher–Yates over the walk: a uniformly random order of its candidates.
  for (std::size_t k = 0; k < walk.size(); ++k) {
    std::swap(walk[k], walk[k + bits.uniform_below(walk.size() - k)]);
    const std::uint32_t i = walk[k] & ~kFarBit;
    const bool far = (walk[k] & kFarBit) != 0;
    if (bernoulli_exp_fast(bits, far ? gamma[i] - kFar : gamma[i])) return i;
  }
  throw std::logic_error("permute_and_flip_gaps: no candidate accepted (no gamma equal to 0)");
}

bool discrete_laplace_at_least(RandomBits& bits, i128 g, u128 num, u128 den) {
  require(num >= 1 && den >= 1 && (num >> 64) == 0 && (den >> 64) == 0,
          "discrete_laplace_at_least: num and den must be in [1, 2^64)");
  // exp(-y / t) = exp(-y·den / num). Each loop is one draw of (sign, magnitude) in the law of
  // discrete_laplace.hpp; only the events the answer needs are decided.
  if (g >= 1) {
    const auto y = static_cast<u128>(g);
    for (;;) {
      if (!bits.bit()) return bernoulli_exp_fast(bits, y * den, num);  // nu = Y >= g
      if (bernoulli_exp_fast(bits, den, num)) return false;           // nu = -Y <= -1 < g
      // (negative, Y = 0): rejected, draw again
    }
  }
  const auto j = static_cast<u128>(1 - g);  // nu >= g <=> not (nu <= -j), j >= 1
  for (;;) {
    if (!bits.bit()) return true;                          // nu = Y >= 0 >= g
    if (!bernoulli_exp_fast(bits, den, num)) continue;     // (negative, Y = 0): rejected
    return !bernoulli_exp_fast(bits, (j - 1) * den, num);  // Y >= 1: nu <= -j iff Y >= j
  }
}

}  // namespace dpstats::scale_detail
