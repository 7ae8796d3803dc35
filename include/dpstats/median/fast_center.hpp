// FastCenter (KLTY Alg. 3; docs/proofs/median.md §6): a subsampled,
// FriendlyCore-style weighted mean. Implemented as printed, for faithfulness and large-n use; the
// paper itself leaves it out of its experiments (docs/results/geometric-median.md: k = ⌈600 ln(18n/δ)⌉ exceeds n below
// n ≈ 10^4, the gate Z + ξ − L > 0.55n nearly always fails near n = 1000, and the noise σ is
// 1600 r̂ sqrt(ln(12/δ))/(nε) per coordinate).
//
// Privacy (Lemma 9) is proven for a continuous BoundedLaplace and a continuous Gaussian in exact
// arithmetic. Here the gate noise is the secure lattice Laplace of scale 24/ε conditioned on
// |ξ| ≤ L by rejection (the lattice analogue of Fact 3) and the centre noise is the secure
// Gaussian calibrated to (ε/2, δ/6) for sensitivity 400 r̂/n; the weighted mean is computed in
// floating point, whose rounding error grows with the (private) norms of the rows, which no
// public quantity bounds. No written proof covers exactly this, so its output is reported with
// `certified = false` by every release that uses it.
#pragma once
#include <cstdint>

#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

inline constexpr double kFastCenterSampleConstant = 600;   // k = ⌈600 ln(18n/δ)⌉
inline constexpr double kFastCenterGateScale = 24;         // BoundedLaplace(24/ε, (24/ε) ln(24/δ))
inline constexpr double kFastCenterGateFraction = 0.55;    // fail when Z + ξ − L ≤ 0.55 n
inline constexpr double kFastCenterNoiseConstant = 1600;   // σ = 1600 r̂ sqrt(ln(12/δ))/(nε)

struct FastCenterResult {
  Vector centre;          // 0_d when the gate failed
  bool failed = false;    // the gate's outcome (a DP output)
  double sigma = 0;       // the noise σ actually used (secure lattice Gaussian)
  std::int64_t k = 0;     // partners per row
  LedgerEntry ledger;     // (ε, δ) of Lemma 9
};

std::int64_t fast_center_partners(std::int64_t n, double delta);

// What fast_center(X, r_hat, epsilon, delta) spends for n rows: (ε, δ) of Lemma 9.
LedgerEntry fast_center_entry(std::int64_t n, double r_hat, double epsilon, double delta);

// Throws InvalidArgument for n < 20 (Lemma 9).
FastCenterResult fast_center(const ConstMatrixRef& X, double r_hat, double epsilon, double delta,
                             Rng& rng);

}  // namespace dpstats
