// q_range: private coarse range of sub-Gaussian data (PRIME Alg 5, from Karwa-Vadhan / [58]). For each coordinate, a stability histogram over bins of width
// 2σ picks the most populated bin; its centre is x̄_j (docs/errata.md, PRIME D13). The per-coordinate
// budget comes from composition over d coordinates with the best valid rule (pitfall 4.3; the
// paper profile uses Lemma G.13 with the 0.9 cap). Returns the centre and the public box side
// B = 8σ sqrt(ln(d n / ζ)), or abstains when every bin of some coordinate was suppressed.
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dpstats/data/affine_rows.hpp"
#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/composition.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

struct RangeOptions {
  double epsilon = 1;
  double delta = 1e-6;
  double sigma = 1;    // known scale of the data
  double zeta = 0.1;   // failure probability of the range step
  bool paper_cap = false;  // Lemma G.13 with min(ε, 0.9) (paper profile) instead of the best rule
};

struct RangeResult {
  Eigen::VectorXd centre;  // x̄
  double side = 0;         // B: the box is x̄ + [-B/2, B/2]^d
  LedgerEntry entry;       // one folded entry for the d histograms (= q_range_entry(o, d))
};

// std::nullopt when the range step abstains (every bin of some coordinate suppressed). Either
// outcome is private.
std::optional<RangeResult> q_range(const ConstMatrixRef& X, const RangeOptions& o, Rng& rng);

// The same release with the per-coordinate budget given (q_range_coordinate_budget(o, d): it
// costs ~1 ms, so a driver that repeats one plan caches it) and `threads` threads for the
// passes: the same counts, handed to the histograms in the same order, hence the same draws
// whatever the thread count. result.entry is left empty (the caller charged the plan's entry).
std::optional<RangeResult> q_range(const ConstMatrixRef& X, const RangeOptions& o,
                                   const EpsilonDelta& per, Rng& rng, int threads);
// The same on rows read through a view: identical to q_range on view.materialise().
std::optional<RangeResult> q_range(const AffineRows& X, const RangeOptions& o,
                                   const EpsilonDelta& per, Rng& rng, int threads);

// The two halves of q_range, for rows spread over ranks (comm/communicator.hpp): the occupied
// bins (bin, count) of each coordinate in increasing bin order -- exact counts, so the bins of
// several ranks' rows merge by adding counts -- and the release from the bins of all n rows
// (the d stability histograms and the box side). q_range is q_range_release(q_range_bins(X)).
using RangeBins = std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>;
RangeBins q_range_bins(const ConstMatrixRef& X, double sigma, int threads);
// The same on rows read through a view (data/affine_rows.hpp): the bins of its mapped values,
// without a copy of the data.
RangeBins q_range_bins(const AffineRows& X, double sigma, int threads);
std::optional<RangeResult> q_range_release(const RangeBins& bins, std::int64_t n,
                                           const RangeOptions& o, const EpsilonDelta& per,
                                           Rng& rng);

// The reason to abstain when a released range cannot be used: some coordinate's centre lies
// 2^52 sigma or more from zero, where a double no longer resolves one bin (x/(2 sigma) is coarser
// than 1) and where the bins clamp (±2^62). The data then sit far beyond what sigma can describe
// (typically a supplied scale far too small for the data's magnitude). std::nullopt otherwise. A
// function of the released centre only: post-processing, so private (issue #21 "silent clamp").
std::optional<std::string> range_beyond_reason(const Eigen::VectorXd& centre, double sigma);

// The per-coordinate histogram budget (ε', δ') for d coordinates: δ' = δ/(2d), and ε' from
// Lemma G.13 with the 0.9 cap (paper_cap) or per_step_epsilon (docs/proofs/substrate.md §8).
EpsilonDelta q_range_coordinate_budget(const RangeOptions& o, std::size_t d);

// The entry q_range charges for d coordinates, whether it returns a range or abstains: the d
// histograms folded into one entry whose loss is their composed (ε, δ) (count = 1, because Budget
// multiplies a loss by count, i.e. composes basically; the purpose names d and the per-coordinate
// budget).
LedgerEntry q_range_entry(const RangeOptions& o, std::size_t d, std::string purpose = "q_range");

}  // namespace dpstats
