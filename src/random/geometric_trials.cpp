// The exact geometric of a double rate (geometric.hpp, GeometricTrials): r^(2^j) is bracketed by
// fixed-point repeated squaring, rounded down for the lower end and up for the upper end, so
// lo_j <= r^(2^j) <= hi_j holds exactly at every precision; a uniform U is compared with the
// bracket word by word, and only a U inside it asks for more precision. The bracket closes at
// 64·L >= (bits of r)·2^j, where r^(2^j) is exact, so every comparison ends.
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <utility>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/random/geometric.hpp"

namespace dpstats {
namespace {

using Limbs = std::vector<std::uint64_t>;  // a fraction of 2^(64 L), little-endian words

// 1 - q as an L-limb fraction, exactly (q = mantissa 2^(e - 53) with 64 L + e - 53 >= 0).
Limbs one_minus(double q, std::size_t L) {
  int e = 0;
  const double f = std::frexp(q, &e);  // q = f 2^e, f in [1/2, 1)
  const auto mantissa = static_cast<std::uint64_t>(std::ldexp(f, 53));
  const int shift = static_cast<int>(64 * L) + e - 53;
  Limbs x(L, 0);
  const auto word = static_cast<std::size_t>(shift / 64), bit = static_cast<std::size_t>(shift % 64);
  x[word] = mantissa << bit;
  if (bit != 0 && word + 1 < L) x[word + 1] = mantissa >> (64 - bit);
  for (auto& w : x) w = ~w;  // 2^(64 L) - Q = ~Q + 1 (Q > 0)
  for (auto& w : x)
    if (++w != 0) break;
  return x;
}

// x^2 as an L-limb fraction, rounded down (up = false) or up; x < 1, so the result is < 1.
Limbs square(const Limbs& x, bool up) {
  const std::size_t L = x.size();
  Limbs p(2 * L, 0);
  for (std::size_t i = 0; i < L; ++i) {
    u128 carry = 0;
    for (std::size_t j = 0; j < L; ++j) {
      const u128 t = static_cast<u128>(x[i]) * x[j] + p[i + j] + carry;
      p[i + j] = static_cast<std::uint64_t>(t);
      carry = t >> 64;
    }
    p[i + L] = static_cast<std::uint64_t>(carry);
  }
  Limbs out(p.begin() + static_cast<std::ptrdiff_t>(L), p.end());
  bool inexact = false;
  for (std::size_t i = 0; i < L; ++i) inexact = inexact || p[i] != 0;
  if (up && inexact)
    for (auto& w : out)
      if (++w != 0) break;
  return out;
}

// {lo, hi} of r^(2^j) at L limbs.
std::pair<Limbs, Limbs> power_bounds(double q, std::size_t L, int j) {
  Limbs lo = one_minus(q, L), hi = lo;
  for (int k = 0; k < j; ++k) {
    lo = square(lo, false);
    hi = square(hi, true);
  }
  return {lo, hi};
}

// Sign of (U's first L words) - x, most significant word first in u.
int compare(const Limbs& u, const Limbs& x) {
  const std::size_t L = x.size();
  for (std::size_t i = 0; i < L; ++i) {
    const std::uint64_t a = u[i], b = x[L - 1 - i];
    if (a != b) return a < b ? -1 : 1;
  }
  return 0;
}

}  // namespace

GeometricTrials::GeometricTrials(double q) : q_(q) {
  require(std::isfinite(q) && q >= 0x1p-64 && q <= 1,
          fmt::format("GeometricTrials: the rate q must be in [2^-64, 1], got {}",
                      format_number(q)));
  if (q == 1) return;  // G = 0: no level is needed
  Limbs lo = one_minus(q, 2), hi = lo;
  for (;;) {
    lo_.push_back({lo[0], lo[1]});
    hi_.push_back({hi[0], hi[1]});
    if (hi[1] < (std::uint64_t{1} << 63) || (hi[1] == std::uint64_t{1} << 63 && hi[0] == 0)) break;
    require(lo_.size() <= 66, "GeometricTrials: no level reached 1/2 (internal)");  // K <= 64
    lo = square(lo, false);
    hi = square(hi, true);
  }
  levels_ = static_cast<int>(lo_.size()) - 1;  // r^(2^K) <= 1/2; K <= 65 for q >= 2^-64
}

bool GeometricTrials::below_power(RandomBits& bits, int j) const {
  const auto& lo = lo_[static_cast<std::size_t>(j)];
  const auto& hi = hi_[static_cast<std::size_t>(j)];
  // U < r^(2^j) is decided at the first bit where U leaves the common prefix of lo and hi.
  const std::uint64_t w = bits.peek64();
  const int common = lo[1] == hi[1] ? 64 : std::countl_zero(lo[1] ^ hi[1]);
  if (w != lo[1]) {
    const int d = std::countl_zero(w ^ lo[1]);
    if (d < common) {
      bits.consume(d + 1);
      return w < lo[1];
    }
  }
  return below_power_refined(bits, j);
}

// U word by word against brackets of 2, 4, 8, ... words: U < lo decides true, U >= hi false.
bool GeometricTrials::below_power_refined(RandomBits& bits, int j) const {
  Limbs u;
  for (std::size_t L = 2;; L *= 2) {
    const auto [lo, hi] = power_bounds(q_, L, j);
    while (u.size() < L) u.push_back(bits.take(64));
    if (compare(u, lo) < 0) return true;
    if (compare(u, hi) >= 0) return false;
  }
}

std::uint64_t GeometricTrials::operator()(RandomBits& bits) const {
  if (q_ == 1) return 0;
  constexpr std::uint64_t kMax = ~std::uint64_t{0};
  std::uint64_t high = 0;
  while (below_power(bits, levels_)) ++high;
  if (high != 0 && (levels_ >= 64 || high > (kMax >> levels_))) return kMax;
  std::uint64_t g = high == 0 ? 0 : high << levels_;  // levels_ < 64 when high != 0
  for (int j = 0; j < levels_; ++j) {
    // Bernoulli(x / (1 + x)), x = r^(2^j): per round a fair coin, then Bernoulli(x) on heads;
    // tails ends with 0, heads and success with 1, heads and failure repeats.
    for (;;) {
      if (!bits.bit()) break;
      if (below_power(bits, j)) {
        g |= std::uint64_t{1} << j;
        break;
      }
    }
  }
  return g;
}

}  // namespace dpstats
