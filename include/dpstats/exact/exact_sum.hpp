// The one exact sum of the library: rows quantised onto an integer lattice, added exactly in
// integers (docs/proofs/substrate.md §10).
//
// Summing doubles is not exact, so the floating-point sum of clipped values can move by more than
// its nominal sensitivity when one row changes (Casacuberta et al. 2022). Every private sum in the
// library (the mean family's clipped sums, the statistics' sums, the median's unit gradients, the
// solvers' clipped gradients) maps each value to a lattice value — a deterministic function of its
// own row — rounds it to the nearest integer and adds the integers exactly. This header owns the
// pieces every such sum is built from, so that the arithmetic exists once:
//   * the lattice conventions: `box_quantum` (values clipped into [0, Q]) and `ball_bits`
//     (norm-clipped vectors on the grid 2^-b), with `ball_lattice_sensitivity`;
//   * the per-value quantisers `box_value`, `unit_value`, `ball_factor`;
//   * the integer accumulation `add` / `total` (round-half-even to an integer, added to a 64-bit
//     word that wraps; the offset is removed at the end, so the sum is exact);
//   * `row_sums`, the parallel driver (parallel_ranges, one accumulator per part, merged by
//     integer addition: the result does not depend on the thread count or the row order), which
//     owns the overflow checks;
//   * `box_sum`, the fused kernel of the coordinate-clipped sum (clip, quantise, add and the
//     NaN/Inf check in one pass), and `BallSum`, the streaming sum of norm-clipped vectors.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"

namespace dpstats::exact {

// Adding 1.5·2^52 to v, |v| <= 2^51, rounds v to the nearest integer k (ties to even, the default
// rounding mode, never changed here; no fast-math in this build), and the result lies in
// [2^52, 2^53), where consecutive doubles are consecutive bit patterns: bits(v + 1.5·2^52) =
// bits(1.5·2^52) + k. Adding the bit patterns modulo 2^64 and removing terms·bits(1.5·2^52) at the
// end leaves the exact integer sum (two's complement), with no float-to-integer conversion in the
// loop (so the loop vectorises).
constexpr double kRound = 0x1.8p52;
inline constexpr std::uint64_t kRoundWord = std::bit_cast<std::uint64_t>(kRound);
// The largest lattice value one term may have (the rounding above is exact up to it).
constexpr double kMaxTerm = 0x1p51;
// The largest exact integer sum (also an exact double).
constexpr double kMaxSum = 0x1p53;

// round(v) (to nearest, ties to even) as a double, for |v| <= kMaxTerm: the same rounding as add.
inline double nearest(double v) { return (v + kRound) - kRound; }

// Adds round(v) to the accumulator word. |v| <= kMaxTerm.
inline void add(std::uint64_t& word, double v) { word += std::bit_cast<std::uint64_t>(v + kRound); }

// The exact integer sum held by a word after `terms` calls of add.
inline std::int64_t total(std::uint64_t word, std::int64_t terms) {
  return static_cast<std::int64_t>(word - static_cast<std::uint64_t>(terms) * kRoundWord);
}

// --- Lattice conventions -------------------------------------------------------------------------

// Coordinate clipping: each term is in [0, Q]. Q is the largest power of two <= 2^40 with
// n·Q < 2^53 (n < 2^bit_width(n)), so every partial sum is an exact integer below 2^53.
double box_quantum(std::int64_t n);

// Norm clipping to c: each term is round(2^b·v_j/c) with ‖v‖ <= c(1 + (d+4)·2^-52) after the
// floating-point clip, so |term| < 2^(b+1); b = min(30, 52 − bit_width(n)) (at least 1) keeps
// n·2^(b+1) <= 2^53 (n < 2^bit_width(n)).
int ball_bits(std::int64_t n);

// l2 distance between the integer sums of two inputs that differ in one vector, on the grid 2^b:
// two clipped vectors of norm <= 2^b(1 + (d+4)·2^-52), plus half a step of rounding per
// coordinate for each: 2(1 + (d+4)·2^-52)·2^b + √d.
double ball_lattice_sensitivity(std::int64_t d, int bits);

// --- Per-value quantisers (a lattice value; `add` rounds it) -------------------------------------

// x clipped to [lower, lower + width], mapped to [0, width·scale] (scale = Q / width).
inline double box_value(double x, double lower, double width, double scale) {
  return std::min(std::max(x - lower, 0.0), width) * scale;
}

// u clipped to [0, 1], mapped to [0, Q].
inline double unit_value(double u, double Q) { return std::clamp(u, 0.0, 1.0) * Q; }

// The factor that maps a vector of l2 norm `norm` to the grid 2^b, clipped to norm `clip`:
// v_j·ball_factor is the lattice value of coordinate j.
inline double ball_factor(double norm, double clip, double grid) {
  return grid / std::max(clip, norm);
}

// --- The parallel driver --------------------------------------------------------------------------

// Exact sums of `width` lattice columns over rows [0, n). kernel(part, begin, end, words) must call
// add(words[c], v) exactly once per column c for every row in [begin, end), with |v| <= bound
// (the caller's lattice convention guarantees it). Keep the kernel's loop bounds in locals of the
// kernel: a store to a 64-bit word may alias a captured integer, which stops the compiler from
// vectorising the loop. The rows are cut by parallel_ranges into at
// most `threads` parts of >= 65,536 rows (part in [0, threads)), each with its own words; the
// parts are merged by integer addition, so the result is independent of the thread count and of
// the order of the rows.
// Refuses (InvalidArgument) before reading a row when a term or a sum could leave the exact range:
// bound > 2^51 or n·bound >= 2^53. Returns the sums as doubles (exact integers).
template <class Kernel>
Vector row_sums(std::int64_t n, Eigen::Index width, double bound, int threads, Kernel&& kernel) {
  require(n >= 0 && width >= 1, "exact sum: needs n >= 0 rows and at least one column");
  require(bound >= 0 && bound <= kMaxTerm,
          "exact sum: a term of magnitude up to {} is beyond the exact range 2^51", bound);
  require(static_cast<double>(n) * bound < kMaxSum,
          "exact sum: {} terms of magnitude up to {} could reach 2^53", n, bound);
  constexpr std::int64_t kGrain = 65536;
  const int parts = static_cast<int>(
      std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(1, n / kGrain)));
  const auto w = static_cast<std::size_t>(width);
  std::vector<std::uint64_t> words(static_cast<std::size_t>(parts) * w, 0);
  parallel_ranges(n, parts, kGrain, [&](int p, std::int64_t begin, std::int64_t end) {
    kernel(p, begin, end, words.data() + static_cast<std::size_t>(p) * w);
  });
  Vector out(width);
  for (std::size_t c = 0; c < w; ++c) {
    std::uint64_t s = 0;
    for (int p = 0; p < parts; ++p) s += words[static_cast<std::size_t>(p) * w + c];
    out[static_cast<Eigen::Index>(c)] = static_cast<double>(total(s, n));
  }
  return out;
}

