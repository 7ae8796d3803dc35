// dpstats mean [--method robust|prime|prime-ht|filter|dp-mean|exp-time|bounded|prime-boosted|
//               prime-ht-boosted] --epsilon E --delta D [--boost-zeta Z]
//               [--scale S[,S...]] [--scale-share F] [--bounds LO,HI[,LO,HI...]] [--alpha A]
//               [--profile paper|practical] [--failure-probability Z] [--topk-multiplier M]
//               [--T1 N] [--T2 N] [--T N] [--no-fallback] [--uncertified-window] [--seed N]
//               [--threads T] [--budget FILE] INPUT
// Parses, then calls the library's one dispatcher (mean/methods.hpp): the method registry, the
// "does not apply" checks and every default live there.
#include <fmt/format.h>

#include "budget_file.hpp"
#include "cli.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/methods.hpp"
#include "ranks.hpp"

namespace dpstats::cli {

namespace {

struct MeanArgs {
  MeanRequest request;
  std::string profile, scale, bounds;
  bool no_fallback = false, window = false;
  std::optional<std::uint64_t> seed;
  std::optional<std::string> budget;
  InputArgs input;
};

void run(MeanArgs& a) {
  MeanRequest& r = a.request;
  if (!a.profile.empty()) r.profile = parse_enum<Profile>(a.profile);
  if (!a.scale.empty()) r.scale = parse_numbers(a.scale, "--scale");
  if (!a.bounds.empty()) r.bounds = parse_numbers(a.bounds, "--bounds");
  if (a.no_fallback) r.fallback = false;
  if (a.window) r.uncertified_window = true;
  r.run.comm = ranks();  // null: one process
  const InputShard input = read_input_shard(a.input, r.run.comm);
  const Table& table = input.table;
  auto rng = make_rng(a.seed);
  BudgetFile budget(is_root() ? a.budget : std::nullopt);  // the ledger lives on rank 0
  const Release<Vector> out = run_mean(table.values, r, *rng, budget.get());
  const std::string method = r.method.empty() ? default_mean_method(r.alpha.has_value()) : r.method;
  nlohmann::ordered_json head = {{"command", "mean"}, {"method", method}};
  head["estimate"] =
      std::vector<double>(out.estimate.data(), out.estimate.data() + out.estimate.size());
  nlohmann::ordered_json extra = {{"n", input.total}, {"d", table.values.cols()}};
  if (!table.header.empty()) extra["columns"] = table.header;
  budget.commit();  // before anything is printed
  if (is_root())
    print_json(release_output(std::move(head), release_fields_json(out), extra, &a.input));
}

}  // namespace

void add_mean_command(CLI::App& app) {
  auto a = std::make_shared<MeanArgs>();
  MeanRequest& r = a->request;
  auto* cmd = app.add_subcommand("mean", "Private mean of the rows of INPUT (CSV or .npy)");
  std::string methods;
  for (const auto& m : mean_methods()) methods += fmt::format("{}: {}; ", m.name, m.summary);
  cmd->add_option("--method", r.method,
                  "absent: robust with --alpha, dp-mean without. " + methods)
      ->check(CLI::IsMember(method_names(mean_methods())));
  cmd->add_option("--epsilon", r.privacy.epsilon, "privacy parameter epsilon > 0")->required();
  cmd->add_option("--delta", r.privacy.delta,
                  "privacy parameter delta in [0, 1); 0 gives pure DP (bounded only)")
      ->required();
  cmd->add_option("--scale", a->scale,
                  "data scale per column S or S1,...,Sd (e.g. each column's standard deviation); "
                  "absent: estimated privately from --scale-share of the budget");
  cmd->add_option("--scale-share", r.scale_share,
                  "share of the budget spent estimating an absent scale or bounds (default 0.1)");
  cmd->add_option("--alpha", r.alpha,
                  "robust (the default with it), prime, prime-ht, filter, exp-time: upper bound on "
                  "the corrupted fraction");
  cmd->add_option("--profile", a->profile, "prime, prime-ht, filter: practical (default) or paper")
      ->check(CLI::IsMember(enum_names<Profile>()));
  cmd->add_option("--failure-probability", r.failure_probability,
                  "failure probability of the range steps (default 0.1)");
  cmd->add_option("--topk-multiplier", r.topk_multiplier,
                  "prime, filter: candidates per round k = ceil(M alpha n), M in [1, 4] (default 2)");
  cmd->add_option("--boost-zeta", r.boost_zeta,
                  "prime-boosted, prime-ht-boosted: failure probability after boosting (default "
                  "0.05; parts m = the least odd m with P(Bin(m, 3/4) <= m/2) <= zeta)");
  cmd->add_option("--T1", r.T1, "prime: epochs (0 = profile default)");
  cmd->add_option("--T2", r.T2, "prime: inner iterations per epoch (0 = profile default)");
  cmd->add_option("--T", r.T, "filter: rounds (0 = min(200, 2d + 20))");
  cmd->add_flag("--uncertified-window", a->window,
                "exp-time: contiguous-window resilience instead of the exact enumeration (runs "
                "at any n; the release is certified: false)");
  cmd->add_flag("--no-fallback", a->no_fallback,
                "prime practical: run the filter even when the feasibility check predicts it is "
                "noise-dominated (default: fall back to dp-mean)");
  cmd->add_option("--bounds", a->bounds,
                  "bounded: LO,HI for every column or LO1,HI1,...,LOd,HId; absent: estimated "
                  "privately from --scale-share of the budget");
  add_budget_option(cmd, a->budget);
  add_seed_option(cmd, a->seed);
  cmd->add_option("--threads", r.run.threads, "threads for the data passes");
  add_input_options(cmd, a->input);
  cmd->callback([a] { run(*a); });
}

}  // namespace dpstats::cli
