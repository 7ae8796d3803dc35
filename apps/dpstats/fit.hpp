// `dpstats fit`: one subcommand, one file per task. cmd_fit.cpp registers the options every task
// shares (FitArgs) and dispatches on --task; each cmd_fit_<task>.cpp registers its own
// task-only options and returns the runner. A task rejects shared options it does not use.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "cli.hpp"

namespace dpstats::cli {

struct FitArgs {
  std::string task;  // --task; absent: user-level when --users is given, else an error
  std::optional<std::string> users;  // --users COLUMN (user-level): the column of user ids
  std::optional<std::string> loss, method, profile;
  std::optional<double> epsilon, delta, domain_radius, step_size, clip;
  std::optional<int> steps, epochs, batch_size;
  std::optional<double> feature_bound, label_bound, scale_share;
  std::optional<double> holdout, holdout_share, holdout_loss_bound;  // every task
  std::optional<std::uint64_t> seed;
  std::optional<std::string> budget;  // --budget FILE (budget_file.hpp), every task
  std::optional<int> threads;          // --threads T, every task (absent: RunControl's default)
  bool centre = false, no_centre = false;  // --centre / --no-centre (user-level, heavy-tailed)
  InputArgs input;  // positional INPUT and the shared input options; path empty when not given
};

using FitRunner = std::function<void(const FitArgs&)>;

FitRunner add_fit_user_level(CLI::App* cmd);    // cmd_fit_user_level.cpp
FitRunner add_fit_classify(CLI::App* cmd);      // cmd_fit_classify.cpp
FitRunner add_fit_heavy_tailed(CLI::App* cmd);  // cmd_fit_heavy_tailed.cpp

// Throws InvalidArgument "--<flag> does not apply to --task <task>" when `set`.
void reject_for_task(bool set, const std::string& flag, const std::string& task);

// --centre -> true, --no-centre -> false, neither -> absent (the library decides).
std::optional<bool> centre_option(const FitArgs& a);

}  // namespace dpstats::cli
