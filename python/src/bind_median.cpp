// Geometric median bindings: geometric_median, weiszfeld (non-private), quantile_radius.
#include "common.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/median/weiszfeld.hpp"

namespace py = pybind11;
using namespace dpstats;
using namespace dpstats::python;

namespace {

py::tuple geometric_median_native(const CArray& X, const std::string& method,
                                  const std::string& profile, std::optional<double> epsilon,
                                  std::optional<double> delta, std::optional<double> rho,
                                  double radius, std::optional<double> min_radius,
                                  std::optional<std::uint64_t> seed) {
  const auto data = as_matrix(X);
  GeometricMedianOptions o;
  if (method == "fast") {
    o.method = MedianMethod::fast;
  } else if (method == "hsu24") {
    o.method = MedianMethod::hsu24;
  } else {
    throw InvalidArgument("method must be 'fast', 'hsu24' or 'weiszfeld', got '" + method + "'");
  }
  if (profile == "practical") {
    o.profile = MedianProfile::practical;
  } else if (profile == "paper") {
    o.profile = MedianProfile::paper;
  } else {
    throw InvalidArgument("profile must be 'practical' or 'paper', got '" + profile + "'");
  }
  o.epsilon = epsilon;
  o.delta = delta;
  o.rho = rho;
  o.radius = radius;
  o.min_radius = min_radius;
  auto rng = make_rng(seed);
  Release<Vector> r;
  {
    py::gil_scoped_release release;
    r = geometric_median(data, o, *rng);
  }
  return to_python(r, {static_cast<py::ssize_t>(r.estimate.size())});
}

py::tuple weiszfeld_native(const CArray& X, double rel_tol, int max_iterations) {
  const auto data = as_matrix(X);
  WeiszfeldOptions o;
  o.rel_tol = rel_tol;
  o.max_iterations = max_iterations;
  WeiszfeldResult w;
  {
    py::gil_scoped_release release;
    w = weiszfeld(data, o);
  }
  CArray x({static_cast<py::ssize_t>(w.x.size())});
  std::copy(w.x.data(), w.x.data() + w.x.size(), x.mutable_data());
  return py::make_tuple(x, w.f, w.iterations, w.rel_gap_bound, w.converged);
}

py::tuple quantile_radius_native(const CArray& X, const std::string& method, double epsilon,
                                 double delta, double min_radius, double radius,
                                 std::optional<std::uint64_t> seed) {
  const auto data = as_matrix(X);
  QuantileRadiusOptions o;
  if (method == "fast-radius") {
    o.method = RadiusMethod::fast_radius;
  } else if (method == "fast-radius-permuted") {
    o.method = RadiusMethod::fast_radius_permuted;
  } else if (method == "radius-finder") {
    o.method = RadiusMethod::radius_finder;
  } else {
    throw InvalidArgument(
        "method must be 'fast-radius', 'fast-radius-permuted' or 'radius-finder', got '" +
        method + "'");
  }
  o.epsilon = epsilon;
  o.delta = delta;
  o.min_radius = min_radius;
  o.radius = radius;
  auto rng = make_rng(seed);
  Release<double> r;
  {
    py::gil_scoped_release release;
    r = quantile_radius_release(data, o, *rng);
  }
  return py::make_tuple(r.estimate, release_fields_json(r).dump());
}

}  // namespace

void bind_median(py::module_& m) {
  m.def("geometric_median", &geometric_median_native, py::arg("X"), py::arg("method"),
        py::arg("profile"), py::arg("epsilon"), py::arg("delta"), py::arg("rho"),
        py::arg("radius"), py::arg("min_radius"), py::arg("seed"));
  m.def("weiszfeld", &weiszfeld_native, py::arg("X"), py::arg("rel_tol"),
        py::arg("max_iterations"));
  m.def("quantile_radius", &quantile_radius_native, py::arg("X"), py::arg("method"),
        py::arg("epsilon"), py::arg("delta"), py::arg("min_radius"), py::arg("radius"),
        py::arg("seed"));
}
