// Exact Bernoulli samplers.
//
// A trial Bernoulli(p) draws a uniform u = 0.b1 b2 b3 ... (bits from RandomBits) and answers
// u < p. Only as many bits are read as the answer needs: with integers lo <= p·2^64 <= hi known,
// the first bit where u differs from lo (u below) or from hi (u above) settles it, so a trial
// reads about two bits. When p is known only through a double, lo and hi come from p_hat with a
// proven margin; when u falls inside [lo, hi) (probability about 2^-45) the decision is taken by
// exact long division of p's numerator and denominator against u's bits. No rounding ever
// enters an answer: every decision below is exactly P(true) = p.
#include "dpstats/random/bernoulli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>

#include "dpstats/error.hpp"
#include "lazy_compare.hpp"

namespace dpstats {
namespace {

using random_detail::bits_above;
using random_detail::bits_below;
using random_detail::less_lazy;

constexpr std::uint64_t kMax64 = ~std::uint64_t{0};
constexpr u128 kTwo64 = static_cast<u128>(1) << 64;

// u128 -> double with relative error at most 2^-53 + 2^-63: exact conversion below 2^64,
// otherwise the top 64 bits (truncation error below 2^-63) rounded once and scaled by 2^s.
double to_double(u128 x) {
  const auto high = static_cast<std::uint64_t>(x >> 64);
  if (high == 0) return static_cast<double>(static_cast<std::uint64_t>(x));
  const int s = 64 - std::countl_zero(high);
  const double scale = std::bit_cast<double>(static_cast<std::uint64_t>(1023 + s) << 52);
  return static_cast<double>(static_cast<std::uint64_t>(x >> s)) * scale;
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

// lo <= p·2^64 <= hi from an estimate p_hat with |p_hat - p| < 2^-48, i.e. off by less than
// 2^16 units of 2^-64; the margin 2^18 also covers the truncation to an even integer below.
// Every estimate in this file is within 8u of its p <= 1, far inside 2^-48 = 32u (see the
// comments at each use): u = 2^-53 is the unit roundoff, each correctly rounded operation adds
// at most u of relative error and each to_double at most u + 2^-63.
struct Window {
  std::uint64_t lo;
  u128 hi;
};
constexpr std::uint64_t kMargin = std::uint64_t{1} << 18;

Window window(double p_hat) {
  // p_hat·2^63 < 2^63 converts with the signed instruction; doubling loses one unit.
  const u128 p =
      p_hat >= 1.0
          ? kTwo64
          : static_cast<u128>(static_cast<std::uint64_t>(static_cast<std::int64_t>(p_hat * 0x1p63)))
                << 1;
  return {p > kMargin ? static_cast<std::uint64_t>(p - kMargin) : 0, p + kMargin + 2};
}

// Bernoulli(num/den) with an estimate p_hat of num/den.
bool rational(RandomBits& bits, u128 num, u128 den, double p_hat) {
  if (num == 0) return false;
  if (num >= den) return true;
  const Window win = window(p_hat);
  return less_lazy(bits, win.lo, win.hi,
                   [&](std::uint64_t w) { return less_exact(bits, w, num, den); });
}

bool rational(RandomBits& bits, u128 num, u128 den) {
  // Relative error at most 3u + 2^-62.
  return rational(bits, num, den, to_double(num) / to_double(den));
}

// floor(2^64 x) and ceil(2^64 x) for the exactly known constants 1/k and 1/k!.
struct Digits {
  std::uint64_t lo, hi;
};
constexpr Digits digits_of_inverse(u128 den) {
  const u128 q = kTwo64 / den;
  return {static_cast<std::uint64_t>(q), static_cast<std::uint64_t>(q + (kTwo64 % den ? 1 : 0))};
}

constexpr int kTable = 64;
constexpr auto kInverse = [] {
  std::array<Digits, kTable> t{};
  for (int k = 2; k < kTable; ++k) t[k] = digits_of_inverse(k);
  return t;
}();
constexpr auto kReciprocal = [] {
  std::array<double, kTable> t{};
  for (int k = 1; k < kTable; ++k) t[k] = 1.0 / k;  // correctly rounded
  return t;
}();
double reciprocal(std::uint64_t k) { return k < kTable ? kReciprocal[k] : 1.0 / k; }

constexpr int kMaxChain = 20;  // 20! < 2^63
constexpr auto kFactorial = [] {
  std::array<std::uint64_t, kMaxChain + 1> t{};
  t[0] = 1;
  for (int k = 1; k <= kMaxChain; ++k) t[k] = t[k - 1] * k;
  return t;
}();
constexpr auto kInverseFactorial = [] {
  std::array<Digits, kMaxChain + 1> t{};
  for (int k = 2; k <= kMaxChain; ++k) t[k] = digits_of_inverse(kFactorial[k]);
  return t;
}();

// Bernoulli(1/k), k >= 1.
bool inverse(RandomBits& bits, std::uint64_t k) {
  if (k == 1) return true;
  const Digits d = k < kTable ? kInverse[k] : digits_of_inverse(k);
  return less_lazy(bits, d.lo, d.hi, [&](std::uint64_t w) { return less_exact(bits, w, 1, k); });
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
// `trial(k)` is Bernoulli(gamma / k); the loop starts at `k`, all earlier trials having succeeded.
template <class Trial>
bool exp_trials(std::uint64_t k, Trial&& trial) {
  while (trial(k)) ++k;
  return (k & 1) != 0;
}

// The same K from a single uniform u: K = min{k <= n : u >= T_k} with T_k = gamma^k/k!
// decreasing, so P(K > k) = P(u < T_k) = gamma^k/k! as with independent trials. One peek of 64
// bits then settles K for all thresholds it can certify; the bits consumed are those certifying
// u < T_{K-1} and u >= T_K. A w inside T_k's uncertainty window is settled exactly; then, if
// u < T_k, u >= w·2^-64 is still far above T_{k+1} <= T_k/2 (the chain only uses thresholds whose
// window is much narrower than T_k/2), so K = k + 1. The chain stops after a fixed n chosen
// without looking at u; on the event u < T_n, which the chain decides exactly, the rest of K is
// drawn by fresh trials from n + 1 on: conditionally on K > n they have the same law, and u is
// used nowhere else.
bool exp_minus_one(RandomBits& bits) {
  // T_k = 1/k!, exactly known digits; T_1 = 1.
  const auto trials = [&](std::uint64_t k) {
    return exp_trials(k, [&](std::uint64_t j) { return inverse(bits, j); });
  };
  const std::uint64_t w = bits.peek64();
  int below = 0;
  for (int k = 2; k <= kMaxChain; ++k) {
    const Digits t = kInverseFactorial[k];
    if (w < t.lo) {
      below = bits_below(w, t.lo);
      continue;
    }
    if (w >= t.hi) {
      bits.consume(std::max(below, bits_above(w, t.hi)));
      return (k & 1) != 0;
    }
    bits.consume(64);
    if (!less_exact(bits, w, 1, kFactorial[k])) return (k & 1) != 0;
    // u < 1/k! and u >= w·2^-64 = floor(2^64/k!)·2^-64 >= 1/(k+1)! for k <= 20.
    return k < kMaxChain ? ((k + 1) & 1) != 0 : trials(k + 1);
  }
  bits.consume(below);
  return trials(kMaxChain + 1);
}

constexpr auto kFactorialBits = [] {
  std::array<int, kMaxChain + 1> t{};
  for (int k = 0; k <= kMaxChain; ++k) t[k] = static_cast<int>(std::bit_width(kFactorial[k]));
  return t;
}();

// The largest k <= 20 with den^k k! < 2^128 (from bit widths).
int chain_length(u128 den) {
  const auto high = static_cast<std::uint64_t>(den >> 64);
  const int width = high != 0 ? 64 + static_cast<int>(std::bit_width(high))
                              : static_cast<int>(std::bit_width(static_cast<std::uint64_t>(den)));
  int chain = 0;
  while (chain < kMaxChain && width * (chain + 1) + kFactorialBits[chain + 1] <= 128) ++chain;
  return chain;
}

// Bernoulli(exp(-num/den)) for 0 <= num < den, by the single-uniform chain above with
// T_k = num^k / (den^k k!) while that fraction is exact in 128 bits (k <= chain), then by
// trials. `gamma` estimates num/den with relative error at most 4.01u (see BernoulliExp).
bool exp_at_most_one(RandomBits& bits, u128 num, u128 den, double gamma, int chain) {
  if (num == 0) return true;
  // Trial k is Bernoulli(gamma/k), estimated by gamma·(1/k): relative error <= 6.01u.
  const auto trials = [&](std::uint64_t k) {
    return exp_trials(k, [&](std::uint64_t j) {
      u128 den_j;
      if (__builtin_mul_overflow(den, static_cast<u128>(j), &den_j)) {
        // Bernoulli(gamma/j) = Bernoulli(gamma) and Bernoulli(1/j), independent.
        return rational(bits, num, den) && inverse(bits, j);
      }
      return rational(bits, num, den_j, gamma * reciprocal(j));
    });
  };
  const std::uint64_t w = bits.peek64();
  // Each step adds at most 7.01u of relative error to T_k's estimate (gamma, two products, 1/k),
  // so its absolute error is below 7.01 k u T_k <= 7.01 k u / k! <= 7.01u.
  // The chain also stops before any T_k below 2^-40 (decided from the estimates alone), so that
  // for every k on it lo_k >= T_k 2^64 - 2^19 > T_k 2^63 + 2^19 > hi_{k+1}: the windows of
  // consecutive thresholds are disjoint.
  double threshold = 1;
  int below = 0;
  int k = 1;
  for (; k <= chain; ++k) {
    const double next = threshold * gamma * kReciprocal[k];
    if (next < 0x1p-40) break;
    threshold = next;
    const Window win = window(threshold);
    if (w < win.lo) {
      below = bits_below(w, win.lo);
      continue;
    }
    if (win.hi <= kMax64 && w >= static_cast<std::uint64_t>(win.hi)) {
      bits.consume(std::max(below, bits_above(w, static_cast<std::uint64_t>(win.hi))));
      return (k & 1) != 0;
    }
    bits.consume(64);
    u128 num_k = 1, den_k = kFactorial[k];
    for (int i = 0; i < k; ++i) {
      num_k *= num;
      den_k *= den;
    }
    if (!less_exact(bits, w, num_k, den_k)) return (k & 1) != 0;
    // u < T_k with u >= lo_k·2^-64 > T_{k+1}: K = k + 1 if the chain goes on.
    const bool chain_goes_on = k < chain && threshold * gamma * kReciprocal[k + 1] >= 0x1p-40;
    return chain_goes_on ? ((k + 1) & 1) != 0 : trials(k + 1);
  }
  bits.consume(below);
  return trials(k);
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

BernoulliExp::BernoulliExp(u128 den) : den_(den) {
  if (!(den >= 1)) {
    throw InvalidArgument("bernoulli_exp: den must be >= 1, got 0");
  }
  reciprocal_ = 1.0 / to_double(den);  // relative error <= 2u + 2^-63
  chain_ = chain_length(den);
}

// floor(num/den) independent Bernoulli(exp(-1)) (stopping at the first failure), then
// Bernoulli(exp(-frac(num/den))) (CKS20 Alg. 1 for gamma > 1).
bool BernoulliExp::operator()(RandomBits& bits, u128 num) const {
  if (num == den_) return exp_minus_one(bits);
  if (num > den_) {
    const u128 whole = num / den_;
    for (u128 i = 0; i < whole; ++i) {
      if (!exp_minus_one(bits)) return false;
    }
    num %= den_;
  }
  // gamma = num·(1/den): relative error <= u + 2^-63 (num) + 2u + 2^-63 + u (product) < 4.01u.
  return exp_at_most_one(bits, num, den_, to_double(num) * reciprocal_, chain_);
}

bool bernoulli_exp(RandomBits& bits, u128 num, u128 den) { return BernoulliExp(den)(bits, num); }

bool bernoulli_exp_minus_one(RandomBits& bits) { return exp_minus_one(bits); }

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
    if (shift <= 127 - 53) return bernoulli_exp(bits, static_cast<u128>(mantissa) << shift, 1);
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
  if (k <= 127) return bernoulli_exp(bits, mantissa, static_cast<u128>(1) << k);
  // gamma < 2^-74: 2^k does not fit in 128 bits. Bernoulli(gamma/K) is the conjunction of the
  // independent Bernoulli(mantissa / 2^127), Bernoulli(2^-(k-127)) and Bernoulli(1/K).
  const u128 two127 = static_cast<u128>(1) << 127;
  return exp_trials(1, [&](std::uint64_t j) {
    return all_zero(bits, k - 127) && rational(bits, mantissa, two127) && inverse(bits, j);
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
