// The declared options (dpstats/options.hpp) and the names the Python layer dispatches on: the
// package validates its keywords and writes their docstring lines from these declarations
// (python/dpstats/_options.py), and parses method and task names through the library's
// EnumNames, never by comparing strings.
#include "common.hpp"
#include "dpstats/dry_run.hpp"
#include "dpstats/median/median_command.hpp"
#include "dpstats/options.hpp"
#include "dpstats/solvers/fit_registry.hpp"
#include "dpstats/solvers/loss.hpp"
#include "dpstats/training/classifier.hpp"

namespace py = pybind11;
using namespace dpstats;

namespace {

const char* kind_name(OptionKind k) {
  switch (k) {
    case OptionKind::number: return "number";
    case OptionKind::integer: return "integer";
    case OptionKind::text: return "text";
    case OptionKind::flag: return "flag";
  }
  return "?";
}

py::list declared_options_py() {
  py::list out;
  for (const OptionDecl& d : declared_options()) {
    py::dict o;
    o["command"] = std::string(d.command);
    o["name"] = std::string(d.name);
    o["kind"] = kind_name(d.kind);
    o["unit"] = std::string(d.unit);
    o["range"] = range_text(d);
    o["default"] = std::string(d.default_text);
    o["help"] = std::string(d.help);
    o["cli"] = cli_flag(d);
    out.append(o);
  }
  return out;
}

// dry_run=True (python/dpstats/_dry.py): the library's DryRun, and its stop as the Python
// exception _DryRunStopped (not an error: the release reached its charge and went no further).
void bind_dry_run(py::module_& m) {
  static PyObject* stopped =
      PyErr_NewException("dpstats._dpstats._DryRunStopped", PyExc_Exception, nullptr);
  m.attr("_DryRunStopped") = py::handle(stopped);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const DryRunStop&) {
      PyErr_SetString(stopped, "the dry run's release stopped at its charge");
    }
  });
  py::class_<DryRun>(m, "_DryRun")
      .def(py::init<>())
      .def("close", &DryRun::close)
      .def("stopped", &DryRun::stopped)
      .def("json",
           [](const DryRun& r, std::optional<std::int64_t> n_hint, const std::string& remedy) {
             return r.json(n_hint, remedy).dump();
           })
      // A release that reached Python abstained on its plan, or a method charging nothing.
      .def("abstained", [](DryRun&, const std::string& reason) {
        try {
          dry_run_abstained(reason);
        } catch (const DryRunStop&) {
        }
      })
      .def("non_private", [](DryRun&) {
        try {
          dry_run_stop({}, std::nullopt);
        } catch (const DryRunStop&) {
        }
      });
}

}  // namespace

void bind_options(py::module_& m) {
  bind_dry_run(m);
  m.def("_declared_options", &declared_options_py,
        "Every declared option: command ('' = shared), name, kind, unit, range, default, help, "
        "cli (the tool's flag).");
  m.def(
      "_check_option",
      [](const std::string& command, const std::string& name, double value) {
        check_option(find_option(command, name), value);
      },
      py::arg("command"), py::arg("name"), py::arg("value"));
  m.def(
      "_option_help",
      [](const std::string& command, const std::string& name) {
        return option_help(find_option(command, name));
      },
      py::arg("command"), py::arg("name"));
  py::enum_<optimize::FitTask>(m, "FitTask")
      .value("user_level", optimize::FitTask::user_level)
      .value("classify", optimize::FitTask::classify)
      .value("heavy_tailed", optimize::FitTask::heavy_tailed);
  m.def("_fit_task", [](const std::string& name) { return parse_enum<optimize::FitTask>(name); },
        py::arg("task"));
  // A fitted model's loss and classify model, parsed once (FittedModel, python/dpstats/model.py).
  py::enum_<optimize::GlmKind>(m, "GlmKind")
      .value("absolute", optimize::GlmKind::absolute)
      .value("hinge", optimize::GlmKind::hinge)
      .value("squared", optimize::GlmKind::squared)
      .value("huber", optimize::GlmKind::huber)
      .value("logistic", optimize::GlmKind::logistic);
  m.def("_glm_kind", [](const std::string& name) { return parse_enum<optimize::GlmKind>(name); },
        py::arg("loss"));
  m.def("_binary_labels", &optimize::binary_labels, py::arg("loss"),
        "Whether the loss classifies labels +-1 (logistic, hinge).");
  py::enum_<optimize::ModelKind>(m, "ModelKind")
      .value("logistic", optimize::ModelKind::logistic)
      .value("mlp", optimize::ModelKind::mlp);
  m.def("_model_kind", [](const std::string& name) { return parse_enum<optimize::ModelKind>(name); },
        py::arg("model"));
  m.def(
      "_median_is_private",
      [](const std::string& name) {
        return private_method(parse_enum<MedianCommand>(name)).has_value();
      },
      py::arg("method"));
}
