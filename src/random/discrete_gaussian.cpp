#include "dpstats/random/discrete_gaussian.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "dpstats/error.hpp"
#include "dpstats/random/bernoulli.hpp"
#include "dpstats/random/discrete_laplace.hpp"

namespace dpstats {
namespace {

// floor(sqrt(x)) for x <= 2^62, exactly: the double estimate is off by at most one either way.
std::uint64_t isqrt(std::uint64_t x) {
  auto r = static_cast<std::uint64_t>(std::sqrt(static_cast<double>(x)));
  while (r * r > x) --r;
  while ((r + 1) * (r + 1) <= x) ++r;
  return r;
}

// Bernoulli(exp(-a^2 / d)), d >= 1. For a < 2^64 the square fits in 128 bits; otherwise it is
// formed in 256 bits and split exactly as a^2 = q d + r, and exp(-a^2/d) = exp(-1)^q exp(-r/d)
// is drawn as q independent Bernoulli(exp(-1)) (stopping at the first failure) and
// Bernoulli(exp(-r/d)).
bool exp_minus_square(RandomBits& bits, u128 a, u128 d) {
  if ((a >> 64) == 0) return bernoulli_exp(bits, a * a, d);
  const u128 a_hi = a >> 64, a_lo = static_cast<std::uint64_t>(a);
  const u128 low = a_lo * a_lo, mid = 2 * (a_hi * a_lo), high = a_hi * a_hi;  // a < 2^127
  const u128 sq_lo = low + (mid << 64);
  const u128 sq_hi = high + (mid >> 64) + (sq_lo < low ? 1 : 0);
  // a^2 / d >= 2^128: true has probability below exp(-2^128); see the header.
  if (sq_hi >= d) return false;
  u128 r = sq_hi, q = 0;
  for (int i = 127; i >= 0; --i) {
    const bool carry = (r >> 127) != 0;
    r = (r << 1) | ((sq_lo >> i) & 1);
    q <<= 1;
    if (carry || r >= d) {
      r -= d;
      q |= 1;
    }
  }
  for (u128 i = 0; i < q; ++i) {
    if (!bernoulli_exp(bits, 1, 1)) return false;
  }
  return bernoulli_exp(bits, r, d);
}

}  // namespace

std::int64_t discrete_gaussian(RandomBits& bits, std::uint64_t sigma2_num,
                               std::uint64_t sigma2_den) {
  if (!(sigma2_num >= 1)) {
    throw InvalidArgument("discrete_gaussian: sigma2_num must be >= 1, got 0");
  }
  if (!(sigma2_den >= 1)) {
    throw InvalidArgument("discrete_gaussian: sigma2_den must be >= 1, got 0");
  }
  if (!(static_cast<u128>(sigma2_num) <= (static_cast<u128>(sigma2_den) << 62))) {
    throw InvalidArgument(
        fmt::format("discrete_gaussian: sigma^2 = sigma2_num / sigma2_den must be <= 2^62, got "
                    "{} / {}",
                    sigma2_num, sigma2_den));
  }
  std::uint64_t n = sigma2_num, m = sigma2_den;
  const std::uint64_t t = isqrt(n / m) + 1;  // floor(sigma) + 1 = floor(sqrt(floor(sigma^2))) + 1
  // The acceptance exponent (|Y| - sigma^2/t)^2 / (2 sigma^2) = (|Y| t m - n)^2 / (2 n m t^2).
  u128 d = 0;
  const auto denominator = [&] {
    u128 nm = static_cast<u128>(n) * m, out;
    return !__builtin_mul_overflow(nm, static_cast<u128>(2) * t * t, &out) ? out : u128{0};
  };
  d = denominator();
  if (d == 0 && m > 1) {
    const std::uint64_t g = std::gcd(n, m);
    n /= g;
    m /= g;
    d = denominator();
  }
  if (!(d != 0)) {
    throw InvalidArgument(
        fmt::format("discrete_gaussian: 2 * sigma2_num * sigma2_den * t^2 must be < 2^128 "
                    "(t = floor(sigma) + 1 = {}); reduce the fraction {} / {}",
                    t, sigma2_num, sigma2_den));
  }
  const u128 tm = static_cast<u128>(t) * m;  // < 2^96
  // CKS20 Alg. 3: a discrete Laplace proposal with scale t, accepted with probability
  // exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)).
  for (;;) {
    const std::int64_t y = discrete_laplace(bits, t, 1);
    const std::uint64_t abs_y =
        y < 0 ? 0 - static_cast<std::uint64_t>(y) : static_cast<std::uint64_t>(y);
    u128 scaled;
    // |Y| t m >= 2^127 makes the exponent exceed 2^124 (a >= 2^126, d < 2^128): rejected without
    // drawing, see the header.
    if (__builtin_mul_overflow(static_cast<u128>(abs_y), tm, &scaled) || (scaled >> 127) != 0) {
      continue;
    }
    const u128 a = scaled >= n ? scaled - n : n - scaled;
    if (exp_minus_square(bits, a, d)) return y;
  }
}

std::int64_t discrete_gaussian(Rng& rng, std::uint64_t sigma2_num, std::uint64_t sigma2_den) {
  RandomBits bits(rng);
  return discrete_gaussian(bits, sigma2_num, sigma2_den);
}

}  // namespace dpstats
