// The everyday statistics (dpstats/stats/stats.hpp) and the Budget they compose against
// (privacy/budget_json.hpp): python/dpstats/stats.py and budget.py wrap these.
#include <nlohmann/json.hpp>

#include "comm.hpp"
#include "common.hpp"
#include "request.hpp"
#include "dpstats/privacy/budget_json.hpp"
#include "dpstats/stats/stats.hpp"

namespace py = pybind11;
using namespace dpstats;
using namespace dpstats::python;

namespace {

// The statistics' own options come as one dict, filled by the request's field list (request.hpp);
// the statistic's registry line refuses those it does not read (stats::apply_request).
stats::StatOptions options(stats::Statistic s, double epsilon, double delta, const py::dict& given,
                           int threads) {
  stats::StatRequest request;
  fill_request(request, "stat", given);
  stats::StatOptions o;
  o.privacy = {epsilon, delta};
  o.run.threads = check_threads(threads);
  stats::apply_request(s, request, o);
  return o;
}

py::tuple stat_release(const std::string& name, const CArray& X, double epsilon, double delta,
                       const py::dict& given, std::optional<std::uint64_t> seed, int threads,
                       Budget* budget, const py::object& comm) {
  const auto s = parse_enum<stats::Statistic>(name);
  auto o = options(s, epsilon, delta, given, threads);
  const auto data = as_matrix(X);
  const auto ranks = communicator(comm);  // comm=None: this process holds every row
  o.run.comm = ranks.get();
  auto rng = make_rng(seed);
  Release<Vector> r;
  {
    GilRelease release(budget);
    r = stats::numeric(s, data, o, *rng, budget);
  }
  return to_python(r, {static_cast<py::ssize_t>(r.estimate.size())});
}

py::tuple histogram(const std::vector<std::string>& values, const py::dict& given, double epsilon,
                    double delta, std::optional<std::uint64_t> seed, Budget* budget,
                    const py::object& comm) {
  stats::StatOptions o = options(stats::Statistic::histogram, epsilon, delta, given, 1);
  const auto ranks = communicator(comm);  // comm=None: this process holds every value
  o.run.comm = ranks.get();
  auto rng = make_rng(seed);
  Release<stats::Histogram> r;
  {
    GilRelease release(budget);  // the communicator takes the GIL back for each collective
    r = stats::histogram(values, o, *rng, budget);
  }
  CArray counts(static_cast<py::ssize_t>(r.estimate.counts.size()));
  std::copy(r.estimate.counts.data(), r.estimate.counts.data() + r.estimate.counts.size(),
            counts.mutable_data());
  return py::make_tuple(r.estimate.categories, counts, release_fields_json(r).dump());
}

}  // namespace

void bind_stats(py::module_& m) {
  // A spend over the total: dpstats.BudgetExceeded, a ValueError like every refused input.
  py::register_exception<BudgetExceeded>(m, "BudgetExceeded", PyExc_ValueError);
  m.def("stat", &stat_release, py::arg("name"), py::arg("X"), py::arg("epsilon"), py::arg("delta"),
        py::arg("options"), py::arg("seed"), py::arg("threads"), py::arg("budget").none(true),
        py::arg("comm") = py::none());
  m.def("stat_histogram", &histogram, py::arg("values"), py::arg("options"), py::arg("epsilon"),
        py::arg("delta"), py::arg("seed"), py::arg("budget").none(true),
        py::arg("comm") = py::none());
  m.def("_stat_options", &request_fields<stats::StatRequest>,
        "The statistics' declared options as [(name, kind)]: the keywords of dpstats.stat.");
  m.def("stat_registry", [] {
    py::list out;
    for (const auto& e : stats::registry()) {
      py::list opts;
      for (auto o : e.options) opts.append(std::string(o));
      out.append(py::make_tuple(std::string(e.name), std::string(e.summary), opts));
    }
    return out;
  });
  py::class_<Budget>(m, "_Budget")
      .def(py::init([](const std::string& total_json, const std::string& accountant) {
        return Budget(loss_from_json(nlohmann::json::parse(total_json)), parse_accountant(accountant));
      }))
      .def_static("from_json", [](const std::string& text) {
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(text);
        } catch (const nlohmann::json::parse_error&) {
          throw InvalidArgument("a budget must be JSON (as written by Budget.to_json)");
        }
        return budget_from_json(j);
      })
      .def("to_json", [](const Budget& b) { return budget_to_json(b).dump(); })
      .def("copy", [](const Budget& b) { return Budget(b); });
}
