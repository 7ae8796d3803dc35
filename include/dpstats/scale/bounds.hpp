// The whole scale layer as one release (what `dpstats bounds` and `dpstats.bounds` run): per-column
// location, scale and clipping bounds (column_scale.hpp), when asked per-column clipping bounds
// designed to leave a fraction `coverage` of the rows outside (clip_bounds.hpp) and a quantile of
// row norms (norm_quantile.hpp), charged on one Budget (docs/proofs/scale.md §5).
//  * delta = 0: pure epsilon-DP, basic composition: the norm quantile gets norm_share of epsilon,
//    the clipping bounds clip_share, the scale estimate the rest.
//  * delta > 0: zCDP accounting of the (epsilon, delta) target: rho = epsilon_delta_to_zcdp, split
//    the same way (pays off for many columns: 3 d selections compose in sqrt(3 d), not 3 d).
#pragma once
#include <optional>

#include "dpstats/data/matrix.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/release.hpp"
#include "dpstats/run_control.hpp"
#include "dpstats/scale/clip_bounds.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/norm_quantile.hpp"

namespace dpstats {

struct BoundsOptions {
  PrivacyTarget privacy;                // delta 0: pure; in (0, 1): zCDP accounting
  std::optional<double> norm_quantile;  // also release this quantile of row norms, in (0, 1)
  double norm_share = 0.25;             // its fraction of the budget, in (0, 1)
  std::optional<double> coverage;       // also release clipping bounds for it, in (0, 0.5)
  double clip_share = 0.5;              // their fraction of the budget, in (0, 1)
  bool norm_about_location = true;      // norms ||x_i - location|| (else ||x_i||)
  double widen = 4;
  double alpha = 0.05;
  double beta = 0.05;
  int per_octave = 32;
  Neighbouring neighbouring = Neighbouring::replace_one;
  RunControl run;                       // threads: columns estimated in parallel
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp).
template <class V>
void visit_fields(const BoundsOptions& o, V& v) {
  v("epsilon", o.privacy.epsilon);
  v("delta", o.privacy.delta);
  v("norm_quantile", o.norm_quantile);
  v("norm_share", o.norm_share);
  v("coverage", o.coverage);
  v("clip_share", o.clip_share);
  v("norm_centre", o.norm_about_location);
  v("widen", o.widen);
  v("alpha", o.alpha);
  v("beta", o.beta);
  v("per_octave", o.per_octave);
  v("neighbouring", o.neighbouring);
  v("noise", o.run.noise);
}

struct Bounds {
  ScaleEstimate scale;
  std::optional<ClipBounds> clip;
  std::optional<NormQuantile> norm;
};

// Release<Bounds>: estimate = the estimates; diagnostics = their diagnostics (public values
// only) plus "all_ok"; ledger = the Budget's ledger. Abstains (reliability.hpp's rule: the
// reason names the column, the cause and what would suffice) when an estimate is not usable: a
// column with too few rows for the budget, or at the grid's end. A (nearly) constant column is
// released with status "degenerate" (scale 0, bounds = location -/+ resolution) and a warning.
// `budget`: an optional caller's Budget the release is also charged against.
Release<Bounds> private_bounds(const ConstMatrixRef& X, const BoundsOptions& o, Rng& rng,
                               Budget* budget = nullptr);

}  // namespace dpstats
