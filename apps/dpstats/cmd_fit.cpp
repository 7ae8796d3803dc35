// dpstats fit --task user-level --loss logistic|hinge|squared|huber
//             --method phased-sgd|dp-gd-user|dp-sgd-user|dp-sgd-group|non-private
//             --epsilon E --delta D --domain-radius R [--profile practical|paper] [--steps T]
//             [--step-size η] [--clip c] [--items-per-user m] [--feature-bound A]
//             [--label-bound B] [--seed N] INPUT
// INPUT columns: user id, label, features. Without --method: the recommended dp-gd-user.
#include "cli.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/optimize/user_level.hpp"

namespace dpstats::cli {

namespace {

struct FitArgs {
  std::string task = "user-level";
  std::string loss = "logistic";
  std::string method = "dp-gd-user";
  std::string profile = "practical";
  double epsilon = 1, delta = 1e-6;
  std::optional<double> domain_radius, step_size, clip;
  std::optional<int> steps;
  std::int64_t items_per_user = 0;
  double feature_bound = 1, label_bound = 1;
  std::optional<std::uint64_t> seed;
  std::string input;
};

void run_fit(const FitArgs& a) {
  require(a.task == "user-level", "--task must be 'user-level', got '" + a.task + "'");
  require(a.domain_radius.has_value(), "--domain-radius R (public radius of the domain) is required");
  const Table table = read_table(a.input);
  require(table.values.cols() >= 3,
          "INPUT needs at least 3 columns (user id, label, features), got " +
              std::to_string(table.values.cols()));
  const Eigen::Index rows = table.values.rows();
  std::vector<std::int64_t> users(static_cast<std::size_t>(rows));
  for (Eigen::Index i = 0; i < rows; ++i) {
    const double u = table.values(i, 0);
    require(u == std::floor(u) && std::abs(u) < 9e15, "user ids (column 1) must be integers");
    users[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(u);
  }
  const Vector y = table.values.col(1);
  const RowMatrix X = table.values.rightCols(table.values.cols() - 2);
  const optimize::UserDataset data(X, y, users, a.items_per_user, a.feature_bound, a.label_bound);
  optimize::UserLevelOptions o;
  o.method = optimize::parse_user_level_method(a.method);
  o.loss = a.loss;
  o.epsilon = a.epsilon;
  o.delta = a.delta;
  o.domain_radius = *a.domain_radius;
  o.steps = a.steps;
  o.step_size = a.step_size;
  o.clip = a.clip;
  o.alg1.profile =
      a.profile == "paper" ? optimize::UserLevelProfile::paper : optimize::UserLevelProfile::practical;
  auto rng = make_rng(a.seed);
  const auto r = optimize::fit_user_level(data, o, *rng);
  nlohmann::ordered_json head = {{"command", "fit"}, {"task", a.task}, {"method", a.method}};
  head["estimate"] = std::vector<double>(r.estimate.data(), r.estimate.data() + r.estimate.size());
  nlohmann::ordered_json extra = {{"n_users", data.num_users()},
                                  {"items_per_user", data.items_per_user()},
                                  {"d", data.dim()}};
  print_json(release_output(std::move(head), release_fields_json(r), extra));
}

}  // namespace

void add_fit_command(CLI::App& app) {
  auto a = std::make_shared<FitArgs>();
  auto* cmd = app.add_subcommand("fit", "Private model fitting (user-level DP convex optimisation)");
  cmd->add_option("--task", a->task, "user-level")->check(CLI::IsMember({"user-level"}));
  cmd->add_option("--loss", a->loss, "logistic (default), hinge, squared, huber")
      ->check(CLI::IsMember({"logistic", "hinge", "squared", "huber"}));
  cmd->add_option("--method", a->method,
                  "dp-gd-user (default, recommended), dp-sgd-user, dp-sgd-group, phased-sgd "
                  "(Alg 1), non-private")
      ->check(CLI::IsMember(
          {"dp-gd-user", "dp-sgd-user", "dp-sgd-group", "phased-sgd", "non-private"}));
  cmd->add_option("--profile", a->profile, "practical (default) or paper (Alg 1 constants)")
      ->check(CLI::IsMember({"practical", "paper"}));
  cmd->add_option("--epsilon", a->epsilon, "user-level epsilon > 0 (default 1)");
  cmd->add_option("--delta", a->delta, "user-level delta in (0, 1) (default 1e-6)");
  cmd->add_option("--domain-radius", a->domain_radius, "radius of the domain ball B(0, R)");
  cmd->add_option("--steps", a->steps, "gradient steps (DP-GD) or batches (DP-SGD); default 20");
  cmd->add_option("--step-size", a->step_size, "step size (default 4R/(clip T))");
  cmd->add_option("--clip", a->clip, "per-user gradient clip (default L/(4 sqrt(m)))");
  cmd->add_option("--items-per-user", a->items_per_user,
                  "m: each user truncated/padded to m rows (default rows/users)");
  cmd->add_option("--feature-bound", a->feature_bound, "public bound A on feature norms (rows clipped)");
  cmd->add_option("--label-bound", a->label_bound, "public bound B on |label| (labels clipped)");
  add_seed_option(cmd, a->seed);
  cmd->add_option("INPUT", a->input, "CSV: user id, label, features (header auto-detected)")
      ->required();
  cmd->callback([a] { run_fit(*a); });
}

}  // namespace dpstats::cli
