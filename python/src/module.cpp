// The pybind11 layer: thin. NumPy float64 C-ordered arrays cross without a copy (the Python
// wrapper converts anything else once); results come back as (array, JSON of the release fields)
// and dpstats/__init__.py wraps them in a Release. dpstats::InvalidArgument derives from
// std::invalid_argument, which pybind11 raises as ValueError with the same message.
#include "common.hpp"
#include "dpstats/mean/bounded_mean.hpp"
#include "dpstats/mean/dp_mean.hpp"
#include "dpstats/mean/exp_time_mean.hpp"
#include "dpstats/mean/prime.hpp"
#include "dpstats/mean/prime_ht.hpp"
#include "dpstats/mean/private_filter.hpp"
#include "dpstats/mechanisms/noise_release.hpp"
#include "dpstats/privacy/calculator.hpp"
#include "dpstats/privacy/calibration.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace py = pybind11;
using namespace dpstats;
using namespace dpstats::python;

namespace {

py::tuple mean(const CArray& X, const std::string& method, double epsilon, double delta,
               std::optional<std::pair<double, double>> bounds, double sigma,
               std::optional<std::uint64_t> seed, int threads, std::optional<double> alpha,
               const std::string& profile, double topk_multiplier, bool fallback) {
  check_threads(threads);
  const auto data = as_matrix(X);
  auto rng = make_rng(seed);
  Release<Vector> r;
  {
    py::gil_scoped_release release;
    const bool robust = method == "prime" || method == "prime-ht" || method == "filter" ||
                        method == "exp-time";
    require(robust || !alpha.has_value(),
            "alpha applies to method='prime', 'prime-ht', 'filter' or 'exp-time' only");
    if (robust) {
      require(!bounds.has_value(), "bounds applies to method='bounded' only");
      require(alpha.has_value(),
              "method='" + method + "' needs alpha (upper bound on the corrupted fraction)");
    }
    if (method == "filter") {
      PrivateFilterOptions o;
      o.epsilon = epsilon;
      o.delta = delta;
      o.alpha = *alpha;
      o.sigma = sigma;
      o.profile = prime_profile_from_string(profile);
      o.topk_multiplier = topk_multiplier;
      o.threads = threads;
      r = private_filter(data, o, *rng);
    } else if (method == "exp-time") {
      ExpTimeMeanOptions o;
      o.epsilon = epsilon;
      o.delta = delta;
      o.alpha = *alpha;
      o.sigma = sigma;
      r = exp_time_mean(data, o, *rng);
    } else if (method == "prime" || method == "prime-ht") {
      PrimeOptions o;
      o.epsilon = epsilon;
      o.delta = delta;
      o.alpha = *alpha;
      o.sigma = sigma;
      o.profile = prime_profile_from_string(profile);
      o.topk_multiplier = topk_multiplier;
      o.fallback = fallback;
      o.threads = threads;
      r = method == "prime" ? prime(data, o, *rng) : prime_ht(data, o, *rng);
    } else if (method == "bounded") {
      require(bounds.has_value(), "method='bounded' needs bounds=(lo, hi)");
      r = bounded_mean(data, {.lower = bounds->first, .upper = bounds->second, .epsilon = epsilon,
                              .delta = delta, .threads = threads},
                       *rng);
    } else if (method == "dp-mean") {
      require(!bounds.has_value(), "bounds applies to method='bounded' only");
      r = dp_mean(data, {.epsilon = epsilon, .delta = delta, .sigma = sigma, .threads = threads},
                  *rng);
    } else {
      throw InvalidArgument("method must be 'prime', 'prime-ht', 'filter', 'exp-time', 'dp-mean' "
                            "or 'bounded', got '" + method + "'");
    }
  }
  return to_python(r, {static_cast<py::ssize_t>(r.estimate.size())});
}

py::tuple noise(const std::string& mechanism, const CArray& values, double sensitivity,
                double epsilon, double delta, std::optional<std::uint64_t> seed,
                Budget* budget) {
  const Vector v = Eigen::Map<const Vector>(values.data(), values.size());
  auto rng = make_rng(seed);
  const Release<Vector> r = mechanism == "laplace"
                                ? laplace_release(v, sensitivity, epsilon, *rng, NoiseMode::secure, budget)
                                : gaussian_release(v, sensitivity, epsilon, delta, *rng,
                                                   NoiseMode::secure, budget);
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

PYBIND11_MODULE(_dpstats, m) {
  m.doc() = "dpstats native layer; use the `dpstats` package.";
  bind_moments(m);
  bind_input(m);
  bind_median(m);
  bind_fit(m);
  bind_classify(m);
  bind_heavy_tailed(m);
  bind_stats(m);
  m.attr("__version__") = DPSTATS_VERSION;
  m.def("mean", &mean, py::arg("X"), py::arg("method"), py::arg("epsilon"), py::arg("delta"),
        py::arg("bounds"), py::arg("sigma"), py::arg("seed"), py::arg("threads"),
        py::arg("alpha") = py::none(), py::arg("profile") = "practical",
        py::arg("topk_multiplier") = 2.0, py::arg("fallback") = true);
  m.def("noise", &noise, py::arg("mechanism"), py::arg("values"), py::arg("sensitivity"),
        py::arg("epsilon"), py::arg("delta"), py::arg("seed"),
        py::arg("budget").none(true) = nullptr);
  m.def("account_calibrate", [](const std::string& mech, double s, double e, double d) {
    return account_calibrate(mech, s, e, d).dump();
  });
  m.def("account_convert", [](std::optional<double> rho, std::optional<double> mu, double delta) {
    return account_convert(rho, mu, delta).dump();
  });
  m.def("account_compose", [](double e, double d, long k, double slack) {
    return account_compose(e, d, k, slack).dump();
  });
  m.def("zcdp_to_epsilon", &zcdp_to_epsilon, py::arg("rho"), py::arg("delta"));
  m.def("zcdp_to_delta", &zcdp_to_delta, py::arg("rho"), py::arg("epsilon"));
  m.def("epsilon_delta_to_zcdp", &epsilon_delta_to_zcdp, py::arg("epsilon"), py::arg("delta"));
  m.def("gdp_to_delta", &gdp_to_delta, py::arg("mu"), py::arg("epsilon"));
  m.def("gdp_to_epsilon", &gdp_to_epsilon, py::arg("mu"), py::arg("delta"));
  m.def("analytic_gaussian_sigma", &analytic_gaussian_sigma, py::arg("sensitivity"),
        py::arg("epsilon"), py::arg("delta"));
}
