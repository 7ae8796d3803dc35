// The whole scale layer as one release (what `dpstats bounds` and `dpstats.bounds` run): per-column
// location, scale and clipping bounds (column_scale.hpp) and, when asked, a quantile of row norms
// (norm_quantile.hpp), charged on one Budget (docs/proofs/scale.md §5).
//  * delta = 0: pure epsilon-DP, basic composition: the scale estimate gets (1 - norm_share)
//    epsilon and the norm quantile the rest.
//  * delta > 0: zCDP accounting of the (epsilon, delta) target: rho = epsilon_delta_to_zcdp, split
//    the same way (pays off for many columns: 3 d selections compose in sqrt(3 d), not 3 d).
#pragma once
#include <optional>

#include "dpstats/data/matrix.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/release.hpp"
#include "dpstats/run_control.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/norm_quantile.hpp"

namespace dpstats {

struct BoundsOptions {
  PrivacyTarget privacy;                // delta 0: pure; in (0, 1): zCDP accounting
  std::optional<double> norm_quantile;  // also release this quantile of row norms, in (0, 1)
  double norm_share = 0.25;             // its fraction of the budget, in (0, 1)
  bool norm_about_location = true;      // norms ||x_i - location|| (else ||x_i||)
  double widen = 4;
  double alpha = 0.05;
  double beta = 0.05;
  int per_octave = 32;
  Neighbouring neighbouring = Neighbouring::replace_one;
  RunControl run;                       // threads: columns estimated in parallel
};

struct Bounds {
  ScaleEstimate scale;
  std::optional<NormQuantile> norm;
};

// Release<Bounds>: estimate = the two estimates; diagnostics = their diagnostics (public values
// only) plus "all_ok"; ledger = the Budget's ledger. Abstains (reliability.hpp's rule: the
// reason names the column, the cause and what would suffice) when an estimate is not usable: a
// column with too few rows for the budget, (nearly) constant, or at the grid's end.
// `budget`: an optional caller's Budget the release is also charged against.
Release<Bounds> private_bounds(const ConstMatrixRef& X, const BoundsOptions& o, Rng& rng,
                               Budget* budget = nullptr);

}  // namespace dpstats
