// The exponential-time robust private mean (the PRIME paper's Alg 2; docs/proofs/mean.md §6) for
// d = 1, as a REFERENCE (docs/errata.md: never production code). Sub-Gaussian parameters.
//  1. Public n-check (Lemma H.11): n >= 3B ln(3/δ)/(εα√ln(1/α)), else abstain.
//  2. (x̄, B) = q_range(X, ε/3, δ/3); clip to [x̄ − B/2, x̄ + B/2].
//  3. Propose-test-release: R̂ = R(S) + Lap(3B/(nε)) (R has sensitivity B/n); abstain when
//     R̂ > τ_R·α√ln(1/α) (τ_R = 2, the paper's constant; D18 exposes it).
//  4. The exponential mechanism on μ̂ with score n·d(μ̂, S) = n·|m − μ̂| (m the 3α-trimmed mean;
//     sensitivity 12√ln(1/α) when R(S) <= 3α√ln(1/α), Lemma H.12) at ε/3 (D17: the paper's
//     exponent spends the full ε on top of the 2ε/3 already spent), sampled exactly with
//     permute-and-flip over a public grid of `grid` points on the clipping interval.
// R(S) = min_{S' ⊂ S, |S'| = (1−2α)|S|} max_{T ⊂ S', |T| = (1−α)|S'|} |μ(T) − μ(S')| is computed
// exactly by enumerating the removed sets, which is feasible only for tiny n (the n ≲ 20);
// beyond `max_subsets` it is an InvalidArgument. `window_resilience = true` replaces the minimum
// by the minimum over contiguous windows of the sorted data (an upper bound; its sensitivity is
// not proven), so such a release is certified: false — for accuracy comparisons only.
#pragma once
#include <concepts>
#include <optional>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/run_control.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats {

struct ExpTimeMeanOptions {
  PrivacyTarget privacy;             // delta > 0
  RunControl run;                    // run.noise only (the method is single-threaded)
  double alpha = 0.05;               // corrupted fraction bound, in (0, 1/6)
  // Data scale (one value): absent, estimated privately from scale_share of epsilon (kind b).
  std::optional<std::vector<double>> scale;
  // Absent: planned from n, d and the target (docs/proofs/scale.md §9); given: in (0, 0.5].
  std::optional<double> scale_share;
  double failure_probability = 0.1;  // q_range failure probability
  double resilience_threshold = 2;   // τ_R in R̂ <= τ_R α√ln(1/α) (D18)
  int grid = 4096;                   // exponential-mechanism candidates on the interval
  bool window_resilience = false;    // uncertified fast R (see above)
  double max_subsets = 2e6;          // exact R: at most this many removed sets
};

// The fields that shape the release, under the declared options' names where they are one
// (the mean's request is copied in by name, dpstats/option_fields.hpp).
template <class O, class V>
  requires std::same_as<std::remove_cvref_t<O>, ExpTimeMeanOptions>
void visit_fields(O&& o, V&& v) {
  v("epsilon", o.privacy.epsilon);
  v("delta", o.privacy.delta);
  v("noise", o.run.noise);
  v("alpha", o.alpha);
  v("scale", o.scale);
  v("scale_share", o.scale_share);
  v("failure_probability", o.failure_probability);
  v("resilience_threshold", o.resilience_threshold);
  v("grid", o.grid);
  v("uncertified_window", o.window_resilience);
  v("max_subsets", o.max_subsets);
}

// The exact resilience score R(S) of 1-D data (enumeration; throws when C(n, n − |S'|) exceeds
// max_subsets), and the contiguous-window upper bound.
double resilience_exact(std::span<const double> x, double alpha, double max_subsets = 2e6);
double resilience_window(std::span<const double> x, double alpha);
// The 3α-trimmed mean m of the distance score d(μ̂, S) = |m − μ̂| (the paper's Def. 4.3, d = 1).
double trimmed_mean_3alpha(std::span<const double> x, double alpha);

// X must have exactly one column (d = 1); otherwise an InvalidArgument.
Release<Vector> exp_time_mean(const ConstMatrixRef& X, const ExpTimeMeanOptions& o, Rng& rng,
                              Budget* budget = nullptr);

}  // namespace dpstats
