// dpstats fit --task heavy-tailed --loss absolute|hinge|huber|logistic|squared
//             --method lipschitz-extension|clipped-gd|output-perturbation|dp-sgd
//             --epsilon E [--delta D] --domain-radius R [--moment k] [--moment-bound G_k]
//             [--moment-bound-2 G_2] [--profile practical|paper] [--phases T] [--steps T]
//             [--step-size η] [--clip C] [--inner glm-one-stage|double-output-perturbation]
//             [--final-clip-rule private-quantile|public] [--seed N] INPUT
// INPUT columns: label, features. Pure ε-DP (δ = 0) for every method but dp-sgd (the (ε, δ)
// Gaussian baseline). Without --method: lipschitz-extension, practical profile (the recommended
// method: its constants come from public values only). k, G_k (and G_2) are PUBLIC bounds on the
// k-th moment of the worst-case per-record gradient norm over the domain (card §0).
#include <algorithm>
#include <memory>

#include "cli.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/optimize/heavy_tailed.hpp"
#include "fit.hpp"

namespace dpstats::cli {
namespace {

const std::vector<std::string> kLosses = {"absolute", "hinge", "huber", "logistic", "squared"};
const std::vector<std::string> kMethods = {"lipschitz-extension", "clipped-gd",
                                           "output-perturbation", "dp-sgd"};

struct HeavyArgs {
  std::optional<double> moment, moment_bound, moment_bound_2;
  std::optional<int> phases;
  std::optional<std::string> inner, final_clip_rule;
};

std::string one_of(const std::optional<std::string>& v, const std::vector<std::string>& allowed,
                   const std::string& flag) {
  const std::string s = v.value_or(allowed.front());
  if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) return s;
  std::string list;
  for (const auto& x : allowed) list += (list.empty() ? "" : ", ") + x;
  throw InvalidArgument("--" + flag + " for --task heavy-tailed must be one of " + list +
                        ", got '" + s + "'");
}

void run_fit(const FitArgs& a, const HeavyArgs& h) {
  reject_for_task(a.epochs.has_value(), "epochs", a.task);
  reject_for_task(a.batch_size.has_value(), "batch-size", a.task);
  reject_for_task(a.feature_bound.has_value(), "feature-bound", a.task);
  reject_for_task(a.label_bound.has_value(), "label-bound", a.task);
  const std::string loss = one_of(a.loss, kLosses, "loss");
  const std::string method = one_of(a.method, kMethods, "method");
  const bool gd = method == "clipped-gd" || method == "dp-sgd";
  reject_for_task(!gd && a.steps.has_value(), "steps", a.task + " --method " + method);
  reject_for_task(!gd && a.step_size.has_value(), "step-size", a.task + " --method " + method);
  reject_for_task(method != "lipschitz-extension" && h.phases.has_value(), "phases",
                  a.task + " --method " + method);
  reject_for_task(method != "lipschitz-extension" && h.inner.has_value(), "inner",
                  a.task + " --method " + method);
  reject_for_task(method != "lipschitz-extension" && h.final_clip_rule.has_value(),
                  "final-clip-rule", a.task + " --method " + method);
  if (h.inner) one_of(h.inner, {"glm-one-stage", "double-output-perturbation"}, "inner");
  if (h.final_clip_rule) one_of(h.final_clip_rule, {"private-quantile", "public"}, "final-clip-rule");
  if (method == "dp-sgd") {
    require(a.delta.has_value(), "--delta D in (0, 1) is required for --method dp-sgd");
  } else {
    require(!a.delta.has_value() || *a.delta == 0,
            "--delta does not apply to --method " + method + " (pure epsilon-DP, delta = 0)");
  }
  require(a.domain_radius.has_value(), "--domain-radius R (public radius of the domain) is required");
  require(!a.input.path.empty(), "INPUT (CSV: label, features) is required for --task heavy-tailed");
  const Table table = read_input(a.input);
  require(table.values.cols() >= 2,
          "INPUT needs at least 2 columns (label, features), got " + std::to_string(table.values.cols()));
  const Vector y = table.values.col(0);
  const RowMatrix X = table.values.rightCols(table.values.cols() - 1);
  optimize::HeavyTailedOptions o;
  o.method = optimize::parse_heavy_tailed_method(method);
  o.profile = a.profile.value_or("practical") == "paper" ? optimize::HeavyTailedProfile::paper
                                                         : optimize::HeavyTailedProfile::practical;
  o.loss = loss;
  o.epsilon = a.epsilon.value_or(1);
  o.delta = method == "dp-sgd" ? *a.delta : 0;
  o.domain_radius = *a.domain_radius;
  o.moment.k = h.moment.value_or(4);
  o.moment.G_k = h.moment_bound.value_or(1);
  o.moment.G_2 = h.moment_bound_2;
  o.phases = h.phases;
  o.inner = h.inner;
  o.final_clip_rule = h.final_clip_rule;
  o.steps = a.steps;
  o.step_size = a.step_size;
  o.clip = a.clip;
  auto rng = make_rng(a.seed);
  const auto r = optimize::fit_heavy_tailed(X, y, o, *rng);
  nlohmann::ordered_json head = {{"command", "fit"}, {"task", a.task}, {"method", method},
                                 {"loss", loss}};
  head["estimate"] = r.status == Status::ok
                         ? nlohmann::ordered_json(std::vector<double>(
                               r.estimate.data(), r.estimate.data() + r.estimate.size()))
                         : nlohmann::ordered_json(nullptr);
  nlohmann::ordered_json extra = {{"n", X.rows()}, {"d", X.cols()},
                                  {"moment", {{"k", o.moment.k}, {"G_k", o.moment.G_k}}}};
  print_json(release_output(std::move(head), release_fields_json(r), extra));
}

}  // namespace

FitRunner add_fit_heavy_tailed(CLI::App* cmd) {
  auto h = std::make_shared<HeavyArgs>();
  cmd->add_option("--moment", h->moment, "heavy-tailed: moment order k >= 2 (default 4)");
  cmd->add_option("--moment-bound", h->moment_bound,
                  "heavy-tailed: public G_k with E[sup_W |grad f|^k] <= G_k^k (default 1)");
  cmd->add_option("--moment-bound-2", h->moment_bound_2,
                  "heavy-tailed: public G_2 (default G_k)");
  cmd->add_option("--phases", h->phases, "heavy-tailed: Pop-Localize phases (practical default 3)");
  cmd->add_option("--inner", h->inner,
                  "heavy-tailed: per-phase solver, glm-one-stage (default, card 2.13) or "
                  "double-output-perturbation (Alg 4 with Alg 2, the card's main algorithm)");
  cmd->add_option("--final-clip-rule", h->final_clip_rule,
                  "heavy-tailed practical: clip of the final GD phase, private-quantile (default; "
                  "1/16 of that block's epsilon) or public (moment bound only)");
  return [h](const FitArgs& a) { run_fit(a, *h); };
}

}  // namespace dpstats::cli
