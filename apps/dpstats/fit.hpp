// `dpstats fit`: one subcommand, one file per task. cmd_fit.cpp registers the options every task
// shares (FitArgs) and dispatches on --task; each cmd_fit_<task>.cpp registers its own
// task-only options and returns the runner. A task rejects shared options it does not use, and
// every other task's own options.
#pragma once
#include <CLI/CLI.hpp>
#include <concepts>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "dpstats/option_fields.hpp"
#include "dpstats/solvers/fit_registry.hpp"
#include "options_cli.hpp"

namespace dpstats::cli {

// The shared release options (privacy target, --profile, --scale-share, --threads, --seed,
// --budget) are ReleaseArgs', declared once in options_cli.hpp.
struct FitArgs : ReleaseArgs {
  std::optional<std::string> task_name;  // --task; absent: user-level when --users is given
  optimize::FitTask task = optimize::FitTask::user_level;  // task_name parsed by its EnumNames
  std::optional<std::string> users;  // --users COLUMN (user-level): the column of user ids
  std::optional<std::string> loss, method;
  std::optional<double> domain_radius, step_size, clip;
  std::optional<int> steps, epochs, batch_size;
  std::optional<double> feature_bound, label_bound;
  std::optional<double> holdout, holdout_share, holdout_loss_bound;  // every task
  bool centre = false, no_centre = false;  // --centre / --no-centre (user-level, heavy-tailed)
  InputArgs input;  // positional INPUT and the shared input options; path empty when not given
};

// The options every task reads under their declared names (src/options.cpp, command "fit"):
// add_request_options adds them as flags, so a new one is its declaration and a line here.
template <class A, class V>
  requires std::same_as<std::remove_cvref_t<A>, FitArgs>
void visit_fields(A&& a, V&& v) {
  v("domain_radius", a.domain_radius);
  v("steps", a.steps);
  v("step_size", a.step_size);
  v("clip", a.clip);
  v("epochs", a.epochs);
  v("batch_size", a.batch_size);
  v("feature_bound", a.feature_bound);
  v("label_bound", a.label_bound);
  v("holdout", a.holdout);
  v("holdout_share", a.holdout_share);
  v("holdout_loss_bound", a.holdout_loss_bound);
}

// A task's runner and the names of its own options the user set (its request's given fields and
// its file flags): every other task refuses them, so no flag is silently ignored.
struct FitRunner {
  std::function<void(const FitArgs&)> run;
  std::function<std::vector<std::string>()> given;
};

FitRunner add_fit_user_level(CLI::App* cmd);    // cmd_fit_user_level.cpp
FitRunner add_fit_classify(CLI::App* cmd);      // cmd_fit_classify.cpp
FitRunner add_fit_heavy_tailed(CLI::App* cmd);  // cmd_fit_heavy_tailed.cpp

// Throws InvalidArgument "--<flag> does not apply to --task <task>" when `set`.
void reject_for_task(bool set, const std::string& flag, optimize::FitTask task);

// --centre -> true, --no-centre -> false, neither -> absent (the library decides).
std::optional<bool> centre_option(const FitArgs& a);

}  // namespace dpstats::cli
