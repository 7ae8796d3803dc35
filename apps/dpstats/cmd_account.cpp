// dpstats account calibrate|convert|compose|dp-sgd — the privacy calculator.
#include "cli.hpp"
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
  CalculatorAccountant accountant = CalculatorAccountant::best;
};

// --accountant best|pld|rdp, parsed by its EnumNames.
void add_accountant(CLI::App* sub, CalculatorAccountant& target, const std::string& help) {
  sub->add_option_function<std::string>(
         "--accountant",
         [&target](const std::string& name) { target = parse_enum<CalculatorAccountant>(name); },
         help)
      ->check(CLI::IsMember(enum_names<CalculatorAccountant>()));
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

  auto* cal = account->add_subcommand("calibrate", "Noise scale for a mechanism and a target loss");
  cal->add_option("--mechanism", a->mechanism, "laplace or gaussian")
      ->required()
      ->check(CLI::IsMember(enum_names<NoiseMechanism>()));
  cal->add_option("--sensitivity", a->sensitivity, "l1 (laplace) or l2 (gaussian) sensitivity")
      ->required();
  cal->add_option("--epsilon", a->epsilon, "epsilon > 0")->required();
  cal->add_option("--delta", a->delta, "delta in (0, 1) (gaussian)");
  cal->callback([a] {
    print_json(with_command("calibrate", account_calibrate(parse_enum<NoiseMechanism>(a->mechanism),
                                                           a->sensitivity, a->epsilon, a->delta)));
  });

  auto* conv = account->add_subcommand("convert", "rho-zCDP or mu-GDP to (epsilon, delta)");
  auto* rho = conv->add_option("--rho", a->rho, "rho of rho-zCDP");
  conv->add_option("--mu", a->mu, "mu of mu-GDP")->excludes(rho);
  conv->add_option("--delta", a->delta, "target delta in (0, 1)")->required();
  conv->callback([a] { print_json(with_command("convert", account_convert(a->rho, a->mu, a->delta))); });

  auto* comp = account->add_subcommand(
      "compose", "k-fold composition of (epsilon, delta), or (with --loss) of a list of "
                 "heterogeneous losses by the PLD and RDP accountants");
  auto* loss = comp->add_option("--loss", a->losses,
                                "a loss, repeatable: pure:EPS, approx:EPS,DELTA, zcdp:RHO, gdp:MU, "
                                "gaussian:sigma=S[,sensitivity=D], laplace:scale=B[,sensitivity=D],"
                                " subsampled-gaussian:q=Q,sigma=S[,steps=T]; each may end in "
                                ",times=K (docs/guide.md)");
  auto* ce = comp->add_option("--epsilon", a->epsilon, "per-mechanism epsilon (k-fold mode)");
  comp->add_option("--delta", a->delta,
                   "per-mechanism delta (k-fold mode), or the target delta (with --loss)")
      ->required();
  auto* ct = comp->add_option("--times", a->times, "number of mechanisms k >= 1 (k-fold mode)");
  auto* cs = comp->add_option("--delta-slack", a->delta_slack,
                              "extra delta of advanced composition (k-fold mode)");
  add_accountant(comp, a->accountant, "with --loss: best (default), pld or rdp");
  loss->excludes(ce)->excludes(ct)->excludes(cs);
  comp->callback([a, ce, ct, cs] {
    if (!a->losses.empty()) {
      print_json(with_command("compose",
                              account_compose_losses(a->losses, a->delta, a->accountant)));
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
  sgd->add_option("--sampling-rate", a->sampling_rate, "Poisson sampling rate q in (0, 1]")
      ->required();
  auto* nm = sgd->add_option("--noise-multiplier", a->noise_multiplier, "sigma / clip > 0");
  auto* se = sgd->add_option("--epsilon", a->target_epsilon, "target epsilon (gives sigma)");
  nm->excludes(se);
  sgd->add_option("--steps", a->steps, "number of steps T >= 1")->required();
  sgd->add_option("--delta", a->delta, "delta in (0, 1)")->required();
  add_accountant(sgd, a->accountant, "best (default: the tighter), pld or rdp");
  sgd->callback([a] {
    print_json(with_command("dp-sgd",
                            account_dp_sgd(a->sampling_rate, a->noise_multiplier,
                                           a->target_epsilon, a->steps, a->delta, a->accountant)));
  });
}

}  // namespace dpstats::cli
