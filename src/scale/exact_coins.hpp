// Exact coins for the scale layer's selections and scans, fast where the probability is tiny
// (docs/proofs/scale.md §1c). Internal to src/scale.
//
// The scale layer's grids hold up to ~2^18 cells and its scans up to ~2^17 steps, almost all far
// from the data: their coins have probabilities below e^-44. bernoulli_exp_fast splits such a
// coin as Bernoulli(e^-44) AND Bernoulli(exp(-(gamma - 44))); the first factor is a fixed constant
// whose 64-bit window (random/exp_constant.hpp) decides it from about two random bits, so a far
// cell or step costs a few bits instead of a chain of Bernoulli(e^-1) trials. Every answer is
// exact: P(true) is exactly the stated probability.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "dpstats/random/rng.hpp"

namespace dpstats::scale_detail {

__extension__ typedef __int128 i128;

// Bernoulli(exp(-gamma)) for a finite double gamma >= 0.
bool bernoulli_exp_fast(RandomBits& bits, double gamma);
// Bernoulli(exp(-num / den)) for integers num >= 0, den >= 1 (den < 2^64).
bool bernoulli_exp_fast(RandomBits& bits, u128 num, u128 den);

// Permute-and-flip over candidates with acceptance probabilities exp(-gamma_i): candidates are
// visited in a uniformly random order and the first whose coin is true is returned. gamma_i >= 0
// finite, and some gamma_i == 0 (so the walk ends). The coins of candidates with gamma_i >= 44
// are drawn first, each as Bernoulli(e^-44) AND Bernoulli(exp(-(gamma_i - 44))); only those whose
// first factor is true (probability e^-44 each) join the walk. Coins are independent of the
// order, so this is exactly permute-and-flip (the order restricted to any subset is uniform).
std::size_t permute_and_flip_gaps(std::span<const double> gamma, RandomBits& bits);

// Permute-and-flip over cells given as runs of equal exponents: run r covers cells
// [first, first + length) whose acceptance probabilities are all exp(-gamma). The same law as
// permute_and_flip_gaps on the expanded cells; a long run of cells far from the data costs about
// one random bit per 32 cells (its coins are decided in bulk, exact_coins.cpp).
struct CellRun {
  std::size_t first = 0, length = 0;
  double gamma = 0;
};
std::size_t permute_and_flip_runs(std::span<const CellRun> runs, RandomBits& bits);

// Whether nu >= g for nu drawn from the discrete Laplace law P(y) ∝ exp(-|y| / t),
// t = num / den (num, den >= 1, below 2^64), exactly: the law of random/discrete_laplace.hpp (a
// fair sign and a magnitude Y with P(Y >= y) = exp(-y/t), (negative, 0) rejected), decided from
// the events it needs only.
bool discrete_laplace_at_least(RandomBits& bits, i128 g, u128 num, u128 den);

}  // namespace dpstats::scale_detail
