// The discrete Gaussian N_Z(0, sigma^2) for large sigma by rejection from a binned envelope: the
// exact law of discrete_gaussian.hpp at about a quarter of the cost for the lattice mechanisms'
// sigma ~ 2^20 (docs/threat-model.md, "Binned discrete Gaussian", has the proof).
//
// Magnitudes m >= 0 are cut into bins [jB, (j + 1)B) of width B = 2^b (sigma/32 < B <= sigma/16).
// The proposal picks core bin j < K with a dyadic probability P_j / 2^64 from an exact alias
// table (one 64-bit word), or the tail (bins K + i, i ~ Geometric(1 - e^-1) by Bernoulli(e^-1)
// trials), or "reject"; then m = jB + r with r uniform on B values and a fair sign. Writing
// f(m) = exp(-m^2 / (2 sigma^2)), E_j = f(jB) and an integer scale D, the acceptance probability
//   core j:    f(m) D / P_j                      = C_j · exp(-r(2jB + r) / (2 sigma^2))
//   tail K+i:  f(m) D / (P_tail (1 - e^-1) e^-i) = C_tail · exp(-((m^2 - K^2 B^2)/(2σ^2) - i))
// with C_j = E_j D / P_j and C_tail = E_K D / (P_tail (1 - e^-1)), makes every accepted m have
// probability proportional to f(m) (times the sign's 1/2, with (negative, 0) rejected as in
// CKS20). P_j = ceil(D · e_j / 2^64) for a proven upper bound e_j >= 2^64 E_j makes C_j <= 1, and
// K >= sigma^2 / B^2 keeps the tail's exponent non-negative. The constants C are tried exactly
// (exp_constant.hpp), the exponentials by the exact BernoulliExp: nothing is rounded. In the core,
// where the in-bin exponent is at most 1/2, the whole acceptance C_j·exp(-delta) is one lazy
// comparison of a uniform against proven double bounds (a Taylor bracket of exp(-delta)), with the
// exact comparison against C_j·exp(-delta) = exp(-m^2/(2 sigma^2))·D/P_j when they do not decide.
// Magnitudes m >= 2^62 (acceptance probability below exp(-2^60)) are rejected without drawing, as
// in discrete_gaussian.hpp.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "dpstats/random/bernoulli.hpp"
#include "dpstats/random/exp_constant.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

class BinnedDiscreteGaussian {
 public:
  // True when sigma^2 = num/den >= 2^20 and den <= 2^32 (the integer ranges below rely on it).
  static bool eligible(std::uint64_t sigma2_num, std::uint64_t sigma2_den);
  // The tables for sigma^2 = num/den (eligible), built once per process and shared.
  static std::shared_ptr<const BinnedDiscreteGaussian> shared(std::uint64_t sigma2_num,
                                                             std::uint64_t sigma2_den);
  BinnedDiscreteGaussian(std::uint64_t sigma2_num, std::uint64_t sigma2_den);

  std::int64_t operator()(RandomBits& bits) const;

  // Inspection (tests, docs).
  int bin_bits() const { return bin_bits_; }
  std::size_t core_bins() const { return bins_.size(); }
  // The proposal's probability (units of 2^-64) of core bin j, of the tail, of "reject".
  std::uint64_t bin_weight(std::size_t j) const { return bins_[j].weight; }
  std::uint64_t tail_weight() const { return tail_weight_; }
  std::uint64_t reject_weight() const { return reject_weight_; }
  const ExpConstant& tail_constant() const { return tail_constant_; }
  const ExpConstant::Window& bin_window(std::size_t j) const { return bins_[j].window; }
  std::uint64_t bin_floor(std::size_t j) const { return floors_[j]; }

 private:
  struct Bin {
    std::uint64_t weight;        // P_j
    ExpConstant::Window window;  // 64-bit bounds on C_j = E_j D / P_j
    double c_lo, c_hi;           // doubles with c_lo <= C_j <= c_hi
  };
  static constexpr int kCellBits = 11;  // 2048 alias cells >= K + 2 outcomes

  std::int64_t tail(RandomBits& bits, std::uint64_t r) const;
  // The acceptance of m = jB + r once the uniform's first 64 bits w are at or above the floor.
  bool accept_above_floor(RandomBits& bits, std::size_t j, std::uint64_t r,
                          std::uint64_t w) const;

  std::uint64_t num_, den_;
  int bin_bits_;
  std::vector<Bin> bins_;
  // Per bin, <= 2^64 · min over the bin of the acceptance (E_{j+1} D / P_j). Apart from the
  // 64-byte bins: the common path reads only this 8 KiB array and the alias table, which then
  // stay in L1.
  std::vector<std::uint64_t> floors_;
  u128 scale_d_;  // D
  std::uint64_t tail_weight_, reject_weight_;
  ExpConstant tail_constant_;
  ExpConstant::Window tail_window_;
  std::vector<std::uint64_t> cell_threshold_;  // alias table: own outcome below the threshold
  std::vector<std::uint16_t> cell_alias_;
  BernoulliExp accept_;     // denominator 2 num
  double inverse_two_num_;  // fl(1 / fl(2 num)): 2 num is exact in a double only below 2^53
};

}  // namespace dpstats
