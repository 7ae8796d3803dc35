// dpstats.MomentEstimator and dpstats.moments (continual release of first and second moments).
#include <fmt/format.h>

#include "comm.hpp"
#include "common.hpp"
#include "dpstats/moments/estimator.hpp"
#include "dpstats/moments/moments_request.hpp"
#include "request.hpp"

namespace py = pybind11;
using namespace dpstats;
using namespace dpstats::moments;
using namespace dpstats::python;

namespace {

using Options = MomentsOptions;

std::string fields_json(const MomentEstimator& est) {
  return release_fields_json(est.release_fields()).dump();
}

// Owns the Rng the estimator draws from.
class PyMomentEstimator {
 public:
  // The whole stream is charged to `budget` here, when the estimator is built.
  PyMomentEstimator(const Options& o, std::optional<std::uint64_t> seed, Budget* budget)
      : rng_(make_rng(seed)), est_(make_config(o), *rng_, budget) {}

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
  double clip() const { return est_.clip(); }
  std::string fields() const { return fields_json(est_); }

 private:
  std::unique_ptr<Rng> rng_;
  MomentEstimator est_;
};

// comm: each rank's rows (rank order = the stream's order); every rank gets the release.
py::tuple moments_batch(const CArray& X, const Options& o, std::optional<std::uint64_t> seed,
                        Budget* budget, const py::object& comm) {
  const auto data = as_matrix(X);
  const auto ranks = communicator(comm);  // comm=None: this process holds every row
  Options opt = o;
  opt.run.comm = ranks.get();
  opt.steps = static_cast<std::size_t>(ranks ? shard_rows(*ranks, data.rows()).total : data.rows());
  opt.dim = static_cast<std::size_t>(data.cols());
  require(opt.steps >= 1 && opt.dim >= 1, "X must have at least one row and one column");
  MomentsConfig c = make_config(opt);
  auto rng = make_rng(seed);
  Release<MomentSeries> r;
  {
    GilRelease release(budget);
    r = estimate_moments(data, std::move(c), *rng, budget);
  }
  // An abstained release has an empty estimate: 0 rows.
  const auto n = static_cast<py::ssize_t>(r.estimate.first.rows()),
             d = static_cast<py::ssize_t>(opt.dim);
  CArray first({n, d});
  std::copy(r.estimate.first.data(), r.estimate.first.data() + r.estimate.first.size(),
            first.mutable_data());
  CArray second(opt.diagonal ? std::vector<py::ssize_t>{n, d} : std::vector<py::ssize_t>{n, d, d});
  std::copy(r.estimate.second.data(), r.estimate.second.data() + r.estimate.second.size(),
            second.mutable_data());
  return py::make_tuple(first, second, release_fields_json(r).dump());
}

// The moments' declared options come as one dict, filled by the request's field list
// (request.hpp); the method, the horizon, the privacy target and threads are the caller's.
Options options(std::size_t steps, std::size_t dim, const std::string& method,
                const py::dict& request_options, double epsilon, double delta,
                std::optional<int> threads) {
  MomentsRequest request;
  fill_request(request, "moments", request_options);
  Options o = moments_options(parse_enum<Method>(method), request, steps, dim);
  o.privacy = {.epsilon = epsilon, .delta = delta};
  if (threads) o.run.threads = check_threads(*threads);  // absent: RunControl's default
  return o;
}

}  // namespace

void bind_moments(py::module_& m) {
  py::class_<Options>(m, "_MomentsOptions");
  m.def("_moments_options_of", &options, py::arg("steps"), py::arg("dim"), py::arg("method"),
        py::arg("options"), py::arg("epsilon"), py::arg("delta"),
        py::arg("threads") = py::none());
  m.def("_moments_options", &request_fields<MomentsRequest>,
        "The moments' declared options as [(name, kind)]: the keywords of dpstats.moments and "
        "dpstats.MomentEstimator.");
  m.def("_moments_methods", [] {
    std::vector<std::string> names;
    for (const auto& mi : moments_methods()) names.emplace_back(mi.name);
    return names;
  });
  py::class_<PyMomentEstimator>(m, "_MomentEstimator")
      .def(py::init<const Options&, std::optional<std::uint64_t>, Budget*>(), py::arg("options"),
           py::arg("seed"), py::arg("budget").none(true) = nullptr)
      .def("push", &PyMomentEstimator::push, py::arg("x"))
      .def("step", &PyMomentEstimator::step)
      .def("clip", &PyMomentEstimator::clip)
      .def("fields", &PyMomentEstimator::fields);
  m.def("moments", &moments_batch, py::arg("X"), py::arg("options"), py::arg("seed"),
        py::arg("budget").none(true) = nullptr, py::arg("comm") = py::none());
}
