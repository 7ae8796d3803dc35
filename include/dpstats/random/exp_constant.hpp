// Exact Bernoulli trials against a transcendental constant
//   c = exp(-p/q) · (a/b) · (1 / (1 - e^-1))^k,  k ∈ {0, 1},  0 < c <= 1,
// the acceptance constants of the binned discrete Gaussian (binned_discrete_gaussian.hpp).
// c is known to any precision through proven integer bounds lo <= 2^P·c <= hi, computed with
// arbitrary-precision integers (alternating Taylor series with floor/ceil at every step, so the
// bounds are rigorous, not estimates). A trial compares a uniform u with a 64-bit window first and
// reads further words of u, against tighter bounds, only while u and c agree on every bit known:
// the answer is exactly "u < c", so P(true) = c with no rounding anywhere.
#pragma once
#include <cstdint>
#include <vector>

#include "dpstats/random/rng.hpp"

namespace dpstats {

struct ExpConstant {
  u128 p = 0, q = 1;  // exponent p/q >= 0, q >= 1
  u128 a = 1, b = 1;  // rational factor a/b > 0, b >= 1
  bool over_one_minus_inv_e = false;  // divide by 1 - e^-1

  // Integers lo <= 2^bits · c <= hi (bits >= 1), as 64-bit words, most significant first,
  // each ceil(bits/64) + 1 words long (hi may reach 2^bits when c is close to 1).
  void bounds(unsigned bits, std::vector<std::uint64_t>& lo, std::vector<std::uint64_t>& hi) const;

  // lo <= 2^64 c <= hi (hi may be 2^64 or more).
  struct Window {
    std::uint64_t lo;
    u128 hi;
  };
  Window window() const;
};

// u < c, exactly, for a uniform u whose first 64 bits w have already been consumed from `bits`;
// further words of u are read only while undecided (probability at most 2^-(P-1) of going
// past precision P), so it terminates with probability one.
bool exp_constant_less(RandomBits& bits, std::uint64_t w, const ExpConstant& c);

// Bernoulli(c) with c's 64-bit window computed once.
bool bernoulli_exp_constant(RandomBits& bits, const ExpConstant& c, const ExpConstant::Window& w);

}  // namespace dpstats
