// dpstats account calibrate|convert|compose — the privacy calculator.
#include "cli.hpp"
#include "dpstats/privacy/calculator.hpp"

namespace dpstats::cli {

namespace {

struct AccountArgs {
  std::string mechanism;
  double sensitivity = 0, epsilon = 0, delta = 0, delta_slack = 0;
  std::optional<double> rho, mu;
  long times = 0;
};

nlohmann::ordered_json with_command(const char* sub, const nlohmann::json& j) {
  nlohmann::ordered_json out = {{"command", std::string("account ") + sub}};
  out.update(nlohmann::ordered_json::parse(j.dump()));
  return out;
}

}  // namespace

void add_account_command(CLI::App& app) {
  auto a = std::make_shared<AccountArgs>();
  auto* account = app.add_subcommand("account", "Privacy calculator: calibrate, convert, compose");
  account->require_subcommand(1);

  auto* cal = account->add_subcommand("calibrate", "Noise scale for a mechanism and a target loss");
  cal->add_option("--mechanism", a->mechanism, "laplace or gaussian")
      ->required()
      ->check(CLI::IsMember({"laplace", "gaussian"}));
  cal->add_option("--sensitivity", a->sensitivity, "l1 (laplace) or l2 (gaussian) sensitivity")
      ->required();
  cal->add_option("--epsilon", a->epsilon, "epsilon > 0")->required();
  cal->add_option("--delta", a->delta, "delta in (0, 1) (gaussian)");
  cal->callback([a] {
    print_json(with_command("calibrate",
                            account_calibrate(a->mechanism, a->sensitivity, a->epsilon, a->delta)));
  });

  auto* conv = account->add_subcommand("convert", "rho-zCDP or mu-GDP to (epsilon, delta)");
  auto* rho = conv->add_option("--rho", a->rho, "rho of rho-zCDP");
  conv->add_option("--mu", a->mu, "mu of mu-GDP")->excludes(rho);
  conv->add_option("--delta", a->delta, "target delta in (0, 1)")->required();
  conv->callback([a] { print_json(with_command("convert", account_convert(a->rho, a->mu, a->delta))); });

  auto* comp = account->add_subcommand("compose", "k-fold composition of (epsilon, delta)");
  comp->add_option("--epsilon", a->epsilon, "per-mechanism epsilon")->required();
  comp->add_option("--delta", a->delta, "per-mechanism delta")->required();
  comp->add_option("--times", a->times, "number of mechanisms k >= 1")->required();
  comp->add_option("--delta-slack", a->delta_slack, "extra delta of advanced composition")
      ->required();
  comp->callback([a] {
    print_json(with_command("compose",
                            account_compose(a->epsilon, a->delta, a->times, a->delta_slack)));
  });
}

}  // namespace dpstats::cli
