// The mean family's one robust entry (issue 27 item 5; docs/proofs/mean.md §7b): `dpstats mean
// --alpha A` (method "robust", the default when alpha is given). The units of every column are
// estimated privately (mean/units.hpp, scale_share of the budget); their winsorised step's
// private count of the rows beyond 3 scales is the tail test: PRIME (mean/prime.hpp) when every
// column's count is within what the sub-Gaussian model allows, PRIME-ht (mean/prime_ht.hpp) when
// only within what bounded covariance allows, an abstention naming the column otherwise. Both
// methods' plans are checked to fit the budget before any noise is drawn; the units are charged
// first, the chosen method's entries after the test. diagnostics["robust"] states the counts,
// the allowances and the choice. Options: PrimeOptions, practical profile, with `scale` absent
// (the test needs the estimated units) and `heavy_tailed` ignored.
#pragma once
#include "dpstats/mean/prime.hpp"

namespace dpstats {

Release<Vector> robust_mean(const RowsView& X, const PrimeOptions& o, Rng& rng,
                            Budget* budget = nullptr);

}  // namespace dpstats
