// Internal: lazy comparison of a uniform u = 0.b1 b2 ... (bits from RandomBits) against a
// number p known through integer bounds lo <= p·2^64 <= hi. Shared by the exact Bernoulli
// samplers (bernoulli.cpp) and the binned discrete Gaussian.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>

#include "dpstats/random/rng.hpp"

namespace dpstats::random_detail {

constexpr std::uint64_t kMax64 = ~std::uint64_t{0};

// How many leading bits of u certify a comparison, given its first 64 bits w.
//  * w < lo certifies u < lo·2^-64 from the first bit where w and lo differ (w has 0 there):
//    every continuation of that prefix stays below lo.
//  * w >= hi certifies u >= hi·2^-64 from the first bit where w and hi differ (w has 1), or from
//    the end of hi's nonzero bits if w starts with all of them.
// Each count depends only on the bits it covers (a stopping time), so the bits left unread are
// independent of every answer given so far.
inline int bits_below(std::uint64_t w, std::uint64_t lo) { return std::countl_zero(w ^ lo) + 1; }
inline int bits_above(std::uint64_t w, std::uint64_t hi) {
  const int through_hi = 64 - std::countr_zero(hi);  // 0 when hi = 0: nothing to read
  return w == hi ? through_hi : std::min(std::countl_zero(w ^ hi) + 1, through_hi);
}

// u < p given integers lo <= p·2^64 <= hi (hi may be 2^64 or more). Undecided (lo <= w < hi):
// all 64 bits are consumed and `exact` decides from them.
template <class Exact>
bool less_lazy(RandomBits& bits, std::uint64_t lo, u128 hi, Exact&& exact) {
  const std::uint64_t w = bits.peek64();
  if (w < lo) {
    bits.consume(bits_below(w, lo));
    return true;
  }
  if (hi <= kMax64 && w >= static_cast<std::uint64_t>(hi)) {
    bits.consume(bits_above(w, static_cast<std::uint64_t>(hi)));
    return false;
  }
  bits.consume(64);
  return exact(w);
}

}  // namespace dpstats::random_detail
