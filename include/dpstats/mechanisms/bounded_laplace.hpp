// The bounded lattice Laplace (docs/proofs/median.md §6): xi ~ discrete Laplace of integer scale t
// conditioned on |xi| <= tau, added to an integer query of integer sensitivity K < tau. It is
// (K/t, delta)-DP with delta = P(|xi| > tau - K) / P(|xi| <= tau) (the lattice Fact 3), and its
// noise is bounded, so a threshold test on it (FastCenter's gate) is exact in integers.
#pragma once
#include <cstdint>
#include <string>

#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

class BoundedLaplaceMechanism {
 public:
  // InvalidArgument unless 1 <= scale < 2^56 and 1 <= sensitivity < bound < 2^62.
  BoundedLaplaceMechanism(std::int64_t scale, std::int64_t bound, std::int64_t sensitivity);

  // One draw of xi (rejection: the number of tries does not depend on the data).
  std::int64_t noise(Rng& rng) const;

  std::int64_t noise_scale() const { return scale_; }
  std::int64_t bound() const { return bound_; }
  std::int64_t sensitivity() const { return sensitivity_; }
  // delta, rounded up by a relative 1e-9 (exp is faithful to an ulp).
  double delta() const { return delta_; }
  PrivacyLoss loss() const;  // (K/t rounded up, delta)
  LedgerEntry ledger_entry(std::string purpose) const;  // mechanism "bounded_laplace"

 private:
  std::int64_t scale_, bound_, sensitivity_;
  double delta_;
};

}  // namespace dpstats