// --- The two sums every capability uses -----------------------------------------------------------

struct BoxSum {
  Vector sums;          // per coordinate, in units of width / quantum (exact integers)
  bool finite = true;   // false when a cell of X is NaN or infinite (the sums are then meaningless)
};

// Coordinate j of every row clipped to [lower_j, lower_j + width], quantised with
// box_value(·, ·, width, Q / width) (for a width so small that Q / width overflows, in two exact
// steps through a power of two) and summed exactly; the NaN/Inf check runs in the same pass.
// Q = box_quantum(X.rows()). One fused pass over row-major data (cloned for AVX2 where the CPU
// has it), no allocation beyond the accumulators.
BoxSum box_sum(const ConstMatrixRef& X, const Vector& lower, double width, double Q,
               int threads = 1);

// A streaming exact sum of up to `capacity` vectors of dimension d, each clipped to l2 norm
// `clip`, on the grid 2^-b with b = ball_bits(capacity). One term per coordinate per add.
class BallSum {
 public:
  BallSum(std::int64_t d, double clip, std::int64_t capacity);
  void add(const Eigen::Ref<const Vector>& v);
  // Adds another sum of the same (d, clip, capacity) by integer addition: the result equals adding
  // both sums' vectors to one BallSum, in any order (how a parallel pass merges its parts).
  void merge(const BallSum& other);
  // The exact integer sums (lattice units: multiply by clip·2^-b for value units).
  Vector lattice_sum() const;
  std::int64_t count() const { return count_; }
  std::int64_t dimension() const { return d_; }
  std::int64_t capacity() const { return capacity_; }
  int bits() const { return bits_; }
  double clip() const { return clip_; }

 private:
  std::int64_t d_, capacity_, count_ = 0;
  double clip_;
  int bits_;
  std::vector<std::uint64_t> words_;
};

}  // namespace dpstats::exact
