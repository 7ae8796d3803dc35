// dpstats account calibrate|convert|compose|dp-sgd — the privacy calculator. Its options are
// declared once (src/options.cpp, commands "account <subcommand>"), as every command's are.
#include "cli.hpp"
#include "options_cli.hpp"
#include "dpstats/privacy/calculator.hpp"

namespace dpstats::cli {

namespace {

struct AccountArgs {
  std::string mechanism;
  double sensitivity = 0, epsilon = 0, delta = 0, delta_slack = 0;
  std::optional<double> rho, mu;
  long times = 0;
  // dp-sgd and heterogeneous compose
  double sampling_rate = 0;
  std::optional<double> noise_multiplier, target_epsilon;
  long long steps = 0;
  std::vector<std::string> losses;
  std::optional<CalculatorAccountant> accountant;  // absent: best
};

// --accountant best|pld|rdp of `command` (its declaration), parsed by its EnumNames.
void add_accountant(CLI::App* sub, std::string_view command,
                    std::optional<CalculatorAccountant>& target) {
  add_enum(sub, find_option(command, "accountant"), target, {});
}

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

  // Each subcommand's options are declared under "account <subcommand>" (src/options.cpp).
  auto* cal = account->add_subcommand("calibrate", "Noise scale for a mechanism and a target loss");
  add_declared(cal, "account calibrate", "mechanism", a->mechanism)
      ->required()
      ->check(CLI::IsMember(enum_names<NoiseMechanism>()));
  add_declared(cal, "account calibrate", "sensitivity", a->sensitivity)->required();
  add_declared(cal, "account calibrate", "epsilon", a->epsilon)->required();
  add_declared(cal, "account calibrate", "delta", a->delta);
  cal->callback([a] {
    print_json(with_command("calibrate", account_calibrate(parse_enum<NoiseMechanism>(a->mechanism),
                                                           a->sensitivity, a->epsilon, a->delta)));
  });

  auto* conv = account->add_subcommand("convert", "rho-zCDP or mu-GDP to (epsilon, delta)");
  auto* rho = add_declared(conv, "account convert", "rho", a->rho);
  add_declared(conv, "account convert", "mu", a->mu)->excludes(rho);
  add_declared(conv, "account convert", "delta", a->delta)->required();
  conv->callback([a] { print_json(with_command("convert", account_convert(a->rho, a->mu, a->delta))); });

  auto* comp = account->add_subcommand(
      "compose", "k-fold composition of (epsilon, delta), or (with --loss) of a list of "
                 "heterogeneous losses by the PLD and RDP accountants");
  auto* loss = add_declared(comp, "account compose", "loss", a->losses);
  auto* ce = add_declared(comp, "account compose", "epsilon", a->epsilon);
  add_declared(comp, "account compose", "delta", a->delta)->required();
  auto* ct = add_declared(comp, "account compose", "times", a->times);
  auto* cs = add_declared(comp, "account compose", "delta_slack", a->delta_slack);
  add_accountant(comp, "account compose", a->accountant);
  loss->excludes(ce)->excludes(ct)->excludes(cs);
  comp->callback([a, ce, ct, cs] {
    if (!a->losses.empty()) {
      print_json(with_command("compose",
                              account_compose_losses(a->losses, a->delta,
                                                     a->accountant.value_or(CalculatorAccountant::best))));
      return;
    }
    if (!*ce || !*ct || !*cs)
      throw CLI::ValidationError("compose", "give --loss items, or all of --epsilon, --times and "
                                            "--delta-slack");
    print_json(with_command("compose",
                            account_compose(a->epsilon, a->delta, a->times, a->delta_slack)));
  });

  auto* sgd = account->add_subcommand(
      "dp-sgd", "DP-SGD (Poisson-subsampled Gaussian, add/remove): epsilon from the noise "
                "multiplier, or the noise multiplier from epsilon");
  add_declared(sgd, "account dp-sgd", "sampling_rate", a->sampling_rate)->required();
  auto* nm = add_declared(sgd, "account dp-sgd", "noise_multiplier", a->noise_multiplier);
  auto* se = add_declared(sgd, "account dp-sgd", "epsilon", a->target_epsilon);
  nm->excludes(se);
  add_declared(sgd, "account dp-sgd", "steps", a->steps)->required();
  add_declared(sgd, "account dp-sgd", "delta", a->delta)->required();
  add_accountant(sgd, "account dp-sgd", a->accountant);
  sgd->callback([a] {
    print_json(with_command("dp-sgd",
                            account_dp_sgd(a->sampling_rate, a->noise_multiplier,
                                           a->target_epsilon, a->steps, a->delta,
                                           a->accountant.value_or(CalculatorAccountant::best))));
  });
}

}  // namespace dpstats::cli
