// Data are row-major n x d doubles passed as Eigen views, so NumPy arrays cross without copies
// (design.md §3).
#pragma once
#include <Eigen/Core>

namespace dpstats {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatrixRef = Eigen::Ref<const RowMatrix>;
using Vector = Eigen::VectorXd;

// Throws InvalidArgument if X is empty or holds a NaN/Inf (reports the first bad cell's position,
// never its value).
void check_data(const ConstMatrixRef& X, const char* name = "X");

}  // namespace dpstats
