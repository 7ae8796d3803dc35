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
#include <functional>
#include <span>

#include "dpstats/random/exp_constant.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::scale_detail {

__extension__ typedef __int128 i128;

// A cell whose exponent is at least this is "far" in permute_and_flip_runs: its coin is decided as
// Bernoulli(e^-22) AND Bernoulli(exp(-(gamma - 22))), the first factor in bulk over a stretch of
// far cells, and the cell's own exponent is read only when that factor comes true.
constexpr double kFarGamma = 22;

// Bernoulli(exp(-gamma)) for a finite double gamma >= 0.
bool bernoulli_exp_fast(RandomBits& bits, double gamma);
// Bernoulli(exp(-num / den)) for integers num >= 0, den >= 1 (den < 2^64).
bool bernoulli_exp_fast(RandomBits& bits, u128 num, u128 den);

// The index of the first true coin among `count` independent coins Bernoulli(2^-k · c) (16 < k
// <= 32; c the constant, <= 1), or `count`: each is "the next k bits are all 0, then Bernoulli(c)
// on fresh bits", read 64 bits at a time (exact_coins.cpp).
std::size_t first_true(RandomBits& bits, std::size_t count, int k, const ExpConstant& c,
                       const ExpConstant::Window& window);

// Permute-and-flip over candidates with acceptance probabilities exp(-gamma_i): candidates are
// visited in a uniformly random order and the first whose coin is true is returned. gamma_i >= 0
// finite, and some gamma_i == 0 (so the walk ends). The coins of candidates with gamma_i >= 44
// are drawn first, each as Bernoulli(e^-44) AND Bernoulli(exp(-(gamma_i - 44))); only those whose
// first factor is true (probability e^-44 each) join the walk. Coins are independent of the
// order, so this is exactly permute-and-flip (the order restricted to any subset is uniform).
std::size_t permute_and_flip_gaps(std::span<const double> gamma, RandomBits& bits);

// Permute-and-flip over cells given as runs of equal exponents: run r covers cells
// [first, first + length) whose acceptance probabilities are all exp(-gamma). The same law as
// permute_and_flip_gaps on the expanded cells; a long stretch of cells far from the data costs
// about one random bit per 32 cells (the coins of consecutive far runs are decided in bulk, as
// one stretch, exact_coins.cpp). A far run may leave its cells' exponents unknown (`exact`
// false, `gamma` a lower bound >= kFarGamma): only a cell whose e^-22 factor comes true (about
// one in 2^31) needs its own, which `exact_gamma(cell)` gives. The bits read, hence the cell, are
// those of the same call with every exponent known.
struct CellRun {
  std::size_t first = 0, length = 0;
  double gamma = 0;
  bool exact = true;
};
std::size_t permute_and_flip_runs(std::span<const CellRun> runs, RandomBits& bits,
                                  const std::function<double(std::size_t)>& exact_gamma = {});

// Whether nu >= g for nu drawn from the discrete Laplace law P(y) ∝ exp(-|y| / t),
// t = num / den (num, den >= 1, below 2^64), exactly: the law of random/discrete_laplace.hpp (a
// fair sign and a magnitude Y with P(Y >= y) = exp(-y/t), (negative, 0) rejected), decided from
// the events it needs only.
bool discrete_laplace_at_least(RandomBits& bits, i128 g, u128 num, u128 den);

}  // namespace dpstats::scale_detail
