#include "dpstats/data/matrix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "dpstats/data/non_finite_cell.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"

namespace dpstats {

// An OR of "exponent all ones" over the bits (NaN and infinity, nothing else), which vectorises;
// cloned for AVX-512 and AVX2 so a portable build uses them where the CPU has them.
__attribute__((target_clones("avx512f", "avx2", "default")))
bool all_finite(const double* p, std::int64_t count) {
  constexpr std::uint64_t kExp = 0x7FF0000000000000ULL;
  std::uint64_t bad = 0;
  for (std::int64_t k = 0; k < count; ++k) {
    std::uint64_t bits;
    std::memcpy(&bits, p + k, 8);
    bad |= static_cast<std::uint64_t>((bits & kExp) == kExp);
  }
  return bad == 0;
}

namespace {

// The first non-finite cell of rows [begin, end) as (row, column), or row = -1.
std::pair<Eigen::Index, Eigen::Index> first_bad(const ConstMatrixRef& X, Eigen::Index begin,
                                                Eigen::Index end) {
  constexpr Eigen::Index kBlock = 256;  // rows checked at once when they are contiguous
  const Eigen::Index d = X.cols();
  const bool contiguous = X.outerStride() == d;
  for (Eigen::Index b = begin; b < end; b += kBlock) {
    const Eigen::Index e = std::min(end, b + kBlock);
    if (contiguous && all_finite(X.row(b).data(), (e - b) * d)) continue;
    for (Eigen::Index i = b; i < e; ++i) {
      const double* row = X.row(i).data();
      if (all_finite(row, d)) continue;
      for (Eigen::Index j = 0; j < d; ++j)
        if (!std::isfinite(row[j])) return {i, j};
    }
  }
  return {-1, -1};
}

}  // namespace

void check_data(const ConstMatrixRef& X, const char* name, int threads) {
  require(X.rows() > 0 && X.cols() > 0,
          fmt::format("{} must have at least one row and one column, got {} x {}", name, X.rows(),
                      X.cols()));
  std::vector<std::pair<Eigen::Index, Eigen::Index>> bad(
      static_cast<std::size_t>(std::max(threads, 1)), {-1, -1});
  parallel_ranges(X.rows(), std::max(threads, 1), 1 << 14,
                  [&](int p, std::int64_t b, std::int64_t e) {
                    bad[static_cast<std::size_t>(p)] = first_bad(X, b, e);
                  });
  for (const auto& [i, j] : bad) {
    if (i >= 0)
      throw NonFiniteCell(
          fmt::format("{} has a NaN or infinite value at row {}, column {}", name, i + 1, j + 1), i,
          j);
  }
}

}  // namespace dpstats
