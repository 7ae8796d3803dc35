// The private Tukey median (PRIME Alg. 14; docs/proofs/mean.md §9), d = 1 and the d = 2 grid:
// the exponential mechanism over a public grid of the box [lo, hi]^d with quality n·D_Tukey, the
// exact halfspace depth count of the candidate in the data, sampled exactly (permute-and-flip).
//
// Exactness: rows are clamped to the box and rounded to an integer lattice whose points include
// every grid candidate (a function of each row alone), so the depth is an exact integer computed
// with exact integer orientation tests; replacing one row moves every candidate's depth by at most
// 1, and the release is pure ε-DP. The run time is O(G^d · n log n) for G grid points per axis:
// exponential in d, as the paper says; d >= 3 is refused (exact depth is O(n^(d−1)) per point).
#pragma once
#include <cstdint>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"
#include "dpstats/run_control.hpp"

namespace dpstats {

struct TukeyMedianOptions {
  PrivacyTarget privacy;       // pure ε (δ is not used)
  RunControl run;              // run.noise only
  // The candidate box: one (lo, hi) pair for every column or one per column (public; the paper's
  // [−2R, 2R]^d). Required.
  std::vector<double> bounds;
  int grid = 0;                // points per axis, >= 2; 0: 4097 for d = 1, 129 for d = 2
};

// The exact depth count min over closed halfspaces H through p of |{i : x_i ∈ H}| for integer
// points (d = 1 or 2; rows of Q and p are integer lattice coordinates, |coordinate| < 2^30).
std::int64_t tukey_depth_count(const std::vector<std::int64_t>& Q, int d,
                               const std::int64_t* p);

// InvalidArgument for d outside {1, 2}, missing or bad bounds, grid < 2 or a grid beyond 2^20
// candidates.
Release<Vector> tukey_median(const ConstMatrixRef& X, const TukeyMedianOptions& o, Rng& rng,
                             Budget* budget = nullptr);

}  // namespace dpstats
