// PRIME: robust and differentially private mean estimation (docs/proofs/mean.md,
// Alg 9-11, with its corrections D1-D20 and the measured practical profile
// docs/results/prime.md).
//
// Two profiles, both with a proven (ε, δ) guarantee for every input:
//  * practical (default): coarse q_range -> private coordinate-wise median -> projection onto an
//    l2 ball of public radius r around it (addendum, correction 1); sensitivities D²/n (λ_max, ψ),
//    √2·D²/n (M in Frobenius norm, GOE-shaped noise), D/(κn) for the shrink-to-centre mean
//    (no size checks needed); every release is a secure discrete Gaussian accounted in zCDP
//    (exact for the lattice sampler), the range histogram as δ-approximate zCDP; one-sided
//    λ_max(M − I) stopping; η = (ln d + 1)/λ; top-k with k = ⌈m·α·n⌉ (m = topk_multiplier,
//    2 = the paper's T_2α); one shared Z per round; value-based tie-breaking. A feasibility check
//    from public parameters only (docs/proofs/mean.md) replaces the filter by DP Mean when it predicts
//    noise-dominated filtering; the release says so.
//  * paper: the the paper's Alg 9/10/11 with its constants and corrections: box x̄ + [-B/2, B/2]^d with
//    B = 8σ√ln(dn/ζ), Laplace releases for λ, |S|, ψ, Gaussian for means, Σ (iid upper triangle)
//    and the score histogram, the paper's P9 noise scales, η = 1/(100(0.1/C + 1.01)λ),
//    two-sided ‖M − I‖₂, outer ε1 = ε_outer/(2T1+1) (D1), inner k = 6·T1·T2 mechanisms composed
//    by Lemma G.13 (with the D7 inner size check), basic accounting.
//
// Units (issue #15): the algorithm runs on z = (x − location)/scale per column. `scale` given:
// clean rows have covariance ⪯ diag(scale²) (one value = every column) and location = 0.
// `scale` absent: the substrate's scale layer (dpstats/scale/column_scale.hpp) estimates each
// column's location (private median) and scale (1.4826 × private MAD) from `scale_share` of the
// budget, charged up front with everything else; the estimate is mapped back to data units.
// docs/proofs/mean.md states how the two parts compose. Neighbouring: replace-one with public n.
// Non-private internals go to an optional PrimeTrace (tests only).
#pragma once
#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dpstats/data/checked_rows.hpp"
#include "dpstats/data/matrix.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/profile.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"
#include "dpstats/run_control.hpp"
#include "dpstats/test_hooks.hpp"

namespace dpstats {

using Matrix = Eigen::MatrixXd;

struct PrimeOptions {
  PrivacyTarget privacy;      // delta > 0 (Gaussian releases)
  Profile profile = Profile::practical;
  RunControl run;
  double alpha = 0.05;        // upper bound on the corrupted fraction, in (0, 0.25]
  // Data scale per column (one value = every column), > 0: clean covariance ⪯ diag(scale²).
  // Absent: estimated privately from scale_share of the budget (kind b, docs/guide.md).
  std::optional<std::vector<double>> scale;
  // Of the budget (ρ: practical, ε: paper); absent, planned from n, d and the target
  // (docs/proofs/scale.md §9); given, in (0, 0.5].
  std::optional<double> scale_share;
  // Supplied scale only: share spent on a private count of the rows the front end clips, so a
  // scale that is too small is reported (diagnostics["clipped"]); 0 switches the count off.
  double clip_check_share = 0.01;  // in [0, 0.1]
  double failure_probability = 0.1;  // ζ of the range steps, in (0, 1)
  double topk_multiplier = 2; // k = ⌈m α n⌉ candidates per filter round (docs/errata.md D8; addendum 9)
  int T1 = 0, T2 = 0;         // 0: profile default (practical 3 x 3; paper docs/proofs/mean.md auto rule)
  double C = 2;               // stopping constant (docs/errata.md D20)
  bool fallback = true;       // practical: DP Mean when the feasibility check predicts failure
  // PRIME-ht (docs/proofs/mean.md, Alg 3/16/17; see mean/prime_ht.hpp): clean rows only have bounded
  // covariance Σ ⪯ σ²I. Set by prime_ht().
  bool heavy_tailed = false;
};

// The fields the robust means' options share (PrimeOptions, PrivateFilterOptions), listed once.
template <class O, class V>
void visit_robust_fields(O&& o, V&& v) {
  v("epsilon", o.privacy.epsilon);
  v("delta", o.privacy.delta);
  v("profile", o.profile);
  v("noise", o.run.noise);
  v("alpha", o.alpha);
  v("scale", o.scale);
  v("scale_share", o.scale_share);
  v("clip_check_share", o.clip_check_share);
  v("failure_probability", o.failure_probability);
  v("topk_multiplier", o.topk_multiplier);
  v("C", o.C);
}

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp).
template <class O, class V>
  requires std::same_as<std::remove_cvref_t<O>, PrimeOptions>
void visit_fields(O&& o, V&& v) {
  visit_robust_fields(o, v);
  v("T1", o.T1);
  v("T2", o.T2);
  v("fallback", o.fallback);
  v("heavy_tailed", o.heavy_tailed);
}

