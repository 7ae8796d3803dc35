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
#include "options_cli.hpp"
#include "ranks.hpp"

namespace dpstats::cli {

namespace {

struct MeanArgs {
  MeanRequest request;
  ReleaseArgs release;
  InputArgs input;
};

void run(MeanArgs& a) {
  MeanRequest& r = a.request;
  r.privacy = a.release.target();
  r.profile = a.release.profile;
  r.scale_share = a.release.scale_share;
  if (a.release.threads) r.run.threads = *a.release.threads;
  r.run.comm = ranks();  // null: one process
  const InputShard input = read_input_shard(a.input, r.run.comm);
  const Table& table = input.table;
  auto rng = make_rng(a.release.seed);
  BudgetFile budget(is_root() ? a.release.budget : std::nullopt);  // the ledger lives on rank 0
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
  const auto methods = mean_methods();
  auto* cmd = app.add_subcommand("mean", "Private mean of the rows of INPUT (CSV or .npy)");
  std::string help = option_help(find_option("mean", "method")) + ". ";
  for (const auto& m : methods) help += fmt::format("{}: {}; ", m.name, m.summary);
  cmd->add_option("--method", r.method, help)->check(CLI::IsMember(method_names(methods)));
  add_release_options(cmd, a->release, kEveryRelease | kScaleShare | kProfile,
                      kEpsilon | kDelta, methods);
  add_request_options(cmd, "mean", r, methods);
  add_input_options(cmd, a->input);
  cmd->callback([a] { run(*a); });
}

}  // namespace dpstats::cli
