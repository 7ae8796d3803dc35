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

void reject_for_task(bool set, const std::string& flag, FitTask task) {
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
  cmd->add_option_function<std::string>(
         "--task",
         [a](const std::string& name) {
           a->task = parse_enum<FitTask>(name);
           a->task_given = true;
         },
         "user-level, classify, heavy-tailed (required, except that --users means user-level)")
      ->check(CLI::IsMember(enum_names<FitTask>()));
  cmd->add_option("--users", a->users,
                  "user-level: the column (name or 1-based index) holding each row's user id, "
                  "integers or text (e.g. airport codes); the label and features are --columns, "
                  "or every other column in order. Absent: user ids are column 1");
  cmd->add_option("--loss", a->loss, "loss function (choices depend on --task)");
  cmd->add_option("--method", a->method, "algorithm (choices depend on --task)");
  add_release_options(cmd, *a, kEveryRelease | kScaleShare | kProfile);
  cmd->add_option("--domain-radius", a->domain_radius, "radius of the domain ball B(0, R)");
  cmd->add_option("--steps", a->steps, "optimisation steps");
  cmd->add_option("--step-size", a->step_size, "step size / learning rate");
  cmd->add_option("--clip", a->clip, "gradient clipping norm");
  cmd->add_option("--epochs", a->epochs, "passes over the data");
  cmd->add_option("--batch-size", a->batch_size, "(expected) batch size");
  cmd->add_option("--feature-bound", a->feature_bound,
                  "user-level: public bound on feature norms (rows clipped; absent: estimated "
                  "privately from --scale-share)");
  cmd->add_option("--label-bound", a->label_bound,
                  "user-level squared/huber: public bound on |label| (absent: estimated privately)");
  cmd->add_option("--holdout", a->holdout,
                  "fraction in (0, 0.5] of the rows (users for user-level) held out by a secret "
                  "random split: the fit does not see them, and diagnostics.holdout states the "
                  "released model's private mean clipped loss on them with 95% intervals");
  cmd->add_option("--holdout-share", a->holdout_share,
                  "share of the budget for the held-out loss (default 0.05: of rho, of epsilon "
                  "for the pure heavy-tailed methods)");
  cmd->add_option("--holdout-loss-bound", a->holdout_loss_bound,
                  "clip of each held-out unit's loss (default 5; classify: the per-example loss "
                  "clip of the epoch losses too)");
  auto* centre = cmd->add_flag("--centre", a->centre,
                               "user-level, heavy-tailed: always centre the features privately "
                               "and fit an intercept (abstain when the rows are too few)");
  cmd->add_flag("--no-centre", a->no_centre,
                "user-level, heavy-tailed: never centre (fit x . w in the data's units, no "
                "intercept and no offset check)")
      ->excludes(centre);
  add_input_options(cmd, a->input, /*required=*/false);
  const FitRunner user_level = add_fit_user_level(cmd);
  const FitRunner classify = add_fit_classify(cmd);
  const FitRunner heavy_tailed = add_fit_heavy_tailed(cmd);
  cmd->callback([a, user_level, classify, heavy_tailed] {
    // No silent task: a table's first column is never taken for user ids unless asked.
    if (!a->task_given) {
      require(a->users.has_value(),
              "--task is required: user-level (with --users COLUMN naming the user ids), "
              "classify or heavy-tailed");
    }
    if (a->task != FitTask::user_level) reject_for_task(a->users.has_value(), "users", a->task);
    // Several ranks: every task distributes its rows (docs/guide.md "Running on a cluster"; the
    // library refuses the methods that do not).
    switch (a->task) {
      case FitTask::classify: return classify(*a);
      case FitTask::heavy_tailed: return heavy_tailed(*a);
      case FitTask::user_level: return user_level(*a);
    }
  });
}

}  // namespace dpstats::cli
