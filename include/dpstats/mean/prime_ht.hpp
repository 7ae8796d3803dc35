// PRIME-ht: robust private mean under bounded covariance only (docs/proofs/mean.md; the
// paper's §2.3 and §2.8: Alg 3 with DPMMWfilter-ht (Alg 16) and DPthreshold-ht (Alg 17)). Clean rows have
// mean μ and covariance Σ ⪯ σ²I, nothing else; the target error is O(σ√α).
//
// It is PRIME's driver (mean/prime.hpp) with the heavy-tail changes of Alg 16/17:
//  * the −I is dropped: λ = λ_max(M) (practical) or ‖M‖₂ (paper), ψ = ⟨M, U⟩, ψ̃ = (1/n)Σ τ;
//  * stop when λ <= C (paper; C = 2 by default), practical: λ <= max(C, 1 + MP edge + 2σ_λ);
//  * inner break at λ_t <= (2/3)λ^(s); paper η = 1/(100(0.1/C + 1.05)λ), practical (ln d + 1)/λ;
//  * paper: no T_2α restriction (every i with τ_i >= ρZ is removed) and the histogram noise with
//    Alg 17's extra √d (D16); practical keeps the top-k cap k = ⌈m α n⌉ (privacy-neutral);
//  * range: paper = q_range-ht (Alg 15: m = 200 ln(2/ζ) parts, bins 40σ, median of the part
//    centres, B = 50σ/√α, Ball(x̂, √d·B/2)); practical = PRIME's coarse range and private
//    medians, then a ball of radius sqrt(2d/α)·σ + √d·e_med (Markov: at most α/2 of the clean rows
//    are clipped in expectation; a clipped clean row acts like one more corrupted row).
// Privacy, sensitivities and accounting are PRIME's (the clipping region's diameter D enters every
// sensitivity); the feasibility check and the DP Mean fallback work the same way.
#pragma once
#include "dpstats/mean/prime.hpp"

namespace dpstats {

// `o.heavy_tailed` is ignored (always on). Data need not be whitened exactly: Σ ⪯ σ²I suffices.
Release<Vector> prime_ht(const RowsView& X, PrimeOptions o, Rng& rng,
                         Budget* budget = nullptr, PrimeTrace* trace = nullptr);

}  // namespace dpstats
