#include "dpstats/data/matrix.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"

namespace dpstats {

void check_data(const ConstMatrixRef& X, const char* name) {
  require(X.rows() > 0 && X.cols() > 0,
          fmt::format("{} must have at least one row and one column, got {} x {}", name, X.rows(),
                      X.cols()));
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const double* row = X.row(i).data();
    for (Eigen::Index j = 0; j < X.cols(); ++j) {
      if (!std::isfinite(row[j])) {
        throw InvalidArgument(fmt::format("{} has a NaN or infinite value at row {}, column {}",
                                          name, i + 1, j + 1));
      }
    }
  }
}

}  // namespace dpstats
