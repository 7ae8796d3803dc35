// ClippedRows (clipped_rows.hpp).
#include "clipped_rows.hpp"

#include <fmt/format.h>

#include <utility>

#include "dpstats/error.hpp"

namespace dpstats::mean_detail {

ClippedRows::ClippedRows(AffineRows units, Vector centre, bool ball, double radius, double q,
                         std::vector<double> factor, bool within_bound)
    : units_(std::move(units)),
      centre_(std::move(centre)),
      ball_(ball),
      within_bound_(within_bound),
      radius_(radius),
      q_(q),
      inv_q_(1 / q),  // exact: q is a power of two
      factor_(std::move(factor)) {
  require(centre_.size() == units_.cols(),
          fmt::format("ClippedRows: centre has {} values for {} columns", centre_.size(),
                      units_.cols()));
  require(ball_ ? std::ssize(factor_) == units_.rows() : factor_.empty(),
          fmt::format("ClippedRows: {} clip factors for {} rows", factor_.size(), units_.rows()));
}

// Cloned for AVX2 (no FMA: the clone cannot contract a product into a sum, so it rounds exactly
// as the portable one does) and the baseline; the kernels call it once per block of rows.
__attribute__((target_clones("avx2", "default")))
void ClippedRows::rows_into(const std::uint32_t* idx, std::int64_t b, std::int64_t e,
                            double* out) const {
  const Eigen::Index d = cols();
  for (std::int64_t r = b; r < e; ++r) {
    const std::int64_t i = idx ? static_cast<std::int64_t>(idx[r]) : r;
    row(i, out + (r - b) * d);
  }
}

RowMatrix ClippedRows::materialise() const {
  RowMatrix Z(rows(), cols());
  for (Eigen::Index i = 0; i < rows(); ++i) row(i, Z.row(i).data());
  return Z;
}

}  // namespace dpstats::mean_detail
