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
#include "dpstats/median/weiszfeld.hpp"

namespace dpstats::cli {

namespace {

struct MedianArgs {
  std::string method = "fast";
  std::optional<std::string> profile, center;
  std::optional<double> epsilon, delta, domain_radius, min_radius, scale_share, bound_check_share;
  std::optional<std::uint64_t> seed;
  std::optional<std::string> budget;
  std::optional<int> threads;  // absent: RunControl's default
  InputArgs input;
};

std::vector<double> to_std(const Vector& v) { return {v.data(), v.data() + v.size()}; }

// The options the user set, in the library's snake_case (for check_options_apply).
std::vector<std::string> given(const MedianArgs& a) {
  std::vector<std::string> g;
  auto add = [&](bool set, const char* name) { if (set) g.emplace_back(name); };
  add(a.epsilon.has_value(), "epsilon");
  add(a.delta.has_value(), "delta");
  add(a.profile.has_value(), "profile");
  add(a.center.has_value(), "center");
  add(a.domain_radius.has_value(), "domain_radius");
  add(a.min_radius.has_value(), "min_radius");
  add(a.scale_share.has_value(), "scale_share");
  add(a.bound_check_share.has_value(), "bound_check_share");
  add(a.seed.has_value(), "seed");
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
  require(!a.budget || a.method != "weiszfeld",
          "--budget does not apply to --method weiszfeld (the non-private solver)");
  GeometricMedianOptions o;
  if (a.method != "weiszfeld") {
    o.method = parse_enum<MedianMethod>(a.method);
    if (a.profile) o.profile = parse_enum<Profile>(*a.profile);
    if (a.center) o.center = parse_enum<PaperCenter>(*a.center);
    o.privacy = {a.epsilon.value_or(0), a.delta.value_or(0)};
    o.domain_radius = a.domain_radius;
    o.min_radius = a.min_radius;
    if (a.scale_share) o.scale_share = *a.scale_share;
    if (a.bound_check_share) o.bound_check_share = *a.bound_check_share;
    if (a.threads) o.run.threads = *a.threads;
  }
  o.run.comm = ranks();  // null: one process; several ranks: this rank's rows
  require(!o.run.comm || a.method != "weiszfeld",
          "median --method weiszfeld does not run on several ranks (the non-private solver's "
          "float sums do not merge exactly); run it in one process");
  const InputShard input = read_input_shard(a.input, o.run.comm);
  const Table& table = input.table;
  nlohmann::ordered_json extra = {{"n", input.total}, {"d", table.values.cols()}};
  if (!table.header.empty()) extra["columns"] = table.header;
  if (a.method == "weiszfeld") return run_weiszfeld(table, std::move(extra));
  auto rng = make_rng(a.seed);
  BudgetFile budget(is_root() ? a.budget : std::nullopt);  // the ledger lives on rank 0
  const Release<Vector> r = geometric_median(table.values, o, *rng, budget.get());
  budget.commit();  // before anything is printed
  nlohmann::ordered_json head = {{"command", "median"}, {"method", a.method}};
  head["estimate"] = to_std(r.estimate);
  if (!is_root()) return;
  print_json(release_output(std::move(head), release_fields_json(r), extra, &a.input));
}

std::string method_help() {
  std::string h;
  for (const auto& m : median_methods()) h += fmt::format("{}{}: {}", h.empty() ? "" : "; ", m.name, m.summary);
  return h;
}

}  // namespace

void add_median_command(CLI::App& app) {
  auto a = std::make_shared<MedianArgs>();
  auto* cmd = app.add_subcommand("median", "Private geometric median of the rows of INPUT");
  cmd->add_option("--method", a->method, method_help())
      ->check(CLI::IsMember(method_names(median_methods())));
  cmd->add_option("--profile", a->profile,
                  "practical (default: measured best, proven) or paper (KLTY Thm 4 as printed)")
      ->check(CLI::IsMember(enum_names<Profile>()));
  cmd->add_option("--center", a->center,
                  "the paper profile's centre step: hsu24-localization (default) or fast-center "
                  "(KLTY Alg. 3, certified; needs n of about 10^4 or more)")
      ->check(CLI::IsMember(enum_names<PaperCenter>()));
  cmd->add_option("--epsilon", a->epsilon, "privacy parameter epsilon > 0 (required)");
  cmd->add_option("--delta", a->delta, "privacy parameter delta in (0, 1) (required)");
  cmd->add_option("--domain-radius", a->domain_radius,
                  "radius R of the ball around the origin holding the median; absent: estimated "
                  "privately from --scale-share of the budget");
  cmd->add_option("--min-radius", a->min_radius, "start r of the radius grid (default R/2^20)");
  cmd->add_option("--scale-share", a->scale_share,
                  "budget share spent estimating an absent --domain-radius (default 0.1)");
  cmd->add_option("--bound-check-share", a->bound_check_share,
                  "budget share of the private count of rows beyond a given --domain-radius "
                  "(default 0.01; 0 turns the check off)");
  cmd->add_option("--threads", a->threads,
                  "worker threads for the data passes (default: the library's RunControl "
                  "default); a seeded release is the same for any value")
      ->check(CLI::Range(1, 1024));
  add_budget_option(cmd, a->budget);
  add_seed_option(cmd, a->seed);
  add_input_options(cmd, a->input);
  cmd->callback([a] { run_median(*a); });
}

}  // namespace dpstats::cli
