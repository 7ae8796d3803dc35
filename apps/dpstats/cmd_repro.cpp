// dpstats repro NAME [--out DIR] [--quick] [--seed N] [--threads T]; dpstats repro --list
#include <iostream>

#include "../../experiments/repro.hpp"
#include "cli.hpp"
#include "options_cli.hpp"
#include "dpstats/error.hpp"

namespace dpstats::cli {

namespace {

struct ReproArgs {
  std::string name;
  std::string out;
  bool quick = false, list = false;
  std::optional<std::uint64_t> seed;
  int threads = default_threads();
};

void run_repro(const ReproArgs& a) {
  const auto& all = repro::experiments();
  if (a.list || a.name.empty()) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& e : all) list.push_back({{"name", e.name}, {"description", e.description}});
    print_json({{"command", "repro"}, {"experiments", list}});
    return;
  }
  const auto it = std::find_if(all.begin(), all.end(), [&](const auto& e) { return e.name == a.name; });
  if (it == all.end()) {
    std::string names;
    for (const auto& e : all) names += (names.empty() ? "" : ", ") + e.name;
    throw InvalidArgument("unknown experiment '" + a.name + "'; known: " + names);
  }
  repro::ReproOptions o;
  o.out = a.out.empty() ? std::filesystem::path("out") / a.name : std::filesystem::path(a.out);
  o.quick = a.quick;
  o.seed = a.seed;
  o.threads = a.threads;
  std::filesystem::create_directories(o.out);
  it->run(o);
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const auto& f : std::filesystem::directory_iterator(o.out)) files.push_back(f.path().string());
  print_json({{"command", "repro"}, {"name", a.name}, {"quick", a.quick}, {"seeded", a.seed.has_value()},
              {"out", o.out.string()}, {"files", files}});
}

}  // namespace

void add_repro_command(CLI::App& app) {
  auto a = std::make_shared<ReproArgs>();
  auto* cmd = app.add_subcommand("repro", "Regenerate a paper's table or figure (CSV + PNG + summary.md)");
  cmd->add_option("NAME", a->name, "experiment name (see --list)");
  cmd->add_flag("--list", a->list, "list the experiments");
  cmd->add_option("--out", a->out, "output folder (default out/NAME)");
  cmd->add_flag("--quick", a->quick, "the small size (under 2 minutes)");
  add_seed_option(cmd, a->seed);
  add_declared(cmd, "", "threads", a->threads);  // the declared range, [1, 1024]
  cmd->callback([a] { run_repro(*a); });
}

}  // namespace dpstats::cli
