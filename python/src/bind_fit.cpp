// Model fitting bindings: user-level private convex optimisation (optimize/user_level.hpp).
#include "comm.hpp"
#include "common.hpp"
#include "dpstats/error.hpp"
#include "dpstats/solvers/fit_registry.hpp"
#include "dpstats/user_level/home_rank.hpp"
#include "dpstats/user_level/user_level_request.hpp"
#include "request.hpp"

namespace py = pybind11;
using namespace dpstats;
using namespace dpstats::python;

namespace {

// The task's own options come as one dict, filled by UserLevelRequest's field list
// (request.hpp); apply_request refuses those the method does not read.
py::tuple fit_user_level_native(const CArray& X, const CArray& y,
                                const py::array_t<std::int64_t, py::array::c_style |
                                                                    py::array::forcecast>& users,
                                const std::string& loss, const std::string& method,
                                const std::optional<std::string>& profile, double epsilon,
                                double delta, double domain_radius, const py::dict& options,
                                std::optional<int> steps, std::optional<double> step_size,
                                std::optional<double> clip, std::optional<double> feature_bound,
                                std::optional<double> label_bound, std::optional<std::uint64_t> seed,
                                std::optional<double> scale_share, Budget* budget,
                                std::optional<bool> centre, std::optional<int> threads,
                                const py::object& comm, std::optional<double> holdout,
                                std::optional<double> holdout_share,
                                std::optional<double> holdout_loss_bound) {
  const auto data = as_matrix(X);
  require(y.ndim() == 1 && y.shape(0) == data.rows(), "y must be 1-D with one label per row of X");
  require(users.ndim() == 1 && users.shape(0) == data.rows(),
          "users must be 1-D with one id per row of X");
  const Vector yv = Eigen::Map<const Vector>(y.data(), y.shape(0));
  const std::vector<std::int64_t> ids(users.data(), users.data() + users.shape(0));
  optimize::UserLevelRequest request;
  fill_request(request, "fit", options);
  optimize::UserLevelOptions o;
  o.method = parse_enum<optimize::UserLevelMethod>(method);
  o.loss = parse_enum<optimize::GlmKind>(loss);
  if (profile) o.profile = parse_enum<Profile>(*profile);
  o.steps = steps;
  o.step_size = step_size;
  o.clip = clip;
  optimize::apply_request(request, o, profile.has_value());
  const std::int64_t items_per_user = optimize::items_per_user(request);
  o.privacy = {epsilon, delta};
  o.domain_radius = domain_radius;
  o.feature_bound = feature_bound;
  o.label_bound = label_bound;
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
    // Several ranks: every row moves to its user's home rank first (home_rank.hpp).
    const optimize::UserDataset d =
        optimize::gather_users(comm_or_single(o.run.comm), data, yv, ids, items_per_user);
    r = optimize::fit_user_level(d, o, *rng, budget);
  }
  return to_python(r, {static_cast<py::ssize_t>(r.estimate.size())});
}

std::vector<std::string> fit_method_names(const std::string& task) {
  return method_names(optimize::fit_methods(parse_enum<optimize::FitTask>(task)));
}

// The options `method` of `task` reads (its registry line): Python asks this, never compares a
// method's name, to know whether the privacy target applies.
std::vector<std::string> fit_method_options(const std::string& task, const std::string& method) {
  const auto registry = optimize::fit_methods(parse_enum<optimize::FitTask>(task));
  const MethodInfo& m = find_method(registry, "fit --task " + task, method);
  return {m.options.begin(), m.options.end()};
}

}  // namespace

void bind_fit(py::module_& m) {
  m.def("_user_level_options", &request_fields<optimize::UserLevelRequest>,
        "The user-level task's declared options as [(name, kind)]: keywords of dpstats.fit.");
  m.def("fit_user_level", &fit_user_level_native, py::arg("X"), py::arg("y"), py::arg("users"),
        py::arg("loss"), py::arg("method"), py::arg("profile"), py::arg("epsilon"),
        py::arg("delta"), py::arg("domain_radius"), py::arg("options"), py::arg("steps"),
        py::arg("step_size"), py::arg("clip"), py::arg("feature_bound"), py::arg("label_bound"),
        py::arg("seed"), py::arg("scale_share") = py::none(),
        py::arg("budget").none(true) = nullptr, py::arg("centre") = py::none(),
        py::arg("threads") = py::none(), py::arg("comm") = py::none(),
        py::arg("holdout") = py::none(), py::arg("holdout_share") = py::none(),
        py::arg("holdout_loss_bound") = py::none());
  m.def("fit_methods", &fit_method_names, py::arg("task"),
        "The method names of a fit task (the library's registry).");
  m.def("fit_method_options", &fit_method_options, py::arg("task"), py::arg("method"),
        "The options a fit method reads (its registry line, snake_case).");
  m.def("fit_tasks", [] { return enum_names<optimize::FitTask>(); }, "The fit tasks (the library's names).");
  m.def("glm_losses", [] { return enum_names<optimize::GlmKind>(); },
        "The losses of the linear fits (the library's names).");
}
