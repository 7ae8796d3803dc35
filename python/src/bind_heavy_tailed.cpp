// Bindings for fit(task="heavy-tailed"): pure ε-DP convex optimisation with heavy-tailed
// gradients (optimize/heavy_tailed.hpp).
#include "comm.hpp"
#include "common.hpp"
#include "dpstats/error.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_request.hpp"
#include "request.hpp"

namespace py = pybind11;
using namespace dpstats;
using namespace dpstats::python;

namespace {

// The task's own options come as one dict, filled by HeavyTailedRequest's field list
// (request.hpp); apply_request refuses those the method does not read.
py::tuple fit_heavy_tailed_native(const CArray& X, const CArray& y, const std::string& loss,
                                  const std::string& method, const std::string& profile,
                                  double epsilon, double delta, double domain_radius,
                                  const py::dict& options, std::optional<int> steps,
                                  std::optional<double> step_size, std::optional<double> clip,
                                  std::optional<std::uint64_t> seed,
                                  std::optional<double> scale_share, Budget* budget,
                                  std::optional<bool> centre, std::optional<int> threads,
                                  const py::object& comm, std::optional<double> holdout,
                                  std::optional<double> holdout_share,
                                  std::optional<double> holdout_loss_bound) {
  const RowMatrix data = as_matrix(X);
  require(y.ndim() == 1 && y.shape(0) == data.rows(), "y must be 1-D with one label per row of X");
  const Vector yv = Eigen::Map<const Vector>(y.data(), y.shape(0));
  optimize::HeavyTailedRequest request;
  fill_request(request, "fit", options);
  optimize::HeavyTailedOptions o;
  o.method = parse_enum<optimize::HeavyTailedMethod>(method);
  o.profile = parse_enum<Profile>(profile);
  o.loss = parse_enum<optimize::GlmKind>(loss);
  o.steps = steps;
  o.step_size = step_size;
  o.clip = clip;
  optimize::apply_request(request, o);
  o.privacy = {epsilon, delta};
  o.domain_radius = domain_radius;
  if (scale_share) o.scale_share = *scale_share;
  o.centre = centre;
  o.holdout = holdout;
  if (holdout_share) o.holdout_share = *holdout_share;
  if (holdout_loss_bound) o.holdout_loss_bound = *holdout_loss_bound;
  if (threads) o.run.threads = check_threads(*threads);
  const auto ranks = communicator(comm);  // comm=None: this process holds every row
  o.run.comm = ranks.get();
  auto rng = make_rng(seed);
  Release<Vector> r;
  {
    GilRelease release(budget);
    r = optimize::fit_heavy_tailed(data, yv, o, *rng, budget);
  }
  return to_python(r, {static_cast<py::ssize_t>(r.estimate.size())});
}

}  // namespace

void bind_heavy_tailed(py::module_& m) {
  m.def("_heavy_tailed_options", &request_fields<optimize::HeavyTailedRequest>,
        "The heavy-tailed task's declared options as [(name, kind)]: keywords of dpstats.fit.");
  m.def("fit_heavy_tailed", &fit_heavy_tailed_native, py::arg("X"), py::arg("y"), py::arg("loss"),
        py::arg("method"), py::arg("profile"), py::arg("epsilon"), py::arg("delta"),
        py::arg("domain_radius"), py::arg("options"), py::arg("steps"), py::arg("step_size"),
        py::arg("clip"), py::arg("seed"), py::arg("scale_share") = py::none(),
        py::arg("budget").none(true) = nullptr, py::arg("centre") = py::none(),
        py::arg("threads") = py::none(), py::arg("comm") = py::none(),
        py::arg("holdout") = py::none(), py::arg("holdout_share") = py::none(),
        py::arg("holdout_loss_bound") = py::none());
}
