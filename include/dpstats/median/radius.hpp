// Private quantile radius (docs/proofs/median.md §2): the scale r̂ of the data
// around its geometric median, found by AboveThreshold over the doubling grid r·2^(t−1).
//  * fast_radius: KLTY Alg. 2, exactly as printed: fresh k = ⌈3 ln(4T/δ)⌉ partners per (t, i),
//    threshold 0.775n, AboveThreshold with Δ = 3; (ε, δ)-DP (Lemma 5; δ covers the event that the
//    replaced index is drawn more than 2k times in one step).
//  * fast_radius_permuted (practical; "permutation design", docs/proofs/median.md §2): the partners of point i are
//    π_1(i), …, π_k(i) for k uniformly random permutations π_l of the rows (drawn independently
//    of the data), optionally on a data-independent subsample of m rows. Each row is then a
//    partner exactly k times and owns k pairs, so replacing one row changes at most 2k of the
//    m·k pair indicators: q_t = hits/k has sensitivity 2 with certainty, and AboveThreshold makes
//    the whole search pure ε-DP (no δ). Rows outside the subsample are never read. The m·k
//    distances are computed once and binned on the radius grid; q_t is then a cumulative count
//    (the same outputs as recomputing them per step).
//  * radius_finder: HSU24 Alg. 1 (public code): exact pairwise counts, Q_j = mean of the ⌈γn⌉
//    largest, threshold ⌈γn⌉ + (18/ε) ln(2T/β); pure ε-DP (Δ = 3). O(n² d).
// All three return a grid radius or the fallback (R for fast_radius, r_J for radius_finder), flagged.
#pragma once
#include <cstdint>

#include "dpstats/data/matrix.hpp"
#include "dpstats/median/row_shard.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

// Card §2.2 constants.
inline constexpr double kFastRadiusThreshold = 0.775;  // τ = 0.775 n (γ = 0.75)
inline constexpr double kFastRadiusSensitivity = 3;    // Δ of q_t on the good event (Lemma 5)
inline constexpr double kPermutedRadiusSensitivity = 2;
inline constexpr double kRadiusFinderSensitivity = 3;  // HSU24: 1 + n/m ≤ 3 for γ ≥ 1/2

struct RadiusResult {
  double r_hat = 0;
  int step = 0;              // 1-based grid step that passed; 0 when it fell back
  bool fell_back = false;    // no query passed (public: it is the AboveThreshold output)
  int grid_size = 0;         // T (fast radius) or J + 1 (radius finder)
  std::int64_t distance_evaluations = 0;
  LedgerEntry ledger;        // the privacy loss of the call
};

// The privacy loss each search charges (spend it before calling; the result carries it too).
LedgerEntry fast_radius_ledger(double epsilon, double delta);
LedgerEntry permuted_radius_ledger(double epsilon);
LedgerEntry radius_finder_ledger(double epsilon);

// T = ⌈log2(R/r)⌉ (≤ 0: returns R at no cost) and k = ⌈3 ln(4T/δ)⌉.
int fast_radius_steps(double r_min, double R);
int fast_radius_partners(int steps, double delta);

// Each grid step draws the query noise first and stops drawing partners once the noisy comparison
// is settled whatever the remaining partners are (the same outcome distribution as computing
// every partner's distance: docs/proofs/median.md §2, "Early decision"). `threads` counts each
// block of rows in parallel; the draws and the release do not depend on it.
RadiusResult fast_radius(const ConstMatrixRef& X, double r_min, double R, double epsilon,
                         double delta, Rng& rng, int threads = 1);

struct PermutedRadiusOptions {
  int permutations = 8;             // k
  std::int64_t subsample = 20000;   // m = min(n, subsample) rows, chosen independently of the data
  int threads = 1;                  // the k permutations' distances in parallel (same release)
  // The ranks holding the rows (issue 18): rank 0 draws the subsample's global ids, the ranks
  // send it those rows, and it searches (so rank 0 sees up to `subsample` rows of other ranks).
  RowShard shard;
};
RadiusResult fast_radius_permuted(const ConstMatrixRef& X, double r_min, double R, double epsilon,
                                  Rng& rng, const PermutedRadiusOptions& options = {});

// `threads` bins the n² pairs in parts of equal pair counts (merged exactly: the same release).
// With a shard (issue 18), X is this rank's rows: every rank receives every row (allgather; n·d
// words, small beside the O(n² d) pairs), bins the pairs of its P-th of the rows (cut by pair
// counts), the bins are added exactly over the ranks and rank 0 selects: the one-process release.
RadiusResult radius_finder(const ConstMatrixRef& X, double r_min, double R, double epsilon,
                           double beta, Rng& rng, double gamma = 0.75, int threads = 1,
                           const RowShard& shard = {});

}  // namespace dpstats
