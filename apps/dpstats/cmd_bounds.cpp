// dpstats bounds --epsilon E [--delta D] [--norm-quantile Q] [--norm-share S] [--norm-centre
//                location|zero] [--coverage C] [--clip-share S] [--widen W] [--alpha A] [--beta B]
//                [--per-octave M]
//                [--neighbouring replace-one|add-remove] [--threads T] [--budget FILE] [--seed N] [input options] INPUT
// Private per-column location, scale and clipping bounds with no public range (issue #15).
#include "budget_file.hpp"
#include "cli.hpp"
#include "options_cli.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/option_fields.hpp"
#include "dpstats/scale/bounds.hpp"
#include "ranks.hpp"

namespace dpstats::cli {

namespace {

struct BoundsArgs : ReleaseArgs {  // the shared options, declared once (options_cli.hpp)
  BoundsOptions o;
  BoundsRequest request;  // the bounds' own options (scale/bounds.hpp)
  InputArgs input;
};

std::vector<double> to_std(const Vector& v) { return {v.data(), v.data() + v.size()}; }

void run_bounds(BoundsArgs a) {
  copy_given(a.request, a.o);
  a.o.privacy = a.target();
  a.o.neighbouring = a.neighbouring.value_or(Neighbouring::replace_one);
  if (a.threads) a.o.run.threads = *a.threads;
  a.o.run.comm = ranks();  // null: one process; several ranks: this rank's rows
  const InputShard input = read_input_shard(a.input, a.o.run.comm);
  const Table& table = input.table;
  nlohmann::ordered_json extra = {{"n", input.total}, {"d", table.values.cols()}};
  if (!table.header.empty()) extra["columns"] = table.header;
  auto rng = make_rng(a.seed);
  BudgetFile budget(is_root() ? a.budget : std::nullopt);  // the ledger lives on rank 0
  const Release<Bounds> r = run_on_input(
      a.input, input, [&] { return private_bounds(table.values, a.o, *rng, budget.get()); });
  budget.commit();  // before anything is printed
  if (!is_root()) return;
  const ScaleEstimate& s = r.estimate.scale;
  nlohmann::ordered_json estimate = {{"location", to_std(s.location())},
                                     {"scale", to_std(s.scale())},
                                     {"lo", to_std(s.lo())},
                                     {"hi", to_std(s.hi())}};
  if (r.estimate.clip) {
    estimate["clip_lo"] = to_std(r.estimate.clip->lo());
    estimate["clip_hi"] = to_std(r.estimate.clip->hi());
  }
  if (r.estimate.norm) estimate["norm_quantile"] = r.estimate.norm->value;
  nlohmann::ordered_json head = {{"command", "bounds"}, {"method", "log-grid"}};
  head["estimate"] = estimate;
  print_json(release_output(std::move(head), release_fields_json(r), extra, &a.input));
}

}  // namespace

void add_bounds_command(CLI::App& app) {
  auto a = std::make_shared<BoundsArgs>();
  auto* cmd = app.add_subcommand(
      "bounds", "Private per-column location, scale and clipping bounds of INPUT (no public range)");
  // --delta 0 (default): pure epsilon-DP; in (0, 1): zCDP accounting of (epsilon, delta).
  add_release_options(cmd, *a, kEveryRelease | kNeighbouring, kEpsilon);
  add_request_options(cmd, "bounds", a->request, {});
  add_input_options(cmd, a->input);
  a->input.release_checks_finite = true;  // private_bounds checks its rows before it charges
  cmd->callback([a] { run_bounds(*a); });
}

}  // namespace dpstats::cli
