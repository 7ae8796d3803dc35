// dpstats median --method fast|hsu24|weiszfeld (--epsilon E --delta D | --rho R) --radius R_MAX
//                [--min-radius r] [--profile practical|paper] [--seed N] INPUT
// weiszfeld is the non-private solver: its output has no privacy fields.
#include <fmt/format.h>

#include "cli.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/median/weiszfeld.hpp"

namespace dpstats::cli {

namespace {

struct MedianArgs {
  std::string method = "fast";
  std::string profile = "practical";
  std::optional<double> epsilon, delta, rho, radius, min_radius;
  std::optional<std::uint64_t> seed;
  InputArgs input;
};

std::vector<double> to_std(const Vector& v) { return {v.data(), v.data() + v.size()}; }

void run_median(const MedianArgs& a) {
  const Table table = read_input(a.input);
  nlohmann::ordered_json extra = {{"n", table.values.rows()}, {"d", table.values.cols()}};
  if (!table.header.empty()) extra["columns"] = table.header;
  if (a.method == "weiszfeld") {
    require(!a.epsilon && !a.delta && !a.rho && !a.seed,
            "--method weiszfeld is not private: it takes no --epsilon, --delta, --rho or --seed");
    const auto w = weiszfeld(table.values);
    nlohmann::ordered_json out = {{"command", "median"}, {"method", "weiszfeld"},
                                  {"estimate", to_std(w.x)}, {"private", false},
                                  {"objective", w.f}, {"iterations", w.iterations},
                                  {"rel_gap_bound", w.rel_gap_bound}, {"converged", w.converged}};
    for (auto& [k, v] : extra.items()) out[k] = v;
    print_json(out);
    return;
  }
  require(a.radius.has_value(), "--radius R_MAX (public bound on the data's scale) is required");
  require(a.rho.has_value() != a.epsilon.has_value(),
          "give --epsilon with --delta, or --rho (not both)");
  GeometricMedianOptions o;
  o.method = a.method == "hsu24" ? MedianMethod::hsu24 : MedianMethod::fast;
  o.profile = a.profile == "paper" ? MedianProfile::paper : MedianProfile::practical;
  o.epsilon = a.epsilon;
  o.delta = a.delta;
  o.rho = a.rho;
  o.radius = *a.radius;
  o.min_radius = a.min_radius;
  auto rng = make_rng(a.seed);
  const Release<Vector> r = geometric_median(table.values, o, *rng);
  nlohmann::ordered_json head = {{"command", "median"}, {"method", a.method}};
  head["estimate"] = to_std(r.estimate);
  print_json(release_output(std::move(head), release_fields_json(r), extra));
}

}  // namespace

void add_median_command(CLI::App& app) {
  auto a = std::make_shared<MedianArgs>();
  auto* cmd = app.add_subcommand("median", "Private geometric median of the rows of INPUT");
  cmd->add_option("--method", a->method,
                  "fast (KLTY, default), hsu24 (baseline), weiszfeld (non-private)")
      ->check(CLI::IsMember({"fast", "hsu24", "weiszfeld"}));
  cmd->add_option("--profile", a->profile,
                  "practical (default: measured best, proven) or paper (KLTY Thm 4 as printed)")
      ->check(CLI::IsMember({"practical", "paper"}));
  cmd->add_option("--epsilon", a->epsilon, "privacy parameter epsilon > 0 (with --delta)");
  cmd->add_option("--delta", a->delta, "privacy parameter delta in (0, 1)");
  cmd->add_option("--rho", a->rho, "zCDP budget rho > 0 (instead of epsilon)");
  cmd->add_option("--radius", a->radius, "public bound R on the data's norm scale");
  cmd->add_option("--min-radius", a->min_radius, "start r of the radius grid (default R/2^20)");
  add_seed_option(cmd, a->seed);
  add_input_options(cmd, a->input);
  cmd->callback([a] { run_median(*a); });
}

}  // namespace dpstats::cli
