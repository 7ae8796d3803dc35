// dpstats fit --task heavy-tailed --loss absolute|hinge|huber|logistic|squared
//             --method lipschitz-extension|clipped-gd|output-perturbation|dp-sgd
//             --epsilon E [--delta D] --domain-radius R [--moment-order k] [--moment-bound G_k]
//             [--moment-bound-2 G_2] [--profile practical|paper] [--phases T] [--steps T]
//             [--step-size η] [--clip C] [--inner glm-one-stage|double-output-perturbation]
//             [--final-clip-rule private-quantile|public] [--centre|--no-centre] [--threads T]
//             [--seed N] INPUT
// INPUT columns: label, features. Pure ε-DP (δ = 0) for every method but dp-sgd (the (ε, δ)
// Gaussian baseline). Without --method: clipped-gd (the default: no data-dependent abort, so its
// whole output, status included, is covered by its epsilon-DP guarantee; lipschitz-extension and
// output-perturbation releases say certified: false because their certificate's abort bit is not). k, G_k (and G_2) are PUBLIC bounds on the
// k-th moment of the worst-case per-record gradient norm over the domain (docs/proofs/heavy-tailed.md §0).
#include <algorithm>
#include <memory>

#include "budget_file.hpp"
#include "cli.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_request.hpp"
#include "dpstats/solvers/fit_registry.hpp"
#include "fit.hpp"
#include "ranks.hpp"

namespace dpstats::cli {
namespace {

void run_fit(const FitArgs& a, const optimize::HeavyTailedRequest& request) {
  reject_for_task(a.epochs.has_value(), "epochs", a.task);
  reject_for_task(a.batch_size.has_value(), "batch-size", a.task);
  reject_for_task(a.feature_bound.has_value(), "feature-bound", a.task);
  reject_for_task(a.label_bound.has_value(), "label-bound", a.task);
  optimize::HeavyTailedOptions o;
  o.method = parse_enum<optimize::HeavyTailedMethod>(a.method.value_or("clipped-gd"));
  o.loss = parse_enum<optimize::GlmKind>(a.loss.value_or("absolute"));
  o.profile = a.profile.value_or(Profile::practical);
  o.steps = a.steps;
  o.step_size = a.step_size;
  o.clip = a.clip;
  optimize::apply_request(request, o);  // refuses what the method does not read
  if (o.method != optimize::HeavyTailedMethod::non_private) {
    require(a.epsilon.has_value(), "--epsilon is required (> 0)");
    o.privacy = {*a.epsilon, a.delta.value_or(0)};  // delta: the library's rule (dp-sgd needs it)
  }
  require(a.domain_radius.has_value(),
          "--domain-radius R is required: the radius of the ball B(0, R) that holds the weights");
  o.domain_radius = *a.domain_radius;
  if (a.scale_share) o.scale_share = *a.scale_share;
  o.centre = centre_option(a);
  if (a.threads) o.run.threads = *a.threads;
  o.holdout = a.holdout;
  if (a.holdout_share) o.holdout_share = *a.holdout_share;
  if (a.holdout_loss_bound) o.holdout_loss_bound = *a.holdout_loss_bound;
  require(!a.input.path.empty(), "INPUT (CSV: label, features) is required for --task heavy-tailed");
  o.run.comm = ranks();  // null: one process; several ranks: this rank's rows
  const InputShard input = read_input_shard(a.input, o.run.comm);
  const Table& table = input.table;
  require(table.values.cols() >= 2,
          "INPUT needs at least 2 columns (label, features), got " + std::to_string(table.values.cols()));
  const Vector y = table.values.col(0);
  const RowMatrix X = table.values.rightCols(table.values.cols() - 1);
  auto rng = make_rng(a.seed);
  BudgetFile budget(is_root() ? a.budget : std::nullopt);  // the ledger lives on rank 0
  const auto r = optimize::fit_heavy_tailed(X, y, o, *rng, budget.get());
  nlohmann::ordered_json head = {{"command", "fit"}, {"task", name_of(a.task)},
                                 {"method", name_of(o.method)}, {"loss", name_of(o.loss)}};
  head["estimate"] = r.status == Status::ok
                         ? nlohmann::ordered_json(std::vector<double>(
                               r.estimate.data(), r.estimate.data() + r.estimate.size()))
                         : nlohmann::ordered_json(nullptr);
  nlohmann::ordered_json extra = {{"n", input.total}, {"d", X.cols()},
                                  {"moment_order", o.moment_order}};
  budget.commit();  // before anything is printed
  if (is_root())
    print_json(release_output(std::move(head), release_fields_json(r), extra, &a.input));
}

}  // namespace

FitRunner add_fit_heavy_tailed(CLI::App* cmd) {
  auto request = std::make_shared<optimize::HeavyTailedRequest>();
  add_request_options(cmd, "fit", *request,
                      optimize::fit_methods(optimize::FitTask::heavy_tailed));
  return {[request](const FitArgs& a) { run_fit(a, *request); },
          [request] { return given_options(*request); }};
}

}  // namespace dpstats::cli
