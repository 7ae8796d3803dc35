// Private quantile of row norms ||x_i - c||_2 on the nonnegative log grid, for clips and norm
// bounds (gradient / feature clip, median radius) with no public range (docs/proofs/scale.md §3).
// One pure-DP selection (grid_quantile.hpp) with the whole share; the released value is the
// upper end of the selected cell, so that it is a clip covering about a fraction q of the rows
// (the cell's relative width is <= 1/m).
// The centre c must be public or itself a private release (e.g. private_scale's location):
// then the norm of each row depends on that row alone and the count sensitivity is 1.
#pragma once
#include <algorithm>

#include "dpstats/parallel.hpp"
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>

#include "dpstats/data/matrix.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/reliability.hpp"

namespace dpstats {

class Communicator;  // dpstats/comm/communicator.hpp

struct NormQuantileOptions {
  PrivacyLoss loss = PrivacyLoss::pure(1);  // pure epsilon or zcdp rho
  double q = 0.9;                  // in (0, 1)
  std::optional<Vector> centre;    // public or private centre; none: ||x_i||
  double alpha = 0.05;             // tolerated corrupted fraction, in [0, 1)
  double beta = 0.05;              // failure probability, in (0, 1)
  int per_octave = 32;             // in [1, 1024]
  Neighbouring neighbouring = Neighbouring::replace_one;
  int threads = std::min(default_threads(), 256);  // for the norms, in [1, 256]
  // The ranks holding the rows or values (null: this process alone). Each rank passes its own
  // (possibly none); the selection counts every rank's norms or values (grid_quantile_cell's
  // ranks overload) and the release is the single-process one on the union of them.
  Communicator* comm = nullptr;
};

struct NormQuantile {
  double value = 0;               // the clip: upper end of the released cell
  double cell_lo = 0, cell_hi = 0;
  double q = 0;
  double rank_error = 0;          // exceeded with probability <= beta
  double epsilon = 0;
  ScaleStatus status = ScaleStatus::ok;  // read off `facts` (reliability.hpp)
  std::string reason;
  SelectionFacts facts;           // what reliability() judges
  Ledger entries;                 // what was charged
  nlohmann::json diagnostics() const;
};

// Checks options and data, charges private_norm_quantile_entries(o), then selects.
NormQuantile private_norm_quantile(const ConstMatrixRef& X, const NormQuantileOptions& o,
                                   ReleaseBudget& account, Rng& rng);

// The same for values the caller computed (per-row norms, gradient norms, ...): each row must
// contribute one value that depends on that row alone. `values` must be finite and >= 0, and hold
// at least one value (over every rank of o.comm).
NormQuantile private_value_quantile(std::span<const double> values, const NormQuantileOptions& o,
                                    ReleaseBudget& account, Rng& rng);

// The facts the quantile over n rows is judged on for its rank error, from public values only
// (as planned_scale_facts, column_scale.hpp). docs/proofs/scale.md §9.
SelectionFacts planned_norm_quantile_facts(const NormQuantileOptions& o, double n);

// What the quantile charges, whatever the data: under add/remove a count of the rows (n is
// private; its lower confidence bound is the n the rank check uses; 1/8 of the share), then the
// selection's grid_quantile entry.
Ledger private_norm_quantile_entries(const NormQuantileOptions& o);

}  // namespace dpstats
