// Geometric median bindings: geometric_median, weiszfeld (non-private), quantile_radius, and the
// method registries (names, summaries, the options each method reads) for the Python layer.
#include "comm.hpp"
#include "common.hpp"
#include "dpstats/error.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/median/median_command.hpp"
#include "dpstats/median/weiszfeld.hpp"
#include "request.hpp"

namespace py = pybind11;
using namespace dpstats;
using namespace dpstats::python;

namespace {

// The median's own options come as one dict, filled by the request's field list (request.hpp);
// `shared`: the shared options the caller set, which the method's registry line may refuse.
GeometricMedianOptions options_of(const std::string& method, const py::dict& options,
                                  const std::vector<std::string>& shared) {
  MedianRequest request;
  fill_request(request, "median", options);
  return median_options(parse_enum<MedianCommand>(method), request, shared);
}

py::tuple geometric_median_native(const CArray& X, const std::string& method,
                                  const py::dict& options, const std::vector<std::string>& shared,
                                  double epsilon, double delta,
                                  std::optional<std::uint64_t> seed, Budget* budget,
                                  std::optional<int> threads, const py::object& comm) {
  GeometricMedianOptions o = options_of(method, options, shared);
  require(private_method(parse_enum<MedianCommand>(method)).has_value(),
          "geometric_median_native runs a private method; weiszfeld is dpstats.weiszfeld");
  if (threads) o.run.threads = check_threads(*threads);
  o.privacy = {epsilon, delta};
  const auto ranks = communicator(comm);  // comm=None: this process holds every row
  o.run.comm = ranks.get();
  const auto data = as_matrix(X);
  auto rng = make_rng(seed);
  Release<Vector> r;
  {
    GilRelease release(budget);
    r = geometric_median(data, o, *rng, budget);
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
                                 double delta, double min_radius, double domain_radius,
                                 std::optional<std::uint64_t> seed, Budget* budget) {
  QuantileRadiusOptions o;
  o.method = parse_enum<RadiusMethod>(method);
  o.privacy = {epsilon, o.method == RadiusMethod::fast_radius ? delta : 0.0};
  o.min_radius = min_radius;
  o.domain_radius = domain_radius;
  const auto data = as_matrix(X);
  auto rng = make_rng(seed);
  Release<double> r;
  {
    GilRelease release(budget);
    r = quantile_radius_release(data, o, *rng, budget);
  }
  return py::make_tuple(r.estimate, release_fields_json(r).dump());
}

py::list registry(std::span<const MethodInfo> methods) {
  py::list out;
  for (const auto& m : methods) {
    py::list options;
    for (auto name : m.options) options.append(std::string(name));
    out.append(py::make_tuple(std::string(m.name), std::string(m.summary), options));
  }
  return out;
}

}  // namespace

void bind_median(py::module_& m) {
  m.def("geometric_median", &geometric_median_native, py::arg("X"), py::arg("method"),
        py::arg("options"), py::arg("shared"), py::arg("epsilon"), py::arg("delta"),
        py::arg("seed"), py::arg("budget").none(true) = nullptr, py::arg("threads") = py::none(),
        py::arg("comm") = py::none());
  m.def(
      "_median_check",
      [](const std::string& method, const py::dict& options,
         const std::vector<std::string>& shared) { options_of(method, options, shared); },
      py::arg("method"), py::arg("options"), py::arg("shared"),
      "The median's \"does not apply\" check of a method's options (weiszfeld's, run in Python).");
  m.def("_median_options", &request_fields<MedianRequest>,
        "The median's declared options as [(name, kind)]: the keywords of dpstats.geometric_median.");
  m.def("weiszfeld", &weiszfeld_native, py::arg("X"), py::arg("rel_tol"),
        py::arg("max_iterations"));
  m.def("quantile_radius", &quantile_radius_native, py::arg("X"), py::arg("method"),
        py::arg("epsilon"), py::arg("delta"), py::arg("min_radius"), py::arg("domain_radius"),
        py::arg("seed"), py::arg("budget").none(true) = nullptr);
  m.def("median_methods", [] { return registry(median_methods()); });
}
