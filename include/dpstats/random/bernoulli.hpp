// Exact Bernoulli samplers: no floating-point rounding ever enters a decision. Doubles are used
// only as a fast pre-check whose error margin is proven; undecided cases fall back to exact
// integer arithmetic on the same uniform bits.
#pragma once
#include <cstdint>

#include "dpstats/random/rng.hpp"

namespace dpstats {

// Bernoulli(num / den), exact. Requires den >= 1 and num <= den.
bool bernoulli_rational(Rng& rng, u128 num, u128 den);

// Bernoulli(exp(-num / den)), exact (Canonne, Kamath & Steinke 2020, Alg. 1). Requires den >= 1.
bool bernoulli_exp(Rng& rng, u128 num, u128 den);

// Bernoulli(exp(-gamma)) for a finite double gamma >= 0, exact: a double is a dyadic rational.
// For gamma >= 2^127 the answer is false (the exact probability of true is below exp(-2^127)).
bool bernoulli_exp(Rng& rng, double gamma);

// The same samplers reading bits from a shared reader (the composite samplers use one reader
// per call, so that a 64-bit word serves many trials).
bool bernoulli_rational(RandomBits& bits, u128 num, u128 den);
bool bernoulli_exp(RandomBits& bits, u128 num, u128 den);
bool bernoulli_exp(RandomBits& bits, double gamma);
// Bernoulli(exp(-1)), the geometric building block, from a table of the exact digits of 1/k!.
bool bernoulli_exp_minus_one(RandomBits& bits);

// Bernoulli(exp(-num / den)) for a fixed den >= 1 and any num, with den's derived constants
// computed once: the composite samplers draw many trials against the same denominator.
class BernoulliExp {
 public:
  explicit BernoulliExp(u128 den);
  bool operator()(RandomBits& bits, u128 num) const;
  u128 den() const { return den_; }

 private:
  u128 den_;
  double reciprocal_;  // 1/den, relative error <= 2^-52 + 2^-63
  int chain_;          // how many terms gamma^k/k! are exact 128-bit fractions
};

}  // namespace dpstats
