// dpstats median --method fast|hsu24|weiszfeld --epsilon E --delta D [--domain-radius R]
//                [--min-radius r] [--profile practical|paper] [--center hsu24-localization|fast-center]
//                [--scale-share s]
//                [--bound-check-share s] [--threads T] [--budget FILE] [--seed N] INPUT
// Methods, their options and enum names come from the library (median_methods(), parse_enum);
// weiszfeld is the non-private solver: its output has no privacy fields.
#include <fmt/format.h>

#include "budget_file.hpp"
#include "cli.hpp"
#include "ranks.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/median/median_command.hpp"
#include "dpstats/median/weiszfeld.hpp"
#include "options_cli.hpp"

namespace dpstats::cli {

namespace {

struct MedianArgs {
  std::string method = "fast";
  ReleaseArgs release;
  MedianRequest request;  // the median's own options (median/median_command.hpp)
  InputArgs input;
};

std::vector<double> to_std(const Vector& v) { return {v.data(), v.data() + v.size()}; }

// The shared options the user set that a method may not read (the registry says which do).
std::vector<std::string> shared_given(const ReleaseArgs& r) {
  std::vector<std::string> g;
  auto add = [&](bool set, const char* name) { if (set) g.emplace_back(name); };
  add(r.epsilon.has_value(), "epsilon");
  add(r.delta.has_value(), "delta");
  add(r.seed.has_value(), "seed");
  add(r.budget.has_value(), "budget");
  return g;
}

void run_weiszfeld(const Table& table, nlohmann::ordered_json extra) {
  const auto w = weiszfeld(table.values);
  nlohmann::ordered_json out = {{"command", "median"}, {"method", "weiszfeld"},
                                {"estimate", to_std(w.x)}, {"private", false},
                                {"objective", w.f}, {"iterations", w.iterations},
                                {"rel_gap_bound", w.rel_gap_bound}, {"converged", w.converged}};
  for (auto& [k, v] : extra.items()) out[k] = v;
  print_json(out);
}

void run_median(const MedianArgs& a) {
  const ReleaseArgs& r = a.release;
  const auto command = parse_enum<MedianCommand>(a.method);
  MedianRequest request = a.request;
  request.profile = r.profile;
  request.scale_share = r.scale_share;
  GeometricMedianOptions o = median_options(command, request, shared_given(r));
  const bool pipeline = private_method(command).has_value();
  o.privacy = r.target();
  if (r.threads) o.run.threads = *r.threads;
  o.run.comm = ranks();  // null: one process; several ranks: this rank's rows
  require(!o.run.comm || pipeline,
          "median --method weiszfeld does not run on several ranks (the non-private solver's "
          "float sums do not merge exactly); run it in one process");
  const InputShard input = read_input_shard(a.input, o.run.comm);
  const Table& table = input.table;
  nlohmann::ordered_json extra = {{"n", input.total}, {"d", table.values.cols()}};
  if (!table.header.empty()) extra["columns"] = table.header;
  if (!pipeline) return run_weiszfeld(table, std::move(extra));
  auto rng = make_rng(r.seed);
  BudgetFile budget(is_root() ? r.budget : std::nullopt);  // the ledger lives on rank 0
  const Release<Vector> out = geometric_median(table.values, o, *rng, budget.get());
  budget.commit();  // before anything is printed
  nlohmann::ordered_json head = {{"command", "median"}, {"method", a.method}};
  head["estimate"] = to_std(out.estimate);
  if (!is_root()) return;
  print_json(release_output(std::move(head), release_fields_json(out), extra, &a.input));
}

std::string method_help() {
  std::string h;
  for (const auto& m : median_methods()) h += fmt::format("{}{}: {}", h.empty() ? "" : "; ", m.name, m.summary);
  return h;
}

}  // namespace

void add_median_command(CLI::App& app) {
  auto a = std::make_shared<MedianArgs>();
  const auto methods = median_methods();
  auto* cmd = app.add_subcommand("median", "Private geometric median of the rows of INPUT");
  cmd->add_option("--method", a->method, method_help())
      ->check(CLI::IsMember(method_names(methods)));
  add_release_options(cmd, a->release, kEveryRelease | kScaleShare | kProfile, 0, methods);
  add_request_options(cmd, "median", a->request, methods);
  add_input_options(cmd, a->input);
  cmd->callback([a] { run_median(*a); });
}

}  // namespace dpstats::cli
