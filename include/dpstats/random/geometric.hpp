// Exact geometric samplers.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "dpstats/random/bernoulli.hpp"

namespace dpstats {

// Number of failures before the first success, P(G = k) = (1 - q) q^k with q = exp(-num/den).
// Exact; requires num >= 1, den >= 1. Returns min(G, 2^64 - 1): G itself is unbounded.
std::uint64_t geometric_exp(Rng& rng, std::uint64_t num, std::uint64_t den);
std::uint64_t geometric_exp(RandomBits& bits, std::uint64_t num, std::uint64_t den);

// floor(t · E) for E ~ Exponential(1) and t = t_num / t_den, i.e. geometric with ratio
// q = exp(-1/t) (P(floor(tE) >= k) = exp(-k/t)), clamped to 2^64 - 1. Exact; requires
// t_num >= 1, t_den >= 1. The building block of the discrete Laplace and Gaussian samplers.
std::uint64_t exponential_floor(RandomBits& bits, std::uint64_t t_num, std::uint64_t t_den);

// Number of failures before the first success of independent Bernoulli(q) trials,
// P(G = k) = q (1 - q)^k, for a double q in [2^-64, 1] taken exactly (a double is a dyadic
// rational): the gaps of a Poisson sample at rate q (docs/proofs/training.md §4). Exact, in
// O(log(1/q)) Bernoulli decisions: with r = 1 - q and K the least level with r^(2^K) <= 1/2,
// G = 2^K H + sum_{j<K} b_j 2^j where H is geometric with ratio r^(2^K) and the bits b_j are
// independent with P(b_j = 1) = r^(2^j) / (1 + r^(2^j)) (P(G = g) is proportional to r^g, which
// factors over the binary digits of g). Each Bernoulli(r^(2^j)) compares uniform bits with an
// interval [lo, hi] that holds r^(2^j) (repeated squaring of r, rounded down and up, at 128 bits),
// and refines the interval at 256, 512, ... bits in the rare case the bits fall inside it.
class GeometricTrials {
 public:
  explicit GeometricTrials(double q);
  // min(G, 2^64 - 1).
  std::uint64_t operator()(RandomBits& bits) const;
  double rate() const { return q_; }
  int levels() const { return levels_; }  // K

  // Bernoulli(r^(2^j)), exact, for 0 <= j <= K (exposed for tests).
  bool below_power(RandomBits& bits, int j) const;

 private:
  bool below_power_refined(RandomBits& bits, int j) const;
  double q_;
  int levels_ = 0;
  // lo and hi of r^(2^j) as 128-bit fractions, {low word, high word}, j = 0..K.
  std::vector<std::array<std::uint64_t, 2>> lo_, hi_;
};

}  // namespace dpstats
