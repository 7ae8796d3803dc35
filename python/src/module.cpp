// The pybind11 layer: thin. NumPy float64 C-ordered arrays cross without a copy (the Python
// wrapper converts anything else once); results come back as (array, JSON of the release fields)
// and dpstats/__init__.py wraps them in a Release. dpstats::InvalidArgument derives from
// std::invalid_argument, which pybind11 raises as ValueError with the same message.
#include "comm.hpp"
#include "common.hpp"
#include "dpstats/mean/methods.hpp"
#include "dpstats/mechanisms/noise_mechanism.hpp"
#include "dpstats/output_fields.hpp"
#include "dpstats/privacy/calculator.hpp"
#include "dpstats/privacy/calibration.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "request.hpp"

namespace py = pybind11;
using namespace dpstats;
using namespace dpstats::python;

namespace {

// The mean command: the library's one dispatcher (mean/methods.hpp) does every check; the
// request's declared options come as one dict, filled by the request's field list.
py::tuple mean(const CArray& X, const std::string& method, double epsilon, double delta,
               std::optional<std::uint64_t> seed, int threads, const py::dict& options,
               Budget* budget, const py::object& comm) {
  check_threads(threads);
  MeanRequest req;
  fill_request(req, "mean", options);
  const auto ranks = communicator(comm);
  const auto data = as_matrix(X);
  auto rng = make_rng(seed);
  req.method = method;
  req.privacy = {epsilon, delta};
  req.run.threads = threads;
  req.run.comm = ranks.get();
  Release<Vector> r;
  {
    GilRelease release(budget);
    r = run_mean(data, req, *rng, budget);
  }
  return to_python(r, {static_cast<py::ssize_t>(r.estimate.size())});
}

// `options`: the noise request's keywords (request.hpp; the mechanism is the Python function).
py::tuple noise(const CArray& values, const py::dict& options, double epsilon, double delta,
                std::optional<std::uint64_t> seed, Budget* budget) {
  NoiseRequest request;
  fill_request(request, "noise", options);
  const Vector v = Eigen::Map<const Vector>(values.data(), values.size());
  auto rng = make_rng(seed);
  const Release<Vector> r = noise_release(request, v, {epsilon, delta}, *rng, budget);
  std::vector<py::ssize_t> shape(values.shape(), values.shape() + values.ndim());
  return to_python(r, shape);
}

}  // namespace

void bind_moments(pybind11::module_&);
void bind_input(pybind11::module_&);
void bind_median(pybind11::module_&);
void bind_fit(pybind11::module_&);
void bind_classify(pybind11::module_&);
void bind_heavy_tailed(pybind11::module_&);
void bind_stats(pybind11::module_&);
void bind_scale(pybind11::module_&);
void bind_options(pybind11::module_&);

PYBIND11_MODULE(_dpstats, m) {
  m.doc() = "dpstats native layer; use the `dpstats` package.";
  bind_moments(m);
  bind_input(m);
  bind_median(m);
  bind_fit(m);
  bind_classify(m);
  bind_heavy_tailed(m);
  bind_stats(m);
  bind_scale(m);
  bind_options(m);
  m.attr("__version__") = DPSTATS_VERSION;
  m.def("mean", &mean, py::arg("X"), py::arg("method"), py::arg("epsilon"), py::arg("delta"),
        py::arg("seed"), py::arg("threads"), py::arg("options") = py::dict(),
        py::arg("budget").none(true) = nullptr, py::arg("comm") = py::none());
  m.def("_mean_options", &request_fields<MeanRequest>,
        "The mean's declared options as [(name, kind)]: the keywords of dpstats.mean.");
  // The declaration of the output fields (dpstats/output_fields.hpp): what the Release keeps.
  m.def("_declared_fields", [](const std::string& fields_json, const std::string& scope) {
    nlohmann::json j = nlohmann::json::parse(fields_json);
    const std::vector<std::string> removed = keep_declared(j, scope);
    return py::make_tuple(j.dump(), removed);
  });
  m.def("_output_fields", [] { return output_fields_json().dump(); });
  m.def("mean_methods", [] {
    py::list out;
    for (const auto& mi : mean_methods()) out.append(py::str(std::string(mi.name)));
    return out;
  });
  m.def("noise", &noise, py::arg("values"), py::arg("options"), py::arg("epsilon"),
        py::arg("delta"), py::arg("seed"), py::arg("budget").none(true) = nullptr);
  m.def("_noise_options", &request_fields<NoiseRequest>,
        "The noise command's declared options as [(name, kind)] (dpstats.laplace, dpstats.gaussian).");
  m.def("account_calibrate", [](const std::string& mech, double s, double e, double d) {
    return account_calibrate(parse_enum<NoiseMechanism>(mech), s, e, d).dump();
  });
  m.def("account_convert", [](std::optional<double> rho, std::optional<double> mu, double delta) {
    return account_convert(rho, mu, delta).dump();
  });
  m.def("account_compose", [](double e, double d, long k, double slack) {
    return account_compose(e, d, k, slack).dump();
  });
  m.def("account_dp_sgd", [](double q, std::optional<double> z, std::optional<double> eps,
                             long long steps, double delta, const std::string& acc) {
    return account_dp_sgd(q, z, eps, steps, delta, parse_enum<CalculatorAccountant>(acc)).dump();
  });
  m.def("account_compose_losses",
        [](const std::vector<std::string>& losses, double delta, const std::string& acc) {
          return account_compose_losses(losses, delta, parse_enum<CalculatorAccountant>(acc))
              .dump();
        });
  m.def("zcdp_to_epsilon", &zcdp_to_epsilon, py::arg("rho"), py::arg("delta"));
  m.def("zcdp_to_delta", &zcdp_to_delta, py::arg("rho"), py::arg("epsilon"));
  m.def("epsilon_delta_to_zcdp", &epsilon_delta_to_zcdp, py::arg("epsilon"), py::arg("delta"));
  m.def("gdp_to_delta", &gdp_to_delta, py::arg("mu"), py::arg("epsilon"));
  m.def("gdp_to_epsilon", &gdp_to_epsilon, py::arg("mu"), py::arg("delta"));
  m.def("analytic_gaussian_sigma", &analytic_gaussian_sigma, py::arg("sensitivity"),
        py::arg("epsilon"), py::arg("delta"));
}
