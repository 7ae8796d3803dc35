// dpstats fit --task user-level|classify|heavy-tailed ...: the options all tasks share, then
// dispatch. Task-only options and the run live in cmd_fit_<task>.cpp (see fit.hpp).
#include <memory>

#include <fmt/format.h>

#include "budget_file.hpp"
#include "cli.hpp"
#include "dpstats/error.hpp"
#include "dpstats/run_control.hpp"
#include "dpstats/solvers/fit_registry.hpp"
#include "fit.hpp"
#include "ranks.hpp"

namespace dpstats::cli {

void reject_for_task(bool set, const std::string& flag, optimize::FitTask task) {
  require(!set, fmt::format("--{} does not apply to --task {}", flag, name_of(task)));
}

std::optional<bool> centre_option(const FitArgs& a) {
  if (a.centre) return true;
  if (a.no_centre) return false;
  return std::nullopt;
}

void add_fit_command(CLI::App& app) {
  auto a = std::make_shared<FitArgs>();
  auto* cmd = app.add_subcommand(
      "fit", "Private model fitting: user-level DP convex optimisation (--task user-level), "
             "private classifiers with DP-SGD/DP-Adam (--task classify), pure-DP convex "
             "optimisation with heavy-tailed gradients (--task heavy-tailed)");
  add_declared(cmd, "fit", "task", a->task_name)
      ->check(CLI::IsMember(enum_names<optimize::FitTask>()));
  add_declared(cmd, "fit", "users", a->users);
  add_declared(cmd, "fit", "loss", a->loss);
  add_declared(cmd, "fit", "method", a->method);
  add_release_options(cmd, *a, kEveryRelease | kScaleShare | kProfile);
  add_request_options(cmd, "fit", *a, {});  // the options every task reads (fit.hpp)
  auto* centre = add_declared_flag(cmd, "fit", "centre", a->centre);
  add_declared_flag(cmd, "fit", "no_centre", a->no_centre)->excludes(centre);
  add_input_options(cmd, a->input, /*required=*/false);
  const FitRunner user_level = add_fit_user_level(cmd);
  const FitRunner classify = add_fit_classify(cmd);
  const FitRunner heavy_tailed = add_fit_heavy_tailed(cmd);
  cmd->callback([a, user_level, classify, heavy_tailed] {
    // No silent task: a table's first column is never taken for user ids unless asked.
    if (a->task_name) {
      a->task = parse_enum<optimize::FitTask>(*a->task_name);
    } else {
      require(a->users.has_value(),
              "--task is required: user-level (with --users COLUMN naming the user ids), "
              "classify or heavy-tailed");
    }
    if (a->task != optimize::FitTask::user_level) reject_for_task(a->users.has_value(), "users", a->task);
    for (const auto& [task, runner] : {std::pair{optimize::FitTask::user_level, &user_level},
                                       std::pair{optimize::FitTask::classify, &classify},
                                       std::pair{optimize::FitTask::heavy_tailed, &heavy_tailed}})
      if (task != a->task)
        for (const std::string& name : runner->given())
          reject_for_task(true, cli_flag(find_option("fit", name)).substr(2), a->task);
    // Several ranks: every task distributes its rows (docs/guide.md "Running on a cluster"; the
    // library refuses the methods that do not).
    switch (a->task) {
      case optimize::FitTask::classify: return classify.run(*a);
      case optimize::FitTask::heavy_tailed: return heavy_tailed.run(*a);
      case optimize::FitTask::user_level: return user_level.run(*a);
    }
  });
}

}  // namespace dpstats::cli