// What the feasibility check predicts from public parameters only (docs/proofs/mean.md, addendum).
struct PrimeFeasibility {
  double radius = 0;            // practical: ball radius r (scale units); paper: box half-diagonal
  double diameter_sq = 0;       // D² of the clipping region (σ units)
  double sigma_noise_norm = 0;  // predicted spectral norm of one Σ_t noise matrix
  double lambda_noise = 0;      // std (Gaussian) or scale (Laplace) of λ
  double stop_threshold = 0;    // λ threshold at which the filter stops
  double reference_signal = 0;  // the smallest ‖M − I‖ signal the filter must act on
  double range_margin = 0;      // expected winning-bin count over the histogram threshold
  bool feasible = true;
  std::string reason;
};
PrimeFeasibility prime_feasibility(std::int64_t n, std::int64_t d, const PrimeOptions& o);

// One filter round's public parameters (docs/proofs/mean.md): enough to replay it.
struct FilterRound {
  Vector centre;   // μ_t (σ units, relative to the clipping centre), clamped into the region
  Matrix U;        // MMW weights (trace 1, PSD)
  double rho = 0;  // DPthreshold output
  double Z = 0;    // shared uniform
  std::int64_t k = 0;
  std::vector<double> factor;  // P (row-major d x d) with U = P Pᵀ as the run scored; optional
};

// Non-private internals, for tests only. TestHooks::noiseless switches every noise draw off (the
// test hook for "the same run with the noise switched off"; never reachable from the tool or
// Python); such a release is sealed certified = false. Units: the scale units the filter ran in.
struct PrimeTrace : TestHooks {
  Vector clip_centre;       // centre of the clipping region (data units)
  double clip_radius = 0;   // r (σ units) or B/2
  std::int64_t clipped_rows = 0;
  std::vector<FilterRound> rounds;          // every filter round that ran
  std::vector<std::int64_t> set_sizes;      // |S| after each round
  std::vector<double> true_lambda;          // noiseless statistic at each λ release
  std::vector<std::uint32_t> final_set;     // kept row indices at the end (sorted)
  RowMatrix processed;                      // the clipped, quantised data (σ units, centred)
  int epochs = 0, iterations = 0;
  std::string stop_reason;
};

Release<Vector> prime(const RowsView& X, const PrimeOptions& o, Rng& rng,
                      Budget* budget = nullptr, PrimeTrace* trace = nullptr);

// ---- primitives (unit-testable) ----

// U = exp(ηA)/tr exp(ηA) by eigendecomposition with the max-shift softmax (docs/errata.md P7).
Matrix mmw_weights(const Matrix& A, double eta);
// The same, returning the eigenvectors Q and weights w with U = Q diag(w) Qᵀ.
void mmw_weights(const Matrix& A, double eta, Matrix& Q, Vector& w);

// The k indices of S with the largest score, ties broken by the value-based lexicographic rule
// (the paper's Def. C.1: larger x_1 first, then x_2, ...); identical rows in index order. Sorted by rank.
std::vector<std::uint32_t> top_k_tiebreak(std::span<const float> score, const ConstMatrixRef& X,
                                          std::span<const std::uint32_t> S, std::int64_t k);

// One filter step with fixed public parameters (docs/errata.md P6): removes
// {i in Top_k(τ; S) : τ_i >= rho·Z}, τ_i = (x_i − centre)ᵀ U (x_i − centre). Returns the new S.
std::vector<std::uint32_t> filter_step(const FilterRound& p, const ConstMatrixRef& X,
                                       std::span<const std::uint32_t> S);
// Replays recorded rounds from S = [n] (docs/proofs/mean.md).
std::vector<std::uint32_t> replay_filter(std::span<const FilterRound> rounds,
                                         const ConstMatrixRef& X);

// DPthreshold's rule on (noisy) normalised bin masses h_j of bins [2^{j-3}, 2^{j-2}), j = 1..L
// (last bin open): the lower edge of the largest ℓ with Σ_{j>=ℓ}(τ̃_j − τ̃_ℓ)h_j >= 0.31·ψ̃, or
// the fallback 1/4 when none qualifies (docs/proofs/mean.md, D11).
double dp_threshold_rule(std::span<const double> h, double psi_tilde);
// Bin index j in 1..L of a score (0 when τ < 1/4).
int dp_threshold_bin(double tau, int L);

// M + symmetric Gaussian noise drawn by `g` (a secure vector mechanism of dimension d(d+1)/2).
// goe = true: iid noise on the Frobenius-isometric coordinates (M_aa, √2·M_ab, a < b), i.e.
// diagonal variance s², off-diagonal s²/2 (GOE shape; l2 sensitivity = Frobenius sensitivity).
// goe = false: iid on the upper triangle (M_ab), every variance s² (docs/errata.md D5, Lemma F.2).
// Exactly symmetric. `noiseless` returns M (test hook).
Matrix symmetric_noise_release(const Matrix& M, const GaussianMechanism& g, bool goe, Rng& rng,
                               bool noiseless = false);

// Non-private iterative filter (docs/proofs/mean.md, Alg 4) — a reference, not private.
Vector robust_filter_nonprivate(const ConstMatrixRef& X, double alpha, double C, Rng& rng,
                                int max_rounds = 0);

// Upper (1 − p) quantile of χ²_d, p in (0, 1) (regularised incomplete gamma + bisection).
double chi_square_upper_quantile(double d, double p);

}  // namespace dpstats
