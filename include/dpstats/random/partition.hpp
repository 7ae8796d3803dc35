// A uniformly random partition of rows into parts of public sizes (data-independent public
// randomness): q_range-ht's parts (mechanisms/range_ht.hpp) and boosting's (mean/boosted.hpp).
// Over ranks, rank 0 draws it for the global rows and gives every rank its rows' parts.
#pragma once
#include <cstdint>
#include <vector>

#include "dpstats/random/rng.hpp"

namespace dpstats {

// The part (0..m−1) of each of n rows: a uniformly random permutation π (Fisher–Yates, the draws
// of optimize::random_permutation), then part l holds the rows π(r), r in [n·l/m, n·(l+1)/m).
// Needs 1 <= m <= n.
std::vector<int> random_parts(std::int64_t n, int m, Rng& rng);

// The rows of each part in increasing row order (part[i] in [0, m) for every i).
std::vector<std::vector<std::int64_t>> rows_of_parts(const std::vector<int>& part, int m,
                                                     std::int64_t first = 0,
                                                     std::int64_t count = -1);

}  // namespace dpstats
