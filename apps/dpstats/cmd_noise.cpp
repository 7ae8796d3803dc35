// dpstats noise --mechanism laplace|gaussian --sensitivity S --epsilon E [--delta D] [--seed N]
//                VALUE...
#include "budget_file.hpp"
#include "cli.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mechanisms/noise_release.hpp"

namespace dpstats::cli {

namespace {

struct NoiseArgs {
  std::string mechanism;
  double sensitivity = 0;
  double epsilon = 0;
  double delta = 0;
  std::optional<std::uint64_t> seed;
  std::optional<std::string> budget;
  std::vector<double> values;
};

void run_noise(const NoiseArgs& a) {
  auto rng = make_rng(a.seed);
  const Vector values = Eigen::Map<const Vector>(a.values.data(), static_cast<Eigen::Index>(a.values.size()));
  BudgetFile budget(a.budget);
  Release<Vector> r;
  if (a.mechanism == "laplace") {
    require(a.delta == 0, "--mechanism laplace is pure DP: omit --delta (or pass 0)");
    r = laplace_release(values, a.sensitivity, a.epsilon, *rng, NoiseMode::secure, budget.get());
  } else {
    r = gaussian_release(values, a.sensitivity, a.epsilon, a.delta, *rng, NoiseMode::secure,
                         budget.get());
  }
  nlohmann::ordered_json head = {{"command", "noise"}, {"mechanism", a.mechanism}};
  head["estimate"] = std::vector<double>(r.estimate.data(), r.estimate.data() + r.estimate.size());
  const auto out = release_output(std::move(head), release_fields_json(r));
  budget.commit();  // before anything is printed
  print_json(out);
}

}  // namespace

void add_noise_command(CLI::App& app) {
  auto a = std::make_shared<NoiseArgs>();
  auto* cmd = app.add_subcommand("noise", "Add calibrated noise to the given values");
  cmd->add_option("--mechanism", a->mechanism, "laplace (pure DP) or gaussian")
      ->required()
      ->check(CLI::IsMember({"laplace", "gaussian"}));
  cmd->add_option("--sensitivity", a->sensitivity,
                  "sensitivity of the whole vector: l1 for laplace, l2 for gaussian")
      ->required();
  cmd->add_option("--epsilon", a->epsilon, "privacy parameter epsilon > 0")->required();
  cmd->add_option("--delta", a->delta, "privacy parameter delta in (0, 1) (gaussian)");
  add_seed_option(cmd, a->seed);
  add_budget_option(cmd, a->budget);
  cmd->add_option("VALUE", a->values, "the values to release")->required();
  cmd->callback([a] { run_noise(*a); });
}

}  // namespace dpstats::cli
