// The exact clipped sum behind every private mean: the box sum of the one exact sum
// (exact/exact_sum.hpp, docs/proofs/substrate.md §10) with the mean's checks.
//
// Summing doubles is not exact, so the floating-point sum of clipped values can move by more than
// its nominal sensitivity when one row changes (Casacuberta et al. 2022). Here each clipped value
// is quantised to an integer in [0, Q] — a deterministic function of that value alone — and the
// integers are summed exactly. Replacing one row then moves every coordinate's sum by at most Q,
// exactly. Q is the largest power of two with n·Q <= 2^53, so the sums are exact doubles too.
#pragma once
#include <cstdint>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/data/matrix.hpp"

namespace dpstats {

struct QuantisedSum {
  Vector sums;            // per coordinate, in units of width / quantum (exact integers)
  double quantum = 0;     // Q
  Vector lower;           // per-coordinate lower clip bound
  double width = 0;       // upper - lower, the same for every coordinate

  // Maps a (noisy) sum back to the mean scale: lower + width · s / (n · Q).
  Vector to_mean(const Vector& s, std::int64_t n) const;
};

// Largest power of two Q <= 2^40 with n·Q < 2^53 (exact::box_quantum).
double sum_quantum(std::int64_t n);

// Clips coordinate j of every row to [lower_j, lower_j + width] and sums the quantised values.
// Validates X in the same pass: throws InvalidArgument (naming the first NaN/Inf cell) before
// returning anything.
QuantisedSum quantised_clipped_sum(const ConstMatrixRef& X, const Vector& lower, double width,
                                   int threads = 1);

// The same over ranks (comm/communicator.hpp): X is this rank's rows (possibly none) and `n` the
// rows of all ranks; Q = box_quantum(n) and the integer sums are added exactly over ranks, so
// every rank gets the sums the single-process call returns on all rows. Every rank calls it.
QuantisedSum quantised_clipped_sum(const ConstMatrixRef& X, const Vector& lower, double width,
                                   int threads, Communicator& comm, std::int64_t n);

}  // namespace dpstats
