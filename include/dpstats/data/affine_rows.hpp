// AffineRows: the rows of a matrix under a fixed per-column affine map, read on the fly instead of
// copied. Row i is z_ij = clamp((x_ij − shift_j) · mult_j, −bound, bound): the mean family's scale
// units (mean/units.hpp) without an n x d copy of the data (issue 21: PRIME's memory). A view:
// the matrix X must outlive it. row() evaluates the same expression in the same order wherever it
// is called, so a pass over the view sees bit for bit the values a materialised copy holds.
#pragma once
#include <algorithm>
#include <cstdint>

#include "dpstats/data/matrix.hpp"

namespace dpstats {

class AffineRows {
 public:
  AffineRows() = default;
  // shift and mult hold X.cols() values each; bound > 0 keeps a huge outlier finite.
  AffineRows(const ConstMatrixRef& X, Vector shift, Vector mult, double bound);

  Eigen::Index rows() const { return rows_; }
  Eigen::Index cols() const { return cols_; }
  // The untransformed matrix (for messages that name a bad cell of the input).
  Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>> source() const {
    return {data_, rows_, cols_, Eigen::OuterStride<>(stride_)};
  }

  // Row i mapped into out[0, cols()); returns out.
  const double* row(Eigen::Index i, double* out) const {
    const double* x = data_ + i * stride_;
    const double* a = shift_.data();
    const double* m = mult_.data();
    for (Eigen::Index j = 0; j < cols_; ++j) out[j] = value(x[j], a[j], m[j]);
    return out;
  }
  // One cell.
  double at(Eigen::Index i, Eigen::Index j) const { return map(j, data_[i * stride_ + j]); }
  // The map of column j applied to a value x of that column, and row i of X unmapped: for a
  // consumer that fuses the map into its own pass over the row.
  double map(Eigen::Index j, double x) const { return value(x, shift_[j], mult_[j]); }
  // The same without the clamp: equal to map(j, x) whenever |map(j, x)| < bound().
  double affine(Eigen::Index j, double x) const { return (x - shift_[j]) * mult_[j]; }
  double bound() const { return bound_; }
  const double* source_row(Eigen::Index i) const { return data_ + i * stride_; }
  // The mapped matrix (n x d): what a caller that needs it whole (or a test) holds.
  RowMatrix materialise() const;

 private:
  double value(double x, double a, double m) const { return std::clamp((x - a) * m, -bound_, bound_); }

  const double* data_ = nullptr;
  Eigen::Index rows_ = 0, cols_ = 0, stride_ = 0;
  Vector shift_, mult_;
  double bound_ = 0;
};

}  // namespace dpstats
