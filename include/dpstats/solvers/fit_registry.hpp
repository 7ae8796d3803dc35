// The `fit` command's registry: its tasks and, per task, its methods and the options each reads.
// The tool (apps/dpstats/cmd_fit*.cpp) and the Python module (python/dpstats/fit.py through
// _dpstats.fit_methods) read these tables; option names are the library's snake_case, spelled
// --kebab-case by the tool and as keyword arguments by Python. The classify task's table lives
// with the training code.
#pragma once
#include <span>

#include "dpstats/names.hpp"
#include "dpstats/registry.hpp"

namespace dpstats::optimize {

enum class FitTask { user_level, classify, heavy_tailed };

// The methods of `task` (user-level, heavy-tailed), the recommended one first.
std::span<const MethodInfo> fit_methods(FitTask task);

}  // namespace dpstats::optimize

template <>
struct dpstats::EnumNames<dpstats::optimize::FitTask> {
  using FitTask = dpstats::optimize::FitTask;
  static constexpr std::string_view parameter = "task";
  static constexpr std::array<std::pair<FitTask, std::string_view>, 3> names = {{
      {FitTask::user_level, "user-level"},
      {FitTask::classify, "classify"},
      {FitTask::heavy_tailed, "heavy-tailed"},
  }};
};
