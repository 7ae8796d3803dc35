// dpstats noise --mechanism laplace|gaussian --sensitivity S --epsilon E [--delta D] [--seed N]
//                VALUE...
#include "budget_file.hpp"
#include "cli.hpp"
#include "options_cli.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mechanisms/noise_mechanism.hpp"

namespace dpstats::cli {

namespace {

struct NoiseArgs : ReleaseArgs {  // the shared options, declared once (options_cli.hpp)
  NoiseRequest request;            // --mechanism, --sensitivity (mechanisms/noise_mechanism.hpp)
  std::vector<double> values;
};

void run_noise(const NoiseArgs& a) {
  auto rng = make_rng(a.seed);
  const Vector values = Eigen::Map<const Vector>(a.values.data(), static_cast<Eigen::Index>(a.values.size()));
  BudgetFile budget(a.budget);
  const Release<Vector> r = noise_release(a.request, values, a.target(), *rng, budget.get());
  nlohmann::ordered_json head = {{"command", "noise"}, {"mechanism", name_of(*a.request.mechanism)}};
  head["estimate"] = std::vector<double>(r.estimate.data(), r.estimate.data() + r.estimate.size());
  const auto out = release_output(std::move(head), release_fields_json(r));
  budget.commit();  // before anything is printed
  print_json(out);
}

}  // namespace

void add_noise_command(CLI::App& app) {
  auto a = std::make_shared<NoiseArgs>();
  auto* cmd = app.add_subcommand("noise", "Add calibrated noise to the given values");
  add_request_options(cmd, "noise", a->request, {});
  visit_fields(a->request, [&](std::string_view name, const auto&) {  // both declared "required"
    const OptionDecl& decl = find_option("noise", name);
    if (decl.default_text == "required") cmd->get_option(cli_flag(decl))->required();
  });
  // --delta: gaussian only.
  add_release_options(cmd, *a, kEpsilon | kDelta | kSeed | kBudget | kDryRun, kEpsilon);
  cmd->add_option("VALUE", a->values, "the values to release")->required();
  cmd->callback([a] { run_noise(*a); });
}

}  // namespace dpstats::cli
