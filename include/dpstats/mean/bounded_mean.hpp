// Bounded mean: every coordinate j is clipped to [lo_j, hi_j], summed exactly
// (mean/clipped_sum.hpp, on the column mapped affinely onto [0, 1]) and released with calibrated
// noise (docs/proofs/mean.md §5).
//   delta = 0: Laplace, pure ε-DP, l1 sensitivity d (in units of each column's width) / n.
//   delta > 0: Gaussian, (ε, δ)-DP, l2 sensitivity sqrt(d) (same units) / n.
// Bounds (kind b, docs/guide.md): `bounds` holds one (lo, hi) pair for every column or one pair
// per column; absent, each column's bounds are estimated privately by the scale layer's clipping
// bounds (scale/clip_bounds.hpp: about the 0.005- and 0.995-quantiles) from `scale_share` of the
// budget, and the release abstains with their reliability() reason when they are not usable
// (a column too short for the share, ...). Supplied bounds get a
// private count of the rows they clip (clip_check_share of the budget), stated in
// diagnostics["clipped"] with a warning when it exceeds 1% of the rows.
// Neighbouring: replace-one with public n.
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
#include "dpstats/scale/reliability.hpp"

namespace dpstats {

struct BoundedMeanOptions {
  PrivacyTarget privacy;  // delta = 0: Laplace (pure); delta > 0: Gaussian
  RunControl run;
  // {lo, hi} for every column, or {lo_1, hi_1, ..., lo_d, hi_d}; lo < hi, finite.
  std::optional<std::vector<double>> bounds;
  // Absent bounds: the share of the budget estimating them; absent, planned from n, d and the
  // target (docs/proofs/scale.md §9); given, in (0, 0.5].
  std::optional<double> scale_share;
  double clip_check_share = 0.01;  // supplied bounds: private clipped-row count, in [0, 0.1]
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp).
template <class O, class V>
  requires std::same_as<std::remove_cvref_t<O>, BoundedMeanOptions>
void visit_fields(O&& o, V&& v) {
  v("epsilon", o.privacy.epsilon);
  v("delta", o.privacy.delta);
  v("noise", o.run.noise);
  v("bounds", o.bounds);
  v("scale_share", o.scale_share);
  v("clip_check_share", o.clip_check_share);
}

Release<Vector> bounded_mean(const ConstMatrixRef& X, const BoundedMeanOptions& options, Rng& rng,
                             Budget* budget = nullptr);

// The rule's verdict on the rank errors of the private bounds planned at options.scale_share for
// n rows and d columns (public values only; the bounds' estimate abstains on the same rule), for a
// plan that chooses the share (scale/share.hpp; docs/proofs/scale.md §9).
Reliability planned_bounds_reliability(std::int64_t n, std::int64_t d,
                                       const BoundedMeanOptions& options);

}  // namespace dpstats
