// dpstats fit --task user-level --loss logistic|hinge|squared|huber
//             --method phased-sgd|accelerated|nonsmooth|dp-gd-user|dp-gd-filter|dp-sgd-user|dp-sgd-group|non-private
//             --epsilon E --delta D --domain-radius R [--profile practical|paper] [--steps T]
//             [--step-size η] [--clip c] [--items-per-user m] [--feature-bound A]
//             [--label-bound B] [--scale-share s] [--centre|--no-centre] [--smoothing-radius r] [--users-per-step K] [--threads T] [--seed N] INPUT
// INPUT columns: user id, label, features. Without --method: the recommended dp-gd-user.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "budget_file.hpp"
#include "cli.hpp"
#include "dry_run_cli.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/solvers/fit_registry.hpp"
#include "dpstats/user_level/home_rank.hpp"
#include "dpstats/user_level/user_level_request.hpp"
#include "fit.hpp"
#include "ranks.hpp"

namespace dpstats::cli {

namespace {

// The rows as (user ids, label and features): without --users, column 1 holds integer ids and the
// rest follow; with --users COLUMN, that column's cells (integers or text such as airport codes)
// are mapped to integers by first appearance (only which rows share a user matters; the map is
// never printed), and the label and features are --columns or every other column in order.
struct UserRows {
  std::vector<std::int64_t> users;
  RowMatrix values;  // label, features
};

double cell_number(const std::string& cell, std::size_t row, std::size_t column) {
  double v = 0;
  const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  require(ec == std::errc() && end == cell.data() + cell.size() && std::isfinite(v),
          "INPUT row {}, column {}: a label or feature cell is not a finite number (content not "
          "shown)", row + 1, column + 1);
  return v;
}

UserRows read_named_users(const InputArgs& in, const std::string& users_column) {
  ReadOptions ro = read_options(in);
  ro.text = true;
  const auto id_spec = parse_column_list(users_column);
  require(id_spec.size() == 1, "--users names one column, got '{}'", users_column);
  if (!ro.columns.empty()) ro.columns.insert(ro.columns.begin(), id_spec[0]);
  Table t = read_table(in.path, ro);
  std::size_t id_col = 0;  // with --columns: the first one read
  if (in.columns.empty()) {
    const auto it = std::find(t.header.begin(), t.header.end(), id_spec[0].name);
    require(it != t.header.end() || (id_spec[0].index >= 1 && id_spec[0].index <= t.text.size()),
            "--users: no column '{}' in INPUT", users_column);
    id_col = it != t.header.end() ? static_cast<std::size_t>(it - t.header.begin())
                                  : id_spec[0].index - 1;
  }
  const std::size_t d = t.text.size(), n = d ? t.text[0].size() : 0;
  require(d >= 3, "INPUT needs the user id column, a label and at least one feature, got {} "
                  "columns", d);
  UserRows out{std::vector<std::int64_t>(n), RowMatrix(static_cast<Eigen::Index>(n),
                                                      static_cast<Eigen::Index>(d - 1))};
  std::unordered_map<std::string, std::int64_t> ids;
  for (std::size_t i = 0; i < n; ++i)
    out.users[i] = ids.try_emplace(t.text[id_col][i], static_cast<std::int64_t>(ids.size()))
                       .first->second;
  for (std::size_t j = 0, k = 0; j < d; ++j) {
    if (j == id_col) continue;
    for (std::size_t i = 0; i < n; ++i)
      out.values(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(k)) =
          cell_number(t.text[j][i], i, j);
    ++k;
  }
  return out;
}

// Without --users every column is read as a number; a text cell there is most often a text user
// id (an airport code), so the input layer's message says where those go.
InputShard read_numbered_input(const InputArgs& in, Communicator* comm) {
  try {
    return read_input_shard(in, comm);
  } catch (const InvalidArgument& e) {
    if (std::string_view(e.what()).find("non-numeric") == std::string_view::npos) throw;
    throw InvalidArgument(std::string(e.what()) +
                          "; text user ids: name their column with --users COLUMN");
  }
}

UserRows read_numbered_users(const Table& table) {
  require(table.values.cols() >= 3,
          "INPUT needs at least 3 columns (user id, label, features), got " +
              std::to_string(table.values.cols()));
  UserRows out{std::vector<std::int64_t>(static_cast<std::size_t>(table.values.rows())),
               table.values.rightCols(table.values.cols() - 1)};
  for (Eigen::Index i = 0; i < table.values.rows(); ++i) {
    const double u = table.values(i, 0);
    require(u == std::floor(u) && std::abs(u) < 9e15,
            "user ids (column 1) must be integers; text ids: name their column with --users");
    out.users[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(u);
  }
  return out;
}

// --dry-run: the header alone gives the label and feature columns; the --n-hint users declared
// hold items_per_user rows of zeros each (dry_run_cli.hpp).
UserRows dry_run_users(const FitArgs& a, std::int64_t items_per_user) {
  const Eigen::Index all = dry_run_table(a.input).values.cols();
  const Eigen::Index cols = a.users && !a.input.columns.empty() ? all : all - 1;  // less the ids
  require(cols >= 2, "INPUT needs the user id column, a label and at least one feature");
  const std::int64_t rows = dry_run_rows() * items_per_user;
  UserRows out{std::vector<std::int64_t>(static_cast<std::size_t>(rows)), RowMatrix::Zero(rows, cols)};
  for (std::int64_t i = 0; i < rows; ++i) out.users[static_cast<std::size_t>(i)] = i / items_per_user;
  return out;
}

void run_fit(const FitArgs& a, const optimize::UserLevelRequest& request) {
  reject_for_task(a.epochs.has_value(), "epochs", a.task);
  reject_for_task(a.batch_size.has_value(), "batch-size", a.task);
  optimize::UserLevelOptions o;
  o.method = parse_enum<optimize::UserLevelMethod>(a.method.value_or("dp-gd-user"));
  o.loss = parse_enum<optimize::GlmKind>(a.loss.value_or("logistic"));
  o.profile = a.profile.value_or(Profile::practical);
  o.steps = a.steps;
  o.step_size = a.step_size;
  o.clip = a.clip;
  optimize::apply_request(request, o, a.profile.has_value());  // refuses what the method does not read
  require(a.domain_radius.has_value(),
          "--domain-radius R is required: the radius of the ball B(0, R) that holds the weights");
  require(!a.budget || o.method != optimize::UserLevelMethod::non_private,
          "--budget does not apply to --method non-private (its output is not private)");
  if (o.method != optimize::UserLevelMethod::non_private) {
    require(a.epsilon.has_value(), "--epsilon is required (> 0)");
    require(a.delta.has_value(), "--delta is required for --task user-level (in (0, 1))");
    o.privacy = {*a.epsilon, *a.delta};
  }
  o.domain_radius = *a.domain_radius;
  o.feature_bound = a.feature_bound;
  o.label_bound = a.label_bound;
  if (a.scale_share) o.scale_share = *a.scale_share;
  o.centre = centre_option(a);
  if (a.threads) o.run.threads = *a.threads;
  o.holdout = a.holdout;
  if (a.holdout_share) o.holdout_share = *a.holdout_share;
  if (a.holdout_loss_bound) o.holdout_loss_bound = *a.holdout_loss_bound;
  require(!a.input.path.empty(), "INPUT (CSV: user id, label, features) is required for --task user-level");
  const std::int64_t items_per_user = optimize::items_per_user(request);
  // Several ranks: this rank's rows (by row range or --shards); gather_users moves every row to
  // its user's home rank before any per-user clip (dpstats/user_level/home_rank.hpp).
  o.run.comm = ranks();
  Communicator& comm = comm_or_single(o.run.comm);
  UserRows rows;
  if (dry_run_open()) {
    rows = dry_run_users(a, items_per_user);
  } else if (a.users) {
    require(comm.size() == 1, "--users (ids read as text) runs on one process; on several ranks "
                              "give integer ids in column 1");
    rows = read_named_users(a.input, *a.users);
  } else {
    const InputShard input = read_numbered_input(a.input, o.run.comm);
    all_or_none(comm, [&] { rows = read_numbered_users(input.table); });
  }
  const Vector y = rows.values.col(0);
  const RowMatrix X = rows.values.rightCols(rows.values.cols() - 1);
  const std::vector<std::int64_t>& users = rows.users;
  const optimize::UserDataset data = optimize::gather_users(comm, X, y, users, items_per_user);
  auto rng = make_rng(a.seed);
  BudgetFile budget(is_root() ? a.budget : std::nullopt);  // the ledger lives on rank 0
  const auto r = optimize::fit_user_level(data, o, *rng, budget.get());
  nlohmann::ordered_json head = {{"command", "fit"}, {"task", name_of(a.task)}, {"method", name_of(o.method)}};
  head["estimate"] = r.status == Status::ok
                         ? nlohmann::ordered_json(std::vector<double>(
                               r.estimate.data(), r.estimate.data() + r.estimate.size()))
                         : nlohmann::ordered_json(nullptr);
  nlohmann::ordered_json extra = {{"n_users", data.total_users()},
                                  {"items_per_user", data.items_per_user()},
                                  {"d", data.dim()}};
  budget.commit();  // before anything is printed
  if (is_root())
    print_json(release_output(std::move(head), release_fields_json(r), extra, &a.input));
}

}  // namespace

FitRunner add_fit_user_level(CLI::App* cmd) {
  auto request = std::make_shared<optimize::UserLevelRequest>();
  add_request_options(cmd, "fit", *request, optimize::fit_methods(optimize::FitTask::user_level));
  return {[request](const FitArgs& a) { run_fit(a, *request); },
          [request] { return given_options(*request); }};
}

}  // namespace dpstats::cli
