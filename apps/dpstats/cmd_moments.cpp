// dpstats moments --method jme|lambda-jme|ime|cs|pp|pp-debiased --workload prefix|decay:B|window:K|
//   average|adam:B --factorization input|output|sqrt|banded:B --clip Z
//   (--epsilon E --delta D | --rho R --delta D | --noise-multiplier S --delta D) [--diagonal]
//   [--lambda L] [--alpha A] [--tau T] [--on-norm clip|reject] [--seed N] INPUT
// The rows of INPUT are the stream; one compact JSON object per step (JSON Lines). Everything is
// validated before the first line is printed, so an error never leaves partial output.
#include <fmt/format.h>

#include <iostream>

#include "cli.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/moments/estimator.hpp"

namespace dpstats::cli {

namespace {

struct MomentsArgs {
  std::string method, workload = "prefix", factorization = "sqrt", on_norm = "clip";
  std::string neighbouring = "replace-one";
  double clip = 1;
  std::optional<double> epsilon, rho, noise_multiplier, lambda;
  double delta = 0, alpha = 0.5, tau = 1;
  bool diagonal = false;
  int threads = 1;
  std::optional<std::uint64_t> seed;
  InputArgs input;
};

void run_moments(const MomentsArgs& a) {
  const Table table = read_input(a.input);
  const auto& X = table.values;
  check_data(X);
  using namespace dpstats::moments;
  MomentsConfig c = make_config(MomentsOptions{
      .steps = static_cast<std::size_t>(X.rows()), .dim = static_cast<std::size_t>(X.cols()),
      .method = a.method, .workload = a.workload, .factorization = a.factorization,
      .clip = a.clip, .epsilon = a.epsilon, .delta = a.delta, .rho = a.rho,
      .noise_multiplier = a.noise_multiplier, .lambda = a.lambda, .alpha = a.alpha, .tau = a.tau,
      .diagonal = a.diagonal, .on_norm = a.on_norm, .neighbouring = a.neighbouring,
      .threads = a.threads});
  if (c.on_norm == NormPolicy::reject)
    for (Eigen::Index t = 0; t < X.rows(); ++t)
      require(X.row(t).norm() <= c.zeta,
              fmt::format("row {} has l2 norm above --clip {} (--on-norm reject)", t + 1,
                          format_number(c.zeta)));
  auto rng = make_rng(a.seed);
  MomentEstimator est(std::move(c), *rng);
  Release<int> fields;  // the release fields shared by every line
  fields.privacy = est.privacy();
  fields.seeded = rng->seeded();
  fields.noise = est.config().noise;
  fields.ledger = est.ledger();
  fields.diagnostics = est.diagnostics();
  const auto release = release_fields_json(fields);
  const nlohmann::ordered_json extra = {{"n", X.rows()}, {"d", X.cols()}};
  Vector row;
  for (Eigen::Index t = 0; t < X.rows(); ++t) {
    row = X.row(t).transpose();
    est.push({row.data(), static_cast<std::size_t>(row.size())});
    nlohmann::ordered_json head = {{"command", "moments"}, {"method", a.method}, {"step", t + 1}};
    head["first"] = std::vector<double>(est.first().begin(), est.first().end());
    head["second"] = std::vector<double>(est.second().begin(), est.second().end());
    std::cout << release_output(std::move(head), release, extra).dump() << '\n';
  }
  std::cout.flush();
}

}  // namespace

void add_moments_command(CLI::App& app) {
  auto a = std::make_shared<MomentsArgs>();
  auto* cmd = app.add_subcommand(
      "moments", "Continual release of first and second moments of a stream (rows of INPUT)");
  cmd->add_option("--method", a->method, "jme, lambda-jme, ime, cs, pp or pp-debiased")
      ->required()
      ->check(CLI::IsMember({"jme", "lambda-jme", "ime", "cs", "pp", "pp-debiased"}));
  cmd->add_option("--workload", a->workload,
                  "prefix, average, decay:BETA, window:K, adam:BETA (default prefix)");
  cmd->add_option("--factorization", a->factorization,
                  "input, output, sqrt or banded:B (default sqrt)");
  cmd->add_option("--clip", a->clip, "l2 clip norm zeta > 0 (default 1)");
  cmd->add_option("--epsilon", a->epsilon, "privacy parameter epsilon > 0");
  cmd->add_option("--rho", a->rho, "zCDP budget rho > 0 (instead of --epsilon)");
  cmd->add_option("--noise-multiplier", a->noise_multiplier,
                  "noise of a sensitivity-1 query (instead of --epsilon)");
  cmd->add_option("--delta", a->delta, "delta in (0, 1), always needed to state epsilon")
      ->required();
  cmd->add_option("--lambda", a->lambda, "lambda-jme scaling > 0");
  cmd->add_option("--alpha", a->alpha, "ime first-moment budget share in (0, 1) (default 0.5)");
  cmd->add_option("--tau", a->tau, "cs scaling > 0 (default 1)");
  cmd->add_flag("--diagonal", a->diagonal, "release only the diagonal of the second moment");
  cmd->add_option("--on-norm", a->on_norm, "rows above --clip: clip (default) or reject")
      ->check(CLI::IsMember({"clip", "reject"}));
  cmd->add_option("--neighbouring", a->neighbouring, "replace-one (default) or add-remove")
      ->check(CLI::IsMember({"replace-one", "add-remove"}));
  cmd->add_option("--threads", a->threads,
                  "threads per step, for releases of 2^15 values or more (default 1; the "
                  "output does not depend on it)");
  add_seed_option(cmd, a->seed);
  add_input_options(cmd, a->input);
  cmd->callback([a] { run_moments(*a); });
}

}  // namespace dpstats::cli
