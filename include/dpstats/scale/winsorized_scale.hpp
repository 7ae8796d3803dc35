// A private standard-deviation-like scale per column: the winsorised second moment around a
// given (private) location, calibrated to a Gaussian's standard deviation (issue #15;
// docs/proofs/scale.md §3). Complements the MAD of column_scale.hpp: for a skewed or
// heavy-tailed column the MAD is far below the standard deviation, while algorithms that assume
// covariance sigma^2 I (PRIME) or Sigma <= sigma^2 I (PRIME-ht) need sigma.
//
// Per column j, with a_i = |x_ij - location_j| (location public to this step: released before):
//  1. T = the upper end of the cell holding the q-quantile of a (grid_quantile_cell, pure
//     epsilon_c) on the log grid r_j·2^(i/per_octave), i = 0..octaves·per_octave, where r_j > 0
//     is the caller's reference scale (released before: the MAD of column_scale.hpp). A short
//     grid keeps the selection's rank error small; `reliable` is false when that rank error
//     (probability beta/d) exceeds (1 − q)/2 of the rows: the caller should not use the scale;
//  2. m = (sum_i min(a_i^2 / T^2, 1) + Laplace(1/epsilon_c)) / n, clamped to [0, 1]
//     (each term is in [0, 1]: sensitivity 1 under replace-one and add/remove);
//  3. winsorised scale = T sqrt(m / c(q)), c(q) = E min(Z^2, t^2) with P(|Z| <= t) = q, so
//     that the scale of N(mu, sigma^2) data is sigma (up to sampling and noise): T = t sigma
//     gives m = c(q) / t^2;
//  4. tail fraction: (#{a_i > R s_j} + Laplace(1/epsilon_c)) / n, s_j = the caller's final scale
//     (R = tail_radius, public): the mass beyond R scales, for the caller's model check.
// 3 pure-DP calls per column: epsilon_c = per_call_epsilon(loss, 3 d). Pure DP (and so
// epsilon_c^2/2-zCDP per call for a zcdp share).
#pragma once
#include <cstddef>
#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "dpstats/data/checked_rows.hpp"
#include "dpstats/data/matrix.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/seam.hpp"

namespace dpstats {

class Communicator;  // dpstats/comm/communicator.hpp

struct WinsorizedScaleOptions {
  PrivacyLoss loss = PrivacyLoss::pure(1);  // this step's share: pure epsilon or zcdp rho
  double q = 0.9;           // winsorising quantile of |x - location|, in [0.5, 0.99]
  double tail_radius = 3;   // R: the tail fraction counts rows beyond R final scales, in [1, 100]
  int per_octave = 32;      // log-grid points per octave, in [1, 1024]
  int octaves = 12;         // the grid spans reference·[1, 2^octaves], in [1, 64]
  double beta = 0.05;       // failure probability of the reliability statement, in (0, 1)
  int threads = std::min(default_threads(), 256);  // rows in parallel, in [1, 256]
  // The ranks holding the rows (null: this process alone): counts, the clip's selection and the
  // lattice sum are added exactly over ranks, noise is drawn on rank 0.
  Communicator* comm = nullptr;
};

struct WinsorizedColumn {
  double clip = 0;           // T
  double second_moment = 0;  // m (noisy, clamped to [0, 1])
  double scale = 0;          // T sqrt(m / c(q))
  double tail_fraction = 0;  // noisy fraction beyond tail_radius final scales, clamped to [0, 1]
  bool clip_at_end = false;  // T is the top of its grid (the q-quantile may lie beyond it)
};

struct WinsorizedScale {
  std::vector<WinsorizedColumn> columns;
  Ledger entries;
  double epsilon_per_call = 0;
  double noise_scale = 0;  // Laplace scale of the sum and of the count (before dividing by n)
  double rank_error = 0;   // the clip selection's rank error (probability beta/d)
  bool reliable = false;   // rank_error <= (1 − q) n / 2 (public: n, epsilon, grid, beta)
  // What reliability() judges: the rank check above (n public: the mean family's replace-one);
  // reliability() adds whether some column's clip is at the top of its grid.
  SelectionFacts facts;
  Vector scale() const;
  nlohmann::json diagnostics() const;
};

// E min(Z^2, t^2) with P(|Z| <= t) = q, Z standard normal.
double gaussian_winsorized_factor(double q);

// What winsorized_scale charges for d columns: 3 entries (quantile, sum, count), count d each.
Ledger winsorized_scale_entries(const WinsorizedScaleOptions& o, std::size_t d);

// `final_scale(j, winsorised scale_j, reliable)` gives the caller's scale of column j (e.g. the max with
// the MAD scale), from which the tail count's radius is set. Charges `account` the entries of
// winsorized_scale_entries first (all or nothing), then draws the noise. The rows are checked
// finite unless a CheckedRows vouches for them.
WinsorizedScale winsorized_scale(const RowsView& X, const Vector& location,
                                 const Vector& reference,
                                 const WinsorizedScaleOptions& o, ReleaseBudget& account,
                                 Rng& rng,
                                 const std::function<double(std::size_t, double, bool)>& final_scale);

}  // namespace dpstats
