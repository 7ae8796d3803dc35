// Exact sums of norm-clipped vectors in value units (docs/proofs/substrate.md §10): the ball sum
// of the one exact sum (exact/exact_sum.hpp, docs/proofs/substrate.md §10) with its
// sensitivity in value units.
//
// Floating-point sums are not exact, so the computed sum of clipped vectors can move by more
// than the nominal 2c when one vector is replaced. Each clipped vector v (‖v‖ <= c up to
// (d+4)·2^-52 relative) is scaled by 2^b/c and rounded coordinate-wise to integers, and the
// integers are added exactly (b = exact::ball_bits(k) = min(30, 52 − ⌈log2(k+1)⌉) for k vectors,
// so every partial sum stays below 2^53). Replacing one vector moves the integer sum by at most
// exact::ball_lattice_sensitivity = 2·(1 + (d+4)·2^-52)·2^b + sqrt(d) in l2. The sum is returned
// as integers × (c·2^-b), one multiplication with relative error 2^-53 per coordinate, covered by
// an absolute slack k·c·2^-50. `sensitivity` is the resulting l2 sensitivity of the returned sum,
// and that is what the Gaussian is calibrated to.
#pragma once
#include <cstdint>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/exact/exact_sum.hpp"

namespace dpstats::optimize {

class ClippedVectorSum {
 public:
  // Up to `capacity` vectors of dimension d, each clipped to l2 norm `clip` (> 0).
  ClippedVectorSum(std::int64_t d, double clip, std::int64_t capacity);
  // Clips v to norm clip and adds its quantised form.
  void add(const Vector& v);
  // Adds another sum of the same (d, clip, capacity) exactly (a parallel pass's parts).
  void merge(const ClippedVectorSum& other) { sum_.merge(other.sum_); }
  // The sum of the quantised clipped vectors, in value units.
  Vector sum() const;
  // The exact integer sums behind sum() (lattice units; exact doubles below 2^53). Partial sums
  // of the same (d, clip, capacity) over disjoint rows (threads, ranks) add exactly in any order
  // as long as the rows together stay within capacity; value_of maps their total to sum()'s units.
  Vector lattice_sum() const;
  Vector value_of(const Vector& lattice) const;
  // l2 sensitivity of sum() when one added vector is replaced (any k <= capacity).
  double sensitivity() const;
  std::int64_t count() const { return sum_.count(); }
  double clip() const { return sum_.clip(); }

 private:
  exact::BallSum sum_;
};

}  // namespace dpstats::optimize
