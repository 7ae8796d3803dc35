// q_range-ht: private range of data with bounded covariance (PRIME §2.3, Alg 15, from [54];
// docs/proofs/substrate.md §8). The rows are split uniformly at random into m disjoint parts; q_range
// (Alg 5, mechanisms/range.hpp) with bins of scale `bin_sigma` runs on each part, and the
// coordinate-wise median of the part centres is x̂. B = B_const/√α; the algorithms project onto
// Ball(x̂, √d·B/2).
//
// Accounting: the paper gives every part (ε/m, δ/m) and composes basically (the conservative
// reading, `parallel = false`). The parts are disjoint, so parallel composition lets every part
// use the full (ε, δ) (`parallel = true`); under replace-one only one part changes. Either way
// the partition is public randomness independent of the data, and a part that abstains is a
// private output: the median is over the parts that returned a range (post-processing); when
// none did, q_range_ht abstains.
#pragma once
#include <Eigen/Core>
#include <optional>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/mechanisms/range.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

struct RangeHtOptions {
  double epsilon = 1;
  double delta = 1e-6;
  double alpha = 0.05;      // corruption bound (sets B)
  double sigma = 1;         // covariance bound: Σ ⪯ σ²I
  double zeta = 0.1;        // failure probability
  int partitions = 0;       // m; 0 = the paper's ⌈200 ln(2/ζ)⌉ (PRIME §3; docs/errata.md)
  double bin_sigma = 40;    // q_range's σ per part, in units of σ (Alg 15: 40)
  double B_const = 50;      // B = B_const·σ/√α (Alg 15: 50)
  bool parallel = false;    // full (ε, δ) per part by parallel composition (not the paper's split)
  bool paper_cap = true;    // per part: Lemma G.13 with the 0.9 cap (q_range's paper rule)
};

struct RangeHtResult {
  Eigen::VectorXd centre;   // x̂
  double side = 0;          // B
  double ball_radius = 0;   // √d·B/2
  int partitions = 0;       // m
  int failed = 0;           // parts whose q_range abstained (a private count)
  LedgerEntry entry;        // = q_range_ht_entry(o, d)
};

// The number of parts m for these options (public).
int q_range_ht_partitions(const RangeHtOptions& o);
// What q_range_ht charges for d coordinates (one folded entry, whether or not it abstains).
LedgerEntry q_range_ht_entry(const RangeHtOptions& o, std::size_t d);
// std::nullopt when every part abstained. Needs at least 2 rows per part.
std::optional<RangeHtResult> q_range_ht(const ConstMatrixRef& X, const RangeHtOptions& o, Rng& rng);

// The pieces of q_range_ht, also for rows spread over ranks (rank 0 draws the partition and
// releases; mean/ranks.cpp): each part's q_range options; the uniformly random partition of n
// rows into m parts of public sizes, as the part of every row (the draws q_range_ht makes first);
// the coordinate-wise median of the parts' centres (std::nullopt when no part returned one).
RangeOptions q_range_ht_part_options(const RangeHtOptions& o);
std::vector<int> q_range_ht_parts(std::int64_t n, const RangeHtOptions& o, Rng& rng);
std::optional<RangeHtResult> q_range_ht_median(const std::vector<Eigen::VectorXd>& centres,
                                               int failed, const RangeHtOptions& o,
                                               Eigen::Index d);

}  // namespace dpstats
