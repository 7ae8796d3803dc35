// AffineRows (data/affine_rows.hpp).
#include "dpstats/data/affine_rows.hpp"

#include <fmt/format.h>

#include <utility>

#include "dpstats/error.hpp"

namespace dpstats {

AffineRows::AffineRows(const ConstMatrixRef& X, Vector shift, Vector mult, double bound)
    : data_(X.data()),
      rows_(X.rows()),
      cols_(X.cols()),
      stride_(X.outerStride()),
      shift_(std::move(shift)),
      mult_(std::move(mult)),
      bound_(bound) {
  require(shift_.size() == cols_ && mult_.size() == cols_,
          fmt::format("AffineRows: shift and mult need {} values each, got {} and {}", cols_,
                      shift_.size(), mult_.size()));
  require(bound_ > 0, fmt::format("AffineRows: bound must be > 0, got {}", bound_));
}

RowMatrix AffineRows::materialise() const {
  RowMatrix Z(rows_, cols_);
  for (Eigen::Index i = 0; i < rows_; ++i) row(i, Z.row(i).data());
  return Z;
}

}  // namespace dpstats
