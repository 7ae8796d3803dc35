// The whole scale layer as one release (what `dpstats bounds` and `dpstats.bounds` run): per-column
// location, scale and clipping bounds (column_scale.hpp), when asked per-column clipping bounds
// designed to leave a fraction `coverage` of the rows outside (clip_bounds.hpp) and a quantile of
// row norms (norm_quantile.hpp), charged on one Budget (docs/proofs/scale.md §5).
//  * delta = 0: pure epsilon-DP, basic composition: the norm quantile gets norm_share of epsilon,
//    the clipping bounds clip_share, the scale estimate the rest.
//  * delta > 0: zCDP accounting of the (epsilon, delta) target: rho = epsilon_delta_to_zcdp, split
//    the same way (pays off for many columns: 3 d selections compose in sqrt(3 d), not 3 d).
#pragma once
#include <concepts>
#include <optional>

#include "dpstats/data/matrix.hpp"
#include "dpstats/names.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/release.hpp"
#include "dpstats/run_control.hpp"
#include "dpstats/scale/clip_bounds.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/norm_quantile.hpp"

namespace dpstats {

// What the row norms of the norm quantile are measured from.
enum class NormCentre { location, zero };  // the private location; the origin

template <>
struct EnumNames<NormCentre> {
  static constexpr std::string_view parameter = "norm_centre";
  static constexpr std::array<std::pair<NormCentre, std::string_view>, 2> names = {
      {{NormCentre::location, "location"}, {NormCentre::zero, "zero"}}};
};

struct BoundsOptions {
  PrivacyTarget privacy;                // delta 0: pure; in (0, 1): zCDP accounting
  std::optional<double> norm_quantile;  // also release this quantile of row norms, in (0, 1)
  double norm_share = 0.25;             // its fraction of the budget, in (0, 1)
  std::optional<double> coverage;       // also release clipping bounds for it, in (0, 0.5)
  double clip_share = 0.5;              // their fraction of the budget, in (0, 1)
  NormCentre norm_centre = NormCentre::location;  // norms ||x_i - location|| (zero: ||x_i||)
  double widen = 4;
  double alpha = 0.05;
  double beta = 0.05;
  int per_octave = 32;
  Neighbouring neighbouring = Neighbouring::replace_one;
  RunControl run;                       // threads: columns estimated in parallel
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp).
template <class O, class V>
  requires std::same_as<std::remove_cvref_t<O>, BoundsOptions>
void visit_fields(O&& o, V&& v) {
  v("epsilon", o.privacy.epsilon);
  v("delta", o.privacy.delta);
  v("norm_quantile", o.norm_quantile);
  v("norm_share", o.norm_share);
  v("coverage", o.coverage);
  v("clip_share", o.clip_share);
  v("norm_centre", o.norm_centre);
  v("widen", o.widen);
  v("alpha", o.alpha);
  v("beta", o.beta);
  v("per_octave", o.per_octave);
  v("neighbouring", o.neighbouring);
  v("noise", o.run.noise);
}

// The bounds' own declared options as a user gives them (absent: BoundsOptions' default). Listed
// once in visit_fields (dpstats/option_fields.hpp): the tool's flags, the Python keywords and
// the copy into BoundsOptions (copy_given) walk it.
struct BoundsRequest {
  std::optional<double> norm_quantile, norm_share;
  std::optional<NormCentre> norm_centre;
  std::optional<double> coverage, clip_share, widen, alpha, beta;
  std::optional<int> per_octave;
};

template <class R, class V>
  requires std::same_as<std::remove_cvref_t<R>, BoundsRequest>
void visit_fields(R&& r, V&& v) {
  v("norm_quantile", r.norm_quantile);
  v("norm_share", r.norm_share);
  v("norm_centre", r.norm_centre);
  v("coverage", r.coverage);
  v("clip_share", r.clip_share);
  v("widen", r.widen);
  v("alpha", r.alpha);
  v("beta", r.beta);
  v("per_octave", r.per_octave);
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
// `budget`: an optional caller's Budget the release is also charged against. In one process a NaN
// or infinite cell throws NonFiniteCell (data/non_finite_cell.hpp) before anything is charged.
Release<Bounds> private_bounds(const ConstMatrixRef& X, const BoundsOptions& o, Rng& rng,
                               Budget* budget = nullptr);

}  // namespace dpstats
