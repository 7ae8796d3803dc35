// Internal: rigorous bounds on exp(-p/q) with arbitrary-precision integers (Boost.Multiprecision
// cpp_int, header-only). Every value is an interval [lo, hi] of integers at a stated binary scale
// 2^F that provably contains 2^F times the real number: floors round lower bounds, ceilings round
// upper bounds, and all quantities are non-negative, so products and quotients of bounds are
// bounds. Used by exp_constant.cpp and binned_discrete_gaussian.cpp (construction and the rare
// exact fallbacks), never on the common sampling path.
#pragma once
#include <boost/multiprecision/cpp_int.hpp>

#include "dpstats/random/rng.hpp"

namespace dpstats::random_detail {

using Big = boost::multiprecision::cpp_int;

struct Interval {
  Big lo, hi;
};

Big to_big(u128 x);
inline u128 to_u128(const Big& x) {  // requires 0 <= x < 2^128
  return (static_cast<u128>(static_cast<std::uint64_t>(x >> 64)) << 64) |
         static_cast<std::uint64_t>(x & Big(~std::uint64_t{0}));
}
Big ceil_div(const Big& x, const Big& d);
// x·y at scale 2^scale for x, y at that scale.
Interval multiply(const Interval& x, const Interval& y, unsigned scale);
// exp(-r/q) for 0 <= r <= q, q >= 1, at scale 2^scale.
Interval exp_series(const Big& r, const Big& q, unsigned scale);
// exp(-p/q) for p >= 0, q >= 1, at scale 2^scale.
Interval exp_minus(const Big& p, const Big& q, unsigned scale);

}  // namespace dpstats::random_detail
