// Bindings for fit(task="classify"): private softmax classifiers trained with DP-SGD / DP-Adam
// variants (training/train_classifier.hpp); python/dpstats/classify.py validates and wraps.
#include <optional>

#include "comm.hpp"
#include "common.hpp"
#include "dpstats/error.hpp"
#include "dpstats/training/train_classifier.hpp"

namespace py = pybind11;
using namespace dpstats;
using namespace dpstats::python;

namespace {

std::vector<int> as_labels(const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& y,
                           Eigen::Index rows, const char* name) {
  require(y.ndim() == 1 && y.shape(0) == rows,
          std::string(name) + " must be 1-D with one label per row");
  std::vector<int> out(static_cast<std::size_t>(rows));
  for (Eigen::Index i = 0; i < rows; ++i) {
    const auto v = y.data()[i];
    require(v >= 0 && v < (1 << 30), std::string(name) + " labels must be integers >= 0");
    out[static_cast<std::size_t>(i)] = static_cast<int>(v);
  }
  return out;
}

py::tuple fit_classify_native(
    const CArray& X, const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& y,
    const std::string& model, const std::string& optimizer, int classes, int hidden,
    std::optional<double> epsilon, std::optional<double> noise_multiplier,
    std::optional<double> delta, std::optional<double> feature_scale, std::optional<double> scale_share,
    int epochs, int batch_size, std::optional<double> learning_rate, double clip,
    double jme_lambda, double tau,
    std::optional<double> second_moment_floor, std::optional<CArray> X_test,
    std::optional<py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>> y_test,
    std::optional<int> threads, std::optional<std::uint64_t> seed, Budget* budget,
    const py::object& comm, std::optional<std::int64_t> n_public, bool test_is_train,
    std::optional<double> holdout, std::optional<double> holdout_share,
    std::optional<double> holdout_loss_bound, bool one_unit) {
  const auto data = as_matrix(X);
  const std::vector<int> labels = as_labels(y, data.rows(), "y");
  optimize::ClassifyOptions o;
  o.optimizer = optimize::parse_classify_optimizer(optimizer);
  o.privacy = {epsilon.value_or(0.0), delta.value_or(0.0)};  // 0 = not given: refused
  o.noise_multiplier = noise_multiplier;
  o.feature_scale = feature_scale;
  o.scale_share = scale_share;
  o.one_unit = one_unit;
  o.epochs = epochs;
  o.batch_size = batch_size;
  o.learning_rate = learning_rate;
  o.clip = clip;
  o.lambda = jme_lambda;
  o.tau = tau;
  o.second_moment_floor = second_moment_floor;
  o.n_public = n_public;
  o.holdout = holdout;
  if (holdout_share) o.holdout_share = *holdout_share;
  if (holdout_loss_bound) o.loss_bound = *holdout_loss_bound;
  if (threads) o.run.threads = check_threads(*threads);  // absent: RunControl's default
  const auto ranks = communicator(comm);  // comm=None: this process holds every row
  o.run.comm = ranks.get();
  const auto kind = optimize::parse_model_kind(model);
  RowMatrix test_X;
  std::vector<int> test_y;
  optimize::EvalSet eval;
  if (X_test) {
    require(y_test.has_value(), "X_test needs y_test");
    test_X = as_matrix(*X_test, "X_test");
    test_y = as_labels(*y_test, test_X.rows(), "y_test");
    eval = {&test_X, &test_y, test_is_train};
  }
  auto rng = make_rng(seed);
  SeededRng init(seed.value_or(0) ^ 0x9e3779b97f4a7c15ULL);  // public, data-independent init
  Release<optimize::Classifier> r;
  {
    GilRelease release(budget);
    auto m = kind == optimize::ModelKind::mlp
                 ? optimize::Classifier::mlp(data.cols(), hidden, classes, init)
                 : optimize::Classifier::logistic(data.cols(), classes);
    r = optimize::train_classifier(std::move(m), data, labels, o, *rng, budget, eval);
  }
  r.diagnostics["features"] = r.estimate.features();
  r.diagnostics["classes"] = r.estimate.classes();
  if (kind == optimize::ModelKind::mlp) r.diagnostics["hidden"] = r.estimate.hidden();
  Release<Vector> flat;
  flat.estimate = r.estimate.parameters();
  flat.privacy = r.privacy;
  flat.status = r.status;
  flat.seeded = r.seeded;
  flat.noise = r.noise;
  flat.ledger = r.ledger;
  flat.diagnostics = r.diagnostics;
  return to_python(flat, {static_cast<py::ssize_t>(flat.estimate.size())});
}

}  // namespace

void bind_classify(py::module_& m) {
  m.def("_classify_optimizers", [] {
    std::vector<std::string> names;
    for (const auto& mi : optimize::classify_optimizers()) names.emplace_back(mi.name);
    return names;
  });
  m.def("fit_classify", &fit_classify_native, py::arg("X"), py::arg("y"), py::arg("model"),
        py::arg("optimizer"), py::arg("classes"), py::arg("hidden"), py::arg("epsilon"),
        py::arg("noise_multiplier"), py::arg("delta"), py::arg("feature_scale"),
        py::arg("scale_share"), py::arg("epochs"), py::arg("batch_size"),
        py::arg("learning_rate"), py::arg("clip"), py::arg("jme_lambda"), py::arg("tau"),
        py::arg("second_moment_floor"), py::arg("X_test"), py::arg("y_test"), py::arg("threads"),
        py::arg("seed"), py::arg("budget").none(true) = nullptr, py::arg("comm") = py::none(),
        py::arg("n_public") = py::none(), py::arg("test_is_train") = false,
        py::arg("holdout") = py::none(), py::arg("holdout_share") = py::none(),
        py::arg("holdout_loss_bound") = py::none(), py::arg("one_unit") = false);
}
