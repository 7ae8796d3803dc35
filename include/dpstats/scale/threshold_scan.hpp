// AboveThreshold over integer counts, exact on the integers: the scan behind the clipping bounds
// (clip_bounds.hpp; docs/proofs/scale.md §7). Dwork & Roth's Alg. 1 in the monotone form of
// Lyu, Su & Li 2017 (the counts of neighbouring datasets all move in the same direction).
//
// A public integer threshold T gets discrete Laplace noise rho of scale t = 2/epsilon once; each
// query k, an integer count f_k, gets fresh discrete Laplace noise nu_k of the same scale, and the
// scan halts at the first k with f_k + nu_k >= T + rho ("above"). Every count must have
// sensitivity 1 and be monotone: for neighbouring datasets either f_k(D) <= f_k(D') for every k or
// f_k(D) >= f_k(D') for every k (nested counts #{i : x_i in S_k} with S_1 ⊆ S_2 ⊆ ... are, under
// replace-one and add/remove). Then the whole scan is epsilon-DP however many queries it answers.
// The noise is exact (random/discrete_laplace.hpp's law): a query's outcome is the exact event
// nu_k >= T + rho - f_k, decided from the random bits it needs; t = t_num / 2^20 >= 2/epsilon.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

class ThresholdScan {
 public:
  // Checks epsilon and draws the threshold's noise.
  ThresholdScan(std::int64_t threshold, double epsilon, Rng& rng);
  ThresholdScan(const ThresholdScan&) = delete;
  ThresholdScan& operator=(const ThresholdScan&) = delete;

  // The next query: true when count + noise >= threshold + noise (then the scan has halted and
  // further queries throw InvalidArgument).
  bool above(std::int64_t count);
  bool halted() const { return halted_; }
  double noise_scale() const;  // t, of the threshold and of every query

  LedgerEntry ledger_entry(std::string purpose) const;
  // The entry a scan at this epsilon charges, before any data is read.
  static LedgerEntry entry(double epsilon, std::string purpose);
  // With probability >= 1 - beta, a scan of at most `steps` queries halts at a query whose count
  // is >= T - e, and at the latest at the first query whose count is >= T + e, where
  // e = t (ln(4/beta) + ln(4 steps/beta)) is returned (docs/proofs/scale.md §7).
  static double rank_error(double epsilon, std::size_t steps, double beta);

 private:
  std::uint64_t num_ = 0, den_ = 0;  // t = num / den
  double epsilon_;
  RandomBits bits_;
  __extension__ __int128 noisy_threshold_ = 0;
  bool halted_ = false;
};

}  // namespace dpstats
