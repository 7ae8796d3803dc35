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
  std::optional<std::string> center;
  std::optional<double> domain_radius, min_radius, bound_check_share;
  InputArgs input;
};

std::vector<double> to_std(const Vector& v) { return {v.data(), v.data() + v.size()}; }

// The options the user set, in the library's snake_case (for check_options_apply).
std::vector<std::string> given(const MedianArgs& a) {
  std::vector<std::string> g;
  auto add = [&](bool set, const char* name) { if (set) g.emplace_back(name); };
  const ReleaseArgs& r = a.release;
  add(r.epsilon.has_value(), "epsilon");
  add(r.delta.has_value(), "delta");
  add(r.profile.has_value(), "profile");
  add(a.center.has_value(), "center");
  add(a.domain_radius.has_value(), "domain_radius");
  add(a.min_radius.has_value(), "min_radius");
  add(r.scale_share.has_value(), "scale_share");
  add(a.bound_check_share.has_value(), "bound_check_share");
  add(r.seed.has_value(), "seed");
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
  const MethodInfo& method = find_method(median_methods(), "median", a.method);
  const auto set = given(a);
  check_options_apply(median_methods(), method, set);
  const std::optional<MedianMethod> pipeline = private_method(parse_enum<MedianCommand>(a.method));
  require(pipeline || !a.release.budget,
          "--budget does not apply to --method weiszfeld (the non-private solver)");
  const ReleaseArgs& r = a.release;
  GeometricMedianOptions o;
  if (pipeline) {
    o.method = *pipeline;
    if (r.profile) o.profile = *r.profile;
    if (a.center) o.center = parse_enum<PaperCenter>(*a.center);
    o.privacy = r.target();
    o.domain_radius = a.domain_radius;
    o.min_radius = a.min_radius;
    if (r.scale_share) o.scale_share = *r.scale_share;
    if (a.bound_check_share) o.bound_check_share = *a.bound_check_share;
    if (r.threads) o.run.threads = *r.threads;
  }
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
  add_declared(cmd, "median", "center", a->center, methods)
      ->check(CLI::IsMember(enum_names<PaperCenter>()));
  add_declared(cmd, "median", "domain_radius", a->domain_radius, methods);
  add_declared(cmd, "median", "min_radius", a->min_radius, methods);
  add_declared(cmd, "median", "bound_check_share", a->bound_check_share, methods);
  add_input_options(cmd, a->input);
  cmd->callback([a] { run_median(*a); });
}

}  // namespace dpstats::cli
