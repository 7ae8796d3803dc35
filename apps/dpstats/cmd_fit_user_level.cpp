// dpstats fit --task user-level --loss logistic|hinge|squared|huber
//             --method phased-sgd|accelerated|nonsmooth|dp-gd-user|dp-sgd-user|dp-sgd-group|non-private
//             --epsilon E --delta D --domain-radius R [--profile practical|paper] [--steps T]
//             [--step-size η] [--clip c] [--items-per-user m] [--feature-bound A]
//             [--label-bound B] [--smoothing-radius r] [--users-per-step K] [--seed N] INPUT
// INPUT columns: user id, label, features. Without --method: the recommended dp-gd-user.
#include <algorithm>
#include <memory>

#include "cli.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/optimize/user_level.hpp"
#include "fit.hpp"

namespace dpstats::cli {

namespace {

const std::vector<std::string> kLosses = {"logistic", "hinge", "squared", "huber"};
const std::vector<std::string> kMethods = {"dp-gd-user", "dp-sgd-user", "dp-sgd-group",
                                           "phased-sgd", "accelerated", "nonsmooth",
                                           "non-private"};

std::string one_of(const std::optional<std::string>& v, const std::vector<std::string>& allowed,
                   const std::string& flag) {
  const std::string s = v.value_or(allowed.front());
  if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) return s;
  std::string list;
  for (const auto& x : allowed) list += (list.empty() ? "" : ", ") + x;
  throw InvalidArgument("--" + flag + " for --task user-level must be one of " + list + ", got '" +
                        s + "'");
}

struct Alg3Args {
  std::optional<double> smoothing_radius;
  std::optional<std::int64_t> users_per_step;
};

void run_fit(const FitArgs& a, std::int64_t items_per_user, const Alg3Args& a3) {
  reject_for_task(a.epochs.has_value(), "epochs", a.task);
  reject_for_task(a.batch_size.has_value(), "batch-size", a.task);
  const std::string loss = one_of(a.loss, kLosses, "loss");
  const std::string method = one_of(a.method, kMethods, "method");
  require(a.domain_radius.has_value(), "--domain-radius R (public radius of the domain) is required");
  require(!a.input.path.empty(), "INPUT (CSV: user id, label, features) is required for --task user-level");
  const Table table = read_input(a.input);
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
  const optimize::UserDataset data(X, y, users, items_per_user, a.feature_bound.value_or(1),
                                   a.label_bound.value_or(1));
  optimize::UserLevelOptions o;
  o.method = optimize::parse_user_level_method(method);
  o.loss = loss;
  o.epsilon = a.epsilon.value_or(1);
  o.delta = a.delta.value_or(1e-6);
  o.domain_radius = *a.domain_radius;
  o.steps = a.steps;
  o.step_size = a.step_size;
  o.clip = a.clip;
  const std::string profile = a.profile.value_or("practical");
  require(profile == "practical" || profile == "paper",
          "--profile must be practical or paper, got '" + profile + "'");
  o.alg1.profile = profile == "paper" ? optimize::UserLevelProfile::paper
                                      : optimize::UserLevelProfile::practical;
  o.alg3.profile = o.alg1.profile;
  reject_for_task(a3.smoothing_radius.has_value() && method != "nonsmooth", "smoothing-radius",
                  a.task + " --method " + method);
  reject_for_task(a3.users_per_step.has_value() && method != "accelerated" && method != "nonsmooth",
                  "users-per-step", a.task + " --method " + method);
  o.alg3.smoothing_radius = a3.smoothing_radius;
  o.alg3.users_per_step = a3.users_per_step;
  auto rng = make_rng(a.seed);
  const auto r = optimize::fit_user_level(data, o, *rng);
  nlohmann::ordered_json head = {{"command", "fit"}, {"task", a.task}, {"method", method}};
  head["estimate"] = std::vector<double>(r.estimate.data(), r.estimate.data() + r.estimate.size());
  nlohmann::ordered_json extra = {{"n_users", data.num_users()},
                                  {"items_per_user", data.items_per_user()},
                                  {"d", data.dim()}};
  print_json(release_output(std::move(head), release_fields_json(r), extra));
}

}  // namespace

FitRunner add_fit_user_level(CLI::App* cmd) {
  auto items_per_user = std::make_shared<std::int64_t>(0);
  auto a3 = std::make_shared<Alg3Args>();
  cmd->add_option("--items-per-user", *items_per_user,
                  "user-level: m, each user truncated/padded to m rows (default rows/users)");
  cmd->add_option("--smoothing-radius", a3->smoothing_radius,
                  "user-level nonsmooth: smoothing radius r (default R·sqrt(d)/(eps·n·sqrt(m)))");
  cmd->add_option("--users-per-step", a3->users_per_step,
                  "user-level accelerated/nonsmooth practical: users per step K (default all)");
  return [items_per_user, a3](const FitArgs& a) { run_fit(a, *items_per_user, *a3); };
}

}  // namespace dpstats::cli
