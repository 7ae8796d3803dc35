#include "dpstats/random/geometric.hpp"

#include <fmt/format.h>

#include "dpstats/error.hpp"

namespace dpstats {

std::uint64_t geometric_exp(RandomBits& bits, std::uint64_t num, std::uint64_t den) {
  if (!(num >= 1)) {
    throw InvalidArgument("geometric_exp: num must be >= 1, got 0");
  }
  if (!(den >= 1)) {
    throw InvalidArgument("geometric_exp: den must be >= 1, got 0");
  }
  // CKS20 Alg. 2's construction: X = U + den·V with U ∝ exp(-U/den) on {0, ..., den-1} (a uniform
  // accepted with probability exp(-U/den)) and V ~ Geometric(1 - e^-1) (Bernoulli(e^-1)
  // successes before a failure) has P(X = x) ∝ exp(-x/den); floor(X/num) then has
  // P(G = k) ∝ exp(-k num/den). Each piece is drawn exactly, from a constant expected number of
  // bits whatever the scale.
  const BernoulliExp accept(den);
  for (;;) {
    const std::uint64_t u = bits.uniform_below(den);
    if (!accept(bits, u)) continue;
    std::uint64_t v = 0;
    while (bernoulli_exp_minus_one(bits)) ++v;  // 2^64 successes would take centuries of draws
    const u128 x = u + static_cast<u128>(den) * v;
    const u128 g = x / num;
    return g > ~std::uint64_t{0} ? ~std::uint64_t{0} : static_cast<std::uint64_t>(g);
  }
}

std::uint64_t geometric_exp(Rng& rng, std::uint64_t num, std::uint64_t den) {
  RandomBits bits(rng);
  return geometric_exp(bits, num, den);
}

}  // namespace dpstats
