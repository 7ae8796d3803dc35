// Data are row-major n x d doubles passed as Eigen views, so NumPy arrays cross without copies
// (design.md §3).
#pragma once
#include <Eigen/Core>

#include <cstdint>

namespace dpstats {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatrixRef = Eigen::Ref<const RowMatrix>;
using Vector = Eigen::VectorXd;

// Throws InvalidArgument if X is empty or holds a NaN/Inf (reports the first bad cell's position,
// never its value). The scan is vectorised (AVX2/AVX-512 chosen at run time) and runs on up to
// `threads` threads; the cell reported is the first in row order whatever the thread count.
void check_data(const ConstMatrixRef& X, const char* name = "X", int threads = 1);

// True when the `count` doubles at p are all finite (no NaN, no infinity); vectorised.
bool all_finite(const double* p, std::int64_t count);

}  // namespace dpstats
