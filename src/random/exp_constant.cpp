#include "dpstats/random/exp_constant.hpp"

#include <fmt/format.h>

#include <boost/multiprecision/cpp_int.hpp>

#include "dpstats/error.hpp"
#include "exp_interval.hpp"
#include "lazy_compare.hpp"

namespace dpstats {

namespace random_detail {

Big to_big(u128 x) {
  Big r = static_cast<std::uint64_t>(x >> 64);
  r <<= 64;
  r += static_cast<std::uint64_t>(x);
  return r;
}

Big ceil_div(const Big& x, const Big& d) { return (x + d - 1) / d; }

Interval multiply(const Interval& x, const Interval& y, unsigned scale) {
  const Big one = Big(1) << scale;
  return {(x.lo * y.lo) >> scale, ceil_div(x.hi * y.hi, one)};
}

// exp(-r/q) for 0 <= r <= q at scale 2^F. The terms t_k = (r/q)^k / k! are non-increasing from
// k = 1 on (r/q <= 1), so the alternating series' remainder after term N is at most t_{N+1};
// each term is bracketed by floor/ceil of the previous bracket times r/(qk).
Interval exp_series(const Big& r, const Big& q, unsigned scale) {
  const Big one = Big(1) << scale;
  if (r == 0) return {one, one};
  Interval sum{one, one};
  Big term_lo = one, term_hi = one;
  for (unsigned k = 1;; ++k) {
    const Big d = q * k;
    term_lo = (term_lo * r) / d;
    term_hi = ceil_div(term_hi * r, d);
    if (term_hi <= 1) {  // t_k·2^F <= 1: the rest of the series, and this term, bound the error
      sum.lo -= term_hi;
      sum.hi += term_hi;
      break;
    }
    if (k % 2 == 1) {
      sum.lo -= term_hi;
      sum.hi -= term_lo;
    } else {
      sum.lo += term_lo;
      sum.hi += term_hi;
    }
  }
  if (sum.lo < 0) sum.lo = 0;
  return sum;
}

Interval exp_minus(const Big& p, const Big& q, unsigned scale) {
  const Big n = p / q;
  Interval out = exp_series(p % q, q, scale);
  if (n == 0) return out;
  Interval base = exp_series(1, 1, scale);  // e^-1
  Interval power{Big(1) << scale, Big(1) << scale};
  for (Big e = n; e != 0; e >>= 1) {
    if ((e & 1) != 0) power = multiply(power, base, scale);
    if (e > 1) base = multiply(base, base, scale);
  }
  return multiply(out, power, scale);
}

}  // namespace random_detail

namespace {

using random_detail::Big;
using random_detail::Interval;

// Bounds at scale 2^bits, computed at 2^(bits + guard) and rounded outwards. The guard covers the
// ~log2(n) + 70 ulps the series, the powering and the divisions lose.
Interval scaled_bounds(const ExpConstant& c, unsigned bits) {
  if (c.q == 0 || c.b == 0 || c.a == 0) {
    throw InvalidArgument("ExpConstant: q, a and b must be >= 1");
  }
  const Big p = random_detail::to_big(c.p), q = random_detail::to_big(c.q);
  const unsigned guard = 96 + static_cast<unsigned>(boost::multiprecision::msb(p / q + 1));
  const unsigned scale = bits + guard;
  const Big one = Big(1) << scale;
  Interval x = random_detail::exp_minus(p, q, scale);
  const Big a = random_detail::to_big(c.a), b = random_detail::to_big(c.b);
  x = {(x.lo * a) / b, random_detail::ceil_div(x.hi * a, b)};
  if (c.over_one_minus_inv_e) {
    const Interval e1 = random_detail::exp_series(1, 1, scale);
    x = {(x.lo << scale) / (one - e1.lo), random_detail::ceil_div(x.hi << scale, one - e1.hi)};
  }
  return {x.lo >> guard, random_detail::ceil_div(x.hi, Big(1) << guard)};
}

void to_words(Big x, std::size_t n, std::vector<std::uint64_t>& out) {
  out.assign(n, 0);
  for (std::size_t i = n; i-- > 0;) {
    out[i] = static_cast<std::uint64_t>(x & Big(random_detail::kMax64));
    x >>= 64;
  }
}

}  // namespace

void ExpConstant::bounds(unsigned bits, std::vector<std::uint64_t>& lo,
                         std::vector<std::uint64_t>& hi) const {
  require(bits >= 1, "ExpConstant::bounds: bits must be >= 1");
  const Interval x = scaled_bounds(*this, bits);
  const std::size_t words = (bits + 63) / 64 + 1;
  to_words(x.lo, words, lo);
  to_words(x.hi, words, hi);
}

ExpConstant::Window ExpConstant::window() const {
  const Interval x = scaled_bounds(*this, 64);
  if (x.lo > (Big(1) << 64)) {
    throw InvalidArgument(
        fmt::format("ExpConstant: the constant must be at most 1 (lower bound {} / 2^64)",
                    x.lo.str()));
  }
  const Big cap = Big(1) << 100;  // any hi >= 2^64 means "not below every w"
  // A lower bound of exactly 2^64 (c = 1) is stored as 2^64 - 1, still a lower bound.
  return {x.lo > Big(random_detail::kMax64) ? random_detail::kMax64 : static_cast<std::uint64_t>(x.lo),
          x.hi >= cap ? (static_cast<u128>(1) << 100) : random_detail::to_u128(x.hi)};
}

bool exp_constant_less(RandomBits& bits, std::uint64_t w, const ExpConstant& c) {
  // u ∈ [U, U + 1)·2^-P with U its first P bits; the bounds lo <= 2^P c <= hi decide it as soon
  // as U + 1 <= lo (u < c) or U >= hi (u >= c).
  Big u = w;
  unsigned known = 64;
  for (unsigned precision = 128;; precision *= 2) {
    const Interval x = scaled_bounds(c, precision);
    while (known < precision) {
      u = (u << 64) | Big(bits.take(64));
      known += 64;
    }
    if (u + 1 <= x.lo) return true;
    if (u >= x.hi) return false;
  }
}

bool bernoulli_exp_constant(RandomBits& bits, const ExpConstant& c,
                            const ExpConstant::Window& window) {
  return random_detail::less_lazy(bits, window.lo, window.hi,
                         [&](std::uint64_t w) { return exp_constant_less(bits, w, c); });
}

}  // namespace dpstats
