#include "dpstats/mean/clipped_sum.hpp"

#include <fmt/format.h>

#include "dpstats/error.hpp"
#include "dpstats/exact/exact_sum.hpp"

namespace dpstats {

double sum_quantum(std::int64_t n) { return exact::box_quantum(n); }

QuantisedSum quantised_clipped_sum(const ConstMatrixRef& X, const Vector& lower, double width,
                                   int threads, Communicator& comm, std::int64_t n) {
  const Eigen::Index d = X.cols();
  require(n > 0 && d > 0,
          fmt::format("X must have at least one row and one column, got {} x {}", n, d));
  require(lower.size() == d, fmt::format("lower bounds have length {}, data have {} columns",
                                         lower.size(), d));
  check_positive(width, "width (upper - lower)");
  for (Eigen::Index j = 0; j < d; ++j) check_finite(lower[j], "lower bound");
  QuantisedSum out;
  out.quantum = exact::box_quantum(n);
  out.lower = lower;
  out.width = width;
  exact::BoxSum s = exact::box_sum(X, lower, width, out.quantum, threads);
  all_or_none(comm, [&] {
    if (!s.finite) check_data(X);  // throws, naming the first bad cell of this rank's rows
  });
  out.sums = std::move(s.sums);
  allreduce_exact(comm, out.sums);
  return out;
}

QuantisedSum quantised_clipped_sum(const ConstMatrixRef& X, const Vector& lower, double width,
                                   int threads) {
  return quantised_clipped_sum(X, lower, width, threads, single_process(), X.rows());
}

Vector QuantisedSum::to_mean(const Vector& s, std::int64_t n) const {
  const double denom = static_cast<double>(n) * quantum;
  return lower.array() + width * (s.array() / denom);
}

}  // namespace dpstats
