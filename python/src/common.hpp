// Shared by the binding files (one per capability: module.cpp holds the substrate and the means;
// bind_<topic>.cpp files add their functions through bind_<topic>(py::module_&)).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>

#include "dpstats/data/matrix.hpp"
#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"
#include "dpstats/options.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats::python {

namespace py = pybind11;
using CArray = py::array_t<double, py::array::c_style>;

inline std::unique_ptr<Rng> make_rng(std::optional<std::uint64_t> seed) {
  if (dry_run_active()) return std::make_unique<NoDrawRng>();  // dry_run=True draws nothing
  if (seed) return std::make_unique<SeededRng>(*seed);
  return std::make_unique<SecureRng>();
}

// The `threads` argument of every binding, checked here against its one declaration (the
// tool's --threads reads the same) so that calls below the Python wrappers are refused too.
inline int check_threads(int threads) {
  check_option(find_option("", "threads"), threads);
  return threads;
}

// Releases the GIL around a library call, except when a caller's Budget is charged: a Budget is
// not thread-safe, and Python threads may share one (then the calls run one after the other).
class GilRelease {
 public:
  explicit GilRelease(const Budget* budget) {
    if (budget == nullptr) release_.emplace();
  }

 private:
  std::optional<py::gil_scoped_release> release_;
};

// A 2-D float64 C-ordered array as a row-major view, without a copy.
inline Eigen::Map<const RowMatrix> as_matrix(const CArray& X, const char* name = "X") {
  require(X.ndim() == 2, std::string(name) + " must be a 2-D array (rows are records)");
  return {X.data(), X.shape(0), X.shape(1)};
}

// (estimate with the given shape, JSON of the release fields); dpstats/release.py wraps it.
inline py::tuple to_python(const Release<Vector>& r, const std::vector<py::ssize_t>& shape) {
  CArray estimate(shape);
  std::copy(r.estimate.data(), r.estimate.data() + r.estimate.size(), estimate.mutable_data());
  return py::make_tuple(estimate, release_fields_json(r).dump());
}

}  // namespace dpstats::python
