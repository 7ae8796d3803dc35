// Private iterative filtering (docs/proofs/mean.md §3: Alg 7 + DPfilter, Alg 8;
// the centralised form of Alg 1). Each round releases a noisy centre μ_t, a noisy spectral
// statistic λ_t and a noisy covariance whose top eigenvector v_t is the filter direction; points
// among the top k scores τ_i = (v_tᵀ(x_i − μ_t))² with τ_i >= D²·Z_t are removed, with one shared
// Z_t ~ U[0,1] (the data-independent threshold of Alg 8 line 5). It stops when λ_t is small and
// returns the centre. O(d) rounds in theory; each round costs one O(nd) score pass.
//
// Profiles (both (ε, δ)-DP for every input, replace-one with public n):
//  * paper: Alg 7 + 8 with the the paper's corrections: q_range(0.01ε, 0.01δ) and the box
//    x̄ + [−B/2, B/2]^d, B = 8σ√ln(dn/ζ) (D12); ε₁ = min(ε, 0.9)/(4√(2T ln(2/δ))), δ₁ = δ/(8T)
//    (Lemma G.13 over the 4T releases); the n-check; n_t = |S| + Lap(1/ε₁) with the 3n/4 rule;
//    μ_t with Gaussian noise of l2 sensitivity 2B√d/n (D6: the paper's Laplace scale lacks a
//    factor d) on the mean max(|S|, n/2) (equal to μ(S) whenever the size check passes), clamped
//    into the box (D10); λ_t = ‖M_t − I‖₂ + Lap(2B²d/(nε₁)) with the −I (D15); the covariance with
//    symmetric iid noise calibrated to the replace-one sensitivity 2B²d/n at δ₁ (D5); M_t is
//    centred at the released μ_t. Stop when λ_t <= (C − 0.01)α ln(1/α).
//  * practical: PRIME's practical front end (coarse range -> private medians -> l2 ball of
//    diameter D), zCDP accounting with secure Gaussians: μ_t (shrink-to-centre mean, D/(κn)),
//    λ_max(M_t − I) (D²/n), M_t with GOE-shaped noise (√2·D²/n in Frobenius norm), a final
//    shrink-to-centre mean; no size checks; stop at max(Cα ln(1/α), MP edge + 2σ_λ).
// Top-k: k = ⌈m α n⌉ (m = 2 is T_2α), value-based tie-breaking (docs/errata.md D8, P6). Rounds are recorded
// in PrimeTrace as FilterRound{centre μ_t, U = v vᵀ, ρ = D², Z_t, k} so that replay_filter
// reproduces the run (docs/proofs/mean.md).
#pragma once
#include <concepts>
#include <optional>
#include "dpstats/mean/prime.hpp"

namespace dpstats {

struct PrivateFilterOptions {
  PrivacyTarget privacy;      // delta > 0
  Profile profile = Profile::practical;
  RunControl run;
  double alpha = 0.05;        // upper bound on the corrupted fraction, in (0, 0.25]
  std::optional<std::vector<double>> scale;  // as PrimeOptions::scale
  std::optional<double> scale_share;         // as PrimeOptions::scale_share
  double clip_check_share = 0.01;            // as PrimeOptions::clip_check_share
  double failure_probability = 0.1;          // ζ of the range step, in (0, 1)
  int T = 0;                  // rounds; 0 = min(200, 2d + 20) (the theory's Θ̃(B²d) is unusable)
  double C = 2;               // stopping constant (docs/errata.md D20)
  double topk_multiplier = 2; // k = ⌈m α n⌉
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp).
template <class O, class V>
  requires std::same_as<std::remove_cvref_t<O>, PrivateFilterOptions>
void visit_fields(O&& o, V&& v) {
  visit_robust_fields(o, v);  // mean/prime.hpp
  v("T", o.T);
}

Release<Vector> private_filter(const ConstMatrixRef& X, const PrivateFilterOptions& o, Rng& rng,
                               Budget* budget = nullptr, PrimeTrace* trace = nullptr);

}  // namespace dpstats
