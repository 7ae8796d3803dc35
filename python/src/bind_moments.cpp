// dpstats.MomentEstimator and dpstats.moments (continual release of first and second moments).
#include <fmt/format.h>

#include "common.hpp"
#include "dpstats/moments/estimator.hpp"

namespace py = pybind11;
using namespace dpstats;
using namespace dpstats::moments;
using namespace dpstats::python;

namespace {

using Options = MomentsOptions;

std::string fields_json(const MomentEstimator& est, bool seeded) {
  Release<int> r;
  r.privacy = est.privacy();
  r.seeded = seeded;
  r.noise = est.config().noise;
  r.ledger = est.ledger();
  r.diagnostics = est.diagnostics();
  return release_fields_json(r).dump();
}

// Owns the Rng the estimator draws from.
class PyMomentEstimator {
 public:
  PyMomentEstimator(const Options& o, std::optional<std::uint64_t> seed)
      : rng_(make_rng(seed)), est_(make_config(o), *rng_) {}

  py::tuple push(const CArray& x) {
    require(x.ndim() == 1, "x must be a 1-D array");
    {
      py::gil_scoped_release release;
      est_.push({x.data(), static_cast<std::size_t>(x.shape(0))});
    }
    const auto d = static_cast<py::ssize_t>(est_.config().dim);
    CArray first({d});
    std::copy(est_.first().begin(), est_.first().end(), first.mutable_data());
    const bool full = est_.config().form == SecondMomentForm::full;
    CArray second(full ? std::vector<py::ssize_t>{d, d} : std::vector<py::ssize_t>{d});
    std::copy(est_.second().begin(), est_.second().end(), second.mutable_data());
    return py::make_tuple(first, second);
  }
  std::size_t step() const { return est_.step(); }
  std::string fields() const { return fields_json(est_, rng_->seeded()); }

 private:
  std::unique_ptr<Rng> rng_;
  MomentEstimator est_;
};

py::tuple moments_batch(const CArray& X, const Options& o, std::optional<std::uint64_t> seed) {
  const auto data = as_matrix(X);
  Options opt = o;
  opt.steps = static_cast<std::size_t>(data.rows());
  opt.dim = static_cast<std::size_t>(data.cols());
  require(opt.steps >= 1 && opt.dim >= 1, "X must have at least one row and one column");
  MomentsConfig c = make_config(opt);
  auto rng = make_rng(seed);
  Release<MomentSeries> r;
  {
    py::gil_scoped_release release;
    r = estimate_moments(std::move(c), data, *rng);
  }
  const auto n = static_cast<py::ssize_t>(opt.steps), d = static_cast<py::ssize_t>(opt.dim);
  CArray first({n, d});
  std::copy(r.estimate.first.data(), r.estimate.first.data() + r.estimate.first.size(),
            first.mutable_data());
  CArray second(opt.diagonal ? std::vector<py::ssize_t>{n, d} : std::vector<py::ssize_t>{n, d, d});
  std::copy(r.estimate.second.data(), r.estimate.second.data() + r.estimate.second.size(),
            second.mutable_data());
  Release<int> f;
  f.privacy = r.privacy;
  f.seeded = r.seeded;
  f.noise = r.noise;
  f.ledger = r.ledger;
  f.diagnostics = r.diagnostics;
  return py::make_tuple(first, second, release_fields_json(f).dump());
}

Options options(std::size_t steps, std::size_t dim, const std::string& method,
                const std::string& workload, const std::string& factorization, double clip,
                std::optional<double> epsilon, double delta, std::optional<double> rho,
                std::optional<double> noise_multiplier, std::optional<double> lambda,
                double alpha, double tau, bool diagonal, const std::string& on_norm,
                const std::string& neighbouring, int threads) {
  return {steps, dim, method, workload, factorization, clip, epsilon, delta, rho,
          noise_multiplier, lambda, alpha, tau, diagonal, on_norm, neighbouring, check_threads(threads)};
}

}  // namespace

void bind_moments(py::module_& m) {
  py::class_<Options>(m, "_MomentsOptions");
  m.def("_moments_options", &options, py::arg("steps"), py::arg("dim"), py::arg("method"),
        py::arg("workload"), py::arg("factorization"), py::arg("clip"), py::arg("epsilon"),
        py::arg("delta"), py::arg("rho"), py::arg("noise_multiplier"), py::arg("lambda_"),
        py::arg("alpha"), py::arg("tau"), py::arg("diagonal"), py::arg("on_norm"),
        py::arg("neighbouring"), py::arg("threads") = 1);
  py::class_<PyMomentEstimator>(m, "_MomentEstimator")
      .def(py::init<const Options&, std::optional<std::uint64_t>>(), py::arg("options"),
           py::arg("seed"))
      .def("push", &PyMomentEstimator::push, py::arg("x"))
      .def("step", &PyMomentEstimator::step)
      .def("fields", &PyMomentEstimator::fields);
  m.def("moments", &moments_batch, py::arg("X"), py::arg("options"), py::arg("seed"));
}
