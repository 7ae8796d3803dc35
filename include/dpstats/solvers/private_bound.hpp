// A public bound that the caller did not give (kind b of docs/guide.md "Public parameters"),
// estimated privately: the q-quantile of one nonnegative value per privacy unit (a user's row
// norm quantile, a record's worst-case gradient norm, ...). Scale-free: the values are read on a
// logarithmic grid covering [2^-100, 2^100] at 64 points per octave (cells 1.1% wide), so multiplying the data by
// any factor in that range moves the estimate by the same factor (docs/proofs/heavy-tailed.md
// "Unknown scale"). Pure epsilon-DP, sensitivity 1 when each unit contributes one value that
// depends on that unit alone. TODO(lead): switch to the scale layer's private_value_quantile
// (include/dpstats/scale/norm_quantile.hpp) once it is in main.
#pragma once
#include <span>
#include <string>

#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::optimize {

struct PrivateBound {
  double value = 0;   // the released bound (> 0)
  double epsilon = 0;
  double q = 0;
};

// The entry private_bound charges (planned before any noise is drawn).
LedgerEntry private_bound_entry(double epsilon, std::string purpose);

// The private q-quantile of `values` (finite, >= 0; zeros count as the grid's bottom), released
// at epsilon. Checks its arguments before drawing noise.
PrivateBound private_bound(std::span<const double> values, double q, double epsilon, Rng& rng);

}  // namespace dpstats::optimize
