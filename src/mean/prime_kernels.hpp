// Internal kernels of PRIME (not installed): the Gram update and the scores, the two O(n d²)
// passes, each with an AVX2 and a baseline version picked once at run time (the Gram update of
// the processed rows sums 4 x 8 tiles of G over blocks of rows; the scores are plain loops).
//  * gram_update is exact when every entry is an integer multiple of a power of two q with
//    |entry| <= 2^15 q and rows <= 2^23 (then every partial sum is an integer multiple of q² below
//    2^53 q²), so the summation order does not matter and downdates are exact.
//  * scores evaluate τ_i = ‖Pᵀ(x_i − μ)‖² with the same instruction sequence for every row, so
//    identical rows get identical scores wherever they sit (permutation invariance, docs/proofs/mean.md).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "clipped_rows.hpp"
#include "dpstats/data/matrix.hpp"

namespace dpstats::mean_detail {

// G (d x d, row-major, upper triangle used) += sign · Σ_{i in rows} x_i x_iᵀ; s += sign · Σ x_i.
// rows == empty span with all_rows = true means every row.
void gram_update(const ConstMatrixRef& X, std::span<const std::uint32_t> rows, bool all_rows,
                 double sign, double* G, double* s, int threads);

// The same on the filter's processed rows, recomputed block by block (clipped_rows.hpp): the
// same values, hence the same exact G and s.
void gram_update(const ClippedRows& Z, std::span<const std::uint32_t> rows, bool all_rows,
                 double sign, double* G, double* s, int threads);

// tau[r] = ‖Pᵀ(x_{rows[r]} − mu)‖², P row-major d x d. `cols` > 0 says that only the first
// `cols` columns of P are non-zero (the private filter's single direction): the result is
// bit-identical to the full product, at a fraction of the cost.
void scores(const ConstMatrixRef& X, std::span<const std::uint32_t> rows, const double* P,
            const double* mu, double* tau, int threads, int cols = 0);
// The same on the filter's processed rows (bit-identical scores: each row's score depends on its
// values alone).
void scores(const ClippedRows& Z, std::span<const std::uint32_t> rows, const double* P,
            const double* mu, double* tau, int threads, int cols = 0);

// The filter's removal set (docs/errata.md P6) on scores tau (indexed like S): every i with τ_i >= cut when
// there are at most k of them, else the k best by the value-based order (larger τ, then the
// lexicographically larger row, then the smaller index — only identical rows reach it).
std::vector<char> filter_drops(std::span<const double> tau, double cut, const ConstMatrixRef& X,
                               std::span<const std::uint32_t> S, std::int64_t k);
std::vector<char> filter_drops(std::span<const double> tau, double cut, const ClippedRows& Z,
                               std::span<const std::uint32_t> S, std::int64_t k);

}  // namespace dpstats::mean_detail
