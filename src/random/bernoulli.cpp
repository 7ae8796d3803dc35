// Exact Bernoulli samplers.
//
// A trial Bernoulli(p) draws a uniform u = 0.b1 b2 b3 ... (bits from RandomBits) and answers
// u < p. Only as many bits are read as the answer needs: with integers lo <= p·2^64 <= hi known,
// the first bit where u differs from lo (u below) or from hi (u above) settles it, so a trial
// reads about two bits. When p is known only through a double, lo and hi come from p_hat with a
// proven margin; when u falls inside [lo, hi) (probability about 2^-47) the decision is taken by
// exact long division of p's numerator and denominator against u's bits. No rounding ever
// enters an answer: every decision below is exactly P(true) = p.
#include "dpstats/random/bernoulli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "dpstats/error.hpp"

namespace dpstats {
namespace {

constexpr std::uint64_t kMax64 = ~std::uint64_t{0};
constexpr u128 kTwo64 = static_cast<u128>(1) << 64;

double to_double(u128 x) {
  return (x >> 64) == 0 ? static_cast<double>(static_cast<std::uint64_t>(x))
                        : static_cast<double>(x);
}

// The next 64 binary digits of r / den for 0 <= r < den: returns floor(r·2^64 / den) and leaves
// r = r·2^64 mod den. Every product stays below 2^128: one step when den < 2^64, two 32-bit
// steps when den < 2^96, single bits otherwise.
std::uint64_t next_digits(u128& r, u128 den) {
  if ((den >> 64) == 0) {
    const u128 x = r << 64;
    const u128 q = x / den;
    r = x - q * den;
    return static_cast<std::uint64_t>(q);
  }
  if ((den >> 96) == 0) {
    std::uint64_t q = 0;
    for (int step = 0; step < 2; ++step) {
      const u128 x = r << 32;
      const u128 d = x / den;
      r = x - d * den;
      q = (q << 32) | static_cast<std::uint64_t>(d);
    }
    return q;
  }
  std::uint64_t q = 0;
  for (int step = 0; step < 64; ++step) {
    // 2r can exceed 2^128 - 1 only when it also exceeds den; the wrapped difference is exact.
    const bool carry = (r >> 127) != 0;
    r <<= 1;
    q <<= 1;
    if (carry || r >= den) {
      r -= den;
      q |= 1;
    }
  }
  return q;
}

// u < num/den, exactly, where u's first 64 bits are w (already consumed); later words are read
// only while u's digits equal p's.
bool less_exact(RandomBits& bits, std::uint64_t w, u128 num, u128 den) {
  if (num >= den) return true;
  u128 r = num;
  std::uint64_t digits = next_digits(r, den);
  while (w == digits) {
    if (r == 0) return false;  // p's expansion has ended, so u >= p
    w = bits.take(64);
    digits = next_digits(r, den);
  }
  return w < digits;
}

// u < p given integers lo <= p·2^64 <= hi. Peeks 64 bits W. If W < lo, the first bit where W and
// lo differ (W has 0, lo has 1) puts u below lo whatever follows, so exactly the bits up to it
// are consumed. If W >= hi, the prefix that first reaches hi (the first differing bit, or the end
// of hi's nonzero bits) puts u at or above hi. Which bits are consumed depends only on those bits
// (a stopping time), so unread bits stay independent of the answer. Otherwise all 64 bits are
// consumed and `exact` decides from them.
template <class Exact>
bool less_lazy(RandomBits& bits, std::uint64_t lo, u128 hi, Exact&& exact) {
  const std::uint64_t w = bits.peek64();
  if (w < lo) {
    bits.consume(std::countl_zero(w ^ lo) + 1);
    return true;
  }
  if (hi <= kMax64 && w >= static_cast<std::uint64_t>(hi)) {
    const auto h = static_cast<std::uint64_t>(hi);
    const int through_hi = 64 - std::countr_zero(h);  // 0 when h = 0: nothing to read
    bits.consume(w == h ? through_hi : std::min(std::countl_zero(w ^ h) + 1, through_hi));
    return false;
  }
  bits.consume(64);
  return exact(w);
}

// lo <= p·2^64 <= hi from an estimate with |p_hat - p| < 2^-50, i.e. off by less than 2^14
// units of 2^-64. Every p_hat below is a chain of at most four correctly rounded operations
// (two u128 -> double conversions and at most two divisions) on exact operands with p <= 1, so
// its relative error is at most (1 + 2^-53)^4 - 1 < 2^-50. The margin 2^16 also absorbs the
// truncation to an integer.
struct Window {
  std::uint64_t lo;
  u128 hi;
};
constexpr std::uint64_t kMargin = std::uint64_t{1} << 16;

Window window(double p_hat) {
  const double scaled = p_hat * 0x1p64;  // exact: a power-of-two scaling
  const u128 p = scaled >= 0x1p64 ? kTwo64 : static_cast<u128>(static_cast<std::uint64_t>(scaled));
  const u128 lo = p > kMargin ? p - kMargin : 0;
  return {static_cast<std::uint64_t>(lo), p + kMargin + 1};
}

bool rational(RandomBits& bits, u128 num, u128 den) {
  if (num == 0) return false;
  if (num >= den) return true;
  const Window win = window(to_double(num) / to_double(den));
  return less_lazy(bits, win.lo, win.hi,
                   [&](std::uint64_t w) { return less_exact(bits, w, num, den); });
}

// Bernoulli(1/k), k >= 1, from the exact first digits P = floor(2^64 / k).
bool inverse(RandomBits& bits, std::uint64_t k) {
  if (k == 1) return true;
  std::uint64_t p = kMax64 / k;
  const bool divides = kMax64 % k == k - 1;  // k divides 2^64: 1/k has 64 digits at most
  if (divides) ++p;
  return less_lazy(bits, p, static_cast<u128>(p) + (divides ? 0 : 1),
                   [&](std::uint64_t w) { return less_exact(bits, w, 1, k); });
}

// Bernoulli(2^-j): the next j bits are all zero.
bool all_zero(RandomBits& bits, int j) {
  while (j > 0) {
    const int k = std::min(j, 64);
    const std::uint64_t w = bits.peek64();
    if ((w >> (64 - k)) != 0) {
      bits.consume(std::countl_zero(w) + 1);
      return false;
    }
    bits.consume(k);
    j -= k;
  }
  return true;
}

// CKS20 Alg. 1 for gamma <= 1: K = 1; while Bernoulli(gamma / K): K++; answer "K is odd".
// P(K > k) = gamma^k / k!, so P(K odd) = sum_k (-gamma)^k / k! = exp(-gamma).
// `trial(k)` is Bernoulli(gamma / k).
template <class Trial>
bool exp_minus_small(Trial&& trial) {
  std::uint64_t k = 1;
  while (trial(k)) ++k;
  return (k & 1) != 0;
}

bool exp_minus_one(RandomBits& bits) {
  // gamma = 1: the first trial, Bernoulli(1), always succeeds.
  std::uint64_t k = 2;
  while (inverse(bits, k)) ++k;
  return (k & 1) != 0;
}

// Bernoulli(exp(-num/den)) for num <= den.
bool exp_at_most_one(RandomBits& bits, u128 num, u128 den) {
  if (num == 0) return true;
  if (num == den) return exp_minus_one(bits);
  const double gamma = to_double(num) / to_double(den);
  return exp_minus_small([&](std::uint64_t k) {
    u128 den_k;
    if (__builtin_mul_overflow(den, static_cast<u128>(k), &den_k)) {
      // Bernoulli(gamma/k) = Bernoulli(gamma) and Bernoulli(1/k), independent.
      return rational(bits, num, den) && inverse(bits, k);
    }
    const Window win = window(gamma / static_cast<double>(k));
    return less_lazy(bits, win.lo, win.hi,
                     [&](std::uint64_t w) { return less_exact(bits, w, num, den_k); });
  });
}

// Bernoulli(exp(-num/den)) for any num: floor(gamma) independent Bernoulli(exp(-1)) (stopping at
// the first failure), then Bernoulli(exp(-frac(gamma))) (CKS20 Alg. 1, gamma > 1).
bool exp_minus(RandomBits& bits, u128 num, u128 den) {
  if (num <= den) return exp_at_most_one(bits, num, den);
  const u128 whole = num / den;
  for (u128 i = 0; i < whole; ++i) {
    if (!exp_minus_one(bits)) return false;
  }
  return exp_at_most_one(bits, num % den, den);
}

std::string show(u128 x) { return fmt::format("{}", x); }

}  // namespace

bool bernoulli_rational(RandomBits& bits, u128 num, u128 den) {
  if (!(den >= 1)) {
    throw InvalidArgument("bernoulli_rational: den must be >= 1, got 0");
  }
  if (!(num <= den)) {
    throw InvalidArgument("bernoulli_rational: num must be in [0, den] (den = " + show(den) +
                          "), got " + show(num));
  }
  return rational(bits, num, den);
}

bool bernoulli_exp(RandomBits& bits, u128 num, u128 den) {
  if (!(den >= 1)) {
    throw InvalidArgument("bernoulli_exp: den must be >= 1, got 0");
  }
  return exp_minus(bits, num, den);
}

bool bernoulli_exp(RandomBits& bits, double gamma) {
  if (!(std::isfinite(gamma) && gamma >= 0)) {
    throw InvalidArgument(
        fmt::format("bernoulli_exp: gamma must be a finite number >= 0, got {}", gamma));
  }
  if (gamma == 0) return true;
  // gamma = mantissa · 2^shift exactly, with an integer mantissa < 2^53.
  int exponent = 0;
  const double fraction = std::frexp(gamma, &exponent);
  auto mantissa = static_cast<std::uint64_t>(std::ldexp(fraction, 53));
  int shift = exponent - 53;
  if (shift >= 0) {
    if (shift <= 127 - 53) return exp_minus(bits, static_cast<u128>(mantissa) << shift, 1);
    // gamma >= 2^127: the answer is true only after more than 2^127 consecutive Bernoulli(e^-1)
    // successes, an event of probability below exp(-2^127); we stop counting there and answer
    // false, which changes the distribution by less than exp(-2^127).
    for (u128 i = 0; i < (static_cast<u128>(1) << 127); ++i) {
      if (!exp_minus_one(bits)) return false;
    }
    return false;
  }
  const int zeros = std::min(std::countr_zero(mantissa), -shift);
  mantissa >>= zeros;
  shift += zeros;
  const int k = -shift;  // gamma = mantissa / 2^k
  if (k <= 127) return exp_minus(bits, mantissa, static_cast<u128>(1) << k);
  // gamma < 2^-74: 2^k does not fit in 128 bits. Bernoulli(gamma/K) is the conjunction of the
  // independent Bernoulli(mantissa / 2^127), Bernoulli(2^-(k-127)) and Bernoulli(1/K).
  const u128 two127 = static_cast<u128>(1) << 127;
  return exp_minus_small([&](std::uint64_t kk) {
    return all_zero(bits, k - 127) && rational(bits, mantissa, two127) && inverse(bits, kk);
  });
}

bool bernoulli_rational(Rng& rng, u128 num, u128 den) {
  RandomBits bits(rng);
  return bernoulli_rational(bits, num, den);
}

bool bernoulli_exp(Rng& rng, u128 num, u128 den) {
  RandomBits bits(rng);
  return bernoulli_exp(bits, num, den);
}

bool bernoulli_exp(Rng& rng, double gamma) {
  RandomBits bits(rng);
  return bernoulli_exp(bits, gamma);
}

}  // namespace dpstats
