// "DP Mean", the known-covariance baseline of the PRIME paper (docs/proofs/mean.md §4): half the budget finds a private range with q_range, the data are clipped to the
// box x̄ + [-B/2, B/2]^d (D12), and the other half releases their mean with Gaussian noise of l2
// sensitivity B·sqrt(d)/n (replace-one). Not robust: under an α-fraction of corruption its error
// is about α·‖μ_bad − μ‖.
#pragma once
#include <concepts>
#include <optional>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"
#include "dpstats/run_control.hpp"

namespace dpstats {

struct DpMeanOptions {
  PrivacyTarget privacy;     // delta > 0: the range step is a stability histogram
  RunControl run;
  // Data scale per column (one value = every column), > 0 (the paper's covariance is scale²·I).
  // Absent: estimated privately from scale_share of epsilon (kind b), and the data are run in
  // standard units z = (x − location)/scale.
  std::optional<std::vector<double>> scale;
  // Absent: planned from n, d and the target (docs/proofs/scale.md §9); given: in (0, 0.5].
  std::optional<double> scale_share;
  double clip_check_share = 0.01;  // supplied scale: private count of box-clipped rows; [0, 0.1]
  double failure_probability = 0.1;  // ζ of the range step (docs/proofs/mean.md §4)
  double range_share = 0.5;  // budget share of the range step (one half, as in the paper)
  // The corrupted fraction the estimated units' rank check must withstand, in [0, 0.25]: 0 for
  // DP Mean itself (not robust); PRIME's fallback passes the alpha its caller declared.
  double alpha = 0;
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp).
template <class O, class V>
  requires std::same_as<std::remove_cvref_t<O>, DpMeanOptions>
void visit_fields(O&& o, V&& v) {
  v("epsilon", o.privacy.epsilon);
  v("delta", o.privacy.delta);
  v("noise", o.run.noise);
  v("scale", o.scale);
  v("scale_share", o.scale_share);
  v("clip_check_share", o.clip_check_share);
  v("failure_probability", o.failure_probability);
  v("range_share", o.range_share);
  v("alpha", o.alpha);
}

// Abstains (the seam's convention) when the range step finds no populated bin in some
// coordinate or the scale layer cannot estimate a column's scale; the abstention is itself a
// private output. Not robust: diagnostics["robust"] is false and diagnostics state the most a
// fraction of corrupted rows can move the estimate (the clipping box's half side).
Release<Vector> dp_mean(const ConstMatrixRef& X, const DpMeanOptions& options, Rng& rng,
                        Budget* budget = nullptr);

}  // namespace dpstats
