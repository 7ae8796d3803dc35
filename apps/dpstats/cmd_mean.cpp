// dpstats mean --method prime|prime-ht|filter|dp-mean|exp-time|bounded --epsilon E --delta D
//               [--sigma S] [--bounds LO,HI] [--alpha A] [--profile paper|practical]
//               [--topk-multiplier M] [--T1 N] [--T2 N] [--T N] [--no-fallback]
//               [--uncertified-window] [--seed N] [--threads T] INPUT
#include <fmt/format.h>

#include "cli.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/bounded_mean.hpp"
#include "dpstats/mean/dp_mean.hpp"
#include "dpstats/mean/exp_time_mean.hpp"
#include "dpstats/mean/prime.hpp"
#include "dpstats/mean/prime_ht.hpp"
#include "dpstats/mean/private_filter.hpp"

namespace dpstats::cli {

namespace {

struct MeanArgs {
  std::string method;
  double epsilon = 0;
  double delta = 0;
  double sigma = 1;
  std::string bounds;
  std::optional<double> alpha;
  std::string profile = "practical";
  double topk_multiplier = 2;
  int T1 = 0, T2 = 0, T = 0;
  bool no_fallback = false;
  bool window = false;
  std::optional<std::uint64_t> seed;
  int threads = 1;
  InputArgs input;
};

std::pair<double, double> parse_bounds(const std::string& text) {
  const auto comma = text.find(',');
  require(comma != std::string::npos,
          fmt::format("--bounds must be LO,HI (two numbers), got '{}'", text));
  auto number = [&](const std::string& s) {
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(used == s.size() && !s.empty() && std::isfinite(x),
            fmt::format("--bounds must be LO,HI with finite numbers, got '{}'", text));
    return x;
  };
  return {number(text.substr(0, comma)), number(text.substr(comma + 1))};
}

void run_mean(const MeanArgs& a) {
  const Table table = read_input(a.input);
  auto rng = make_rng(a.seed);
  require(!a.window || a.method == "exp-time", "--uncertified-window applies to --method exp-time only");
  Release<Vector> r;
  if (a.method == "bounded") {
    require(!a.bounds.empty(), "--method bounded needs --bounds LO,HI");
    BoundedMeanOptions o;
    std::tie(o.lower, o.upper) = parse_bounds(a.bounds);
    o.epsilon = a.epsilon;
    o.delta = a.delta;
    o.threads = a.threads;
    r = bounded_mean(table.values, o, *rng);
  } else if (a.method == "prime" || a.method == "prime-ht") {
    require(a.bounds.empty(), "--bounds applies to --method bounded only");
    require(a.T == 0, "--T applies to --method filter only");
    require(a.alpha.has_value(), fmt::format("--method {} needs --alpha A (upper bound on the "
                                             "corrupted fraction)", a.method));
    PrimeOptions o;
    o.epsilon = a.epsilon;
    o.delta = a.delta;
    o.alpha = *a.alpha;
    o.sigma = a.sigma;
    o.profile = prime_profile_from_string(a.profile);
    o.topk_multiplier = a.topk_multiplier;
    o.T1 = a.T1;
    o.T2 = a.T2;
    o.fallback = !a.no_fallback;
    o.threads = a.threads;
    r = a.method == "prime" ? prime(table.values, o, *rng) : prime_ht(table.values, o, *rng);
  } else if (a.method == "filter") {
    require(a.bounds.empty(), "--bounds applies to --method bounded only");
    require(a.T1 == 0 && a.T2 == 0, "--T1/--T2 apply to prime and prime-ht; the filter has --T");
    require(a.alpha.has_value(), "--method filter needs --alpha A (upper bound on the corrupted fraction)");
    PrivateFilterOptions o;
    o.epsilon = a.epsilon;
    o.delta = a.delta;
    o.alpha = *a.alpha;
    o.sigma = a.sigma;
    o.profile = prime_profile_from_string(a.profile);
    o.topk_multiplier = a.topk_multiplier;
    o.T = a.T;
    o.threads = a.threads;
    r = private_filter(table.values, o, *rng);
  } else if (a.method == "exp-time") {
    require(a.bounds.empty(), "--bounds applies to --method bounded only");
    require(a.alpha.has_value(), "--method exp-time needs --alpha A (upper bound on the corrupted fraction)");
    require(table.values.cols() == 1,
            fmt::format("--method exp-time is implemented for d = 1 only (a reference), got d = {}",
                        table.values.cols()));
    ExpTimeMeanOptions o;
    o.epsilon = a.epsilon;
    o.delta = a.delta;
    o.alpha = *a.alpha;
    o.sigma = a.sigma;
    o.window_resilience = a.window;
    r = exp_time_mean(table.values, o, *rng);
  } else {
    require(a.bounds.empty(), "--bounds applies to --method bounded only");
    require(!a.alpha.has_value(), "--alpha applies to the robust methods only");
    DpMeanOptions o;
    o.epsilon = a.epsilon;
    o.delta = a.delta;
    o.sigma = a.sigma;
    o.threads = a.threads;
    r = dp_mean(table.values, o, *rng);
  }
  nlohmann::ordered_json head = {{"command", "mean"}, {"method", a.method}};
  head["estimate"] = std::vector<double>(r.estimate.data(), r.estimate.data() + r.estimate.size());
  nlohmann::ordered_json extra = {{"n", table.values.rows()}, {"d", table.values.cols()}};
  if (!table.header.empty()) extra["columns"] = table.header;
  const auto out = release_output(std::move(head), release_fields_json(r), extra);
  print_json(out);
}

}  // namespace

void add_mean_command(CLI::App& app) {
  auto a = std::make_shared<MeanArgs>();
  auto* cmd = app.add_subcommand("mean", "Private mean of the rows of INPUT (CSV or .npy)");
  cmd->add_option("--method", a->method,
                  "prime (robust: PRIME), prime-ht (robust, bounded covariance), filter (private "
                  "iterative filter), exp-time (d = 1 reference), dp-mean (PRIME paper's "
                  "baseline) or bounded")
      ->required()
      ->check(CLI::IsMember({"prime", "prime-ht", "filter", "exp-time", "dp-mean", "bounded"}));
  cmd->add_option("--epsilon", a->epsilon, "privacy parameter epsilon > 0")->required();
  cmd->add_option("--delta", a->delta,
                  "privacy parameter delta in [0, 1); 0 gives pure DP (bounded only)")
      ->required();
  cmd->add_option("--sigma", a->sigma, "known scale of the data (dp-mean), default 1");
  cmd->add_option("--alpha", a->alpha, "prime, prime-ht, filter, exp-time: upper bound on the corrupted fraction, (0, 0.25]");
  cmd->add_option("--profile", a->profile, "prime, prime-ht, filter: practical (default) or paper")
      ->check(CLI::IsMember({"practical", "paper"}));
  cmd->add_option("--topk-multiplier", a->topk_multiplier,
                  "prime: filter candidates per round k = ceil(M alpha n), M in [1, 4] (default 2)");
  cmd->add_option("--T1", a->T1, "prime: epochs (0 = profile default)");
  cmd->add_option("--T2", a->T2, "prime: inner iterations per epoch (0 = profile default)");
  cmd->add_option("--T", a->T, "filter: rounds (0 = min(200, 2d + 20))");
  cmd->add_flag("--uncertified-window", a->window,
                "exp-time: contiguous-window resilience instead of the exact enumeration (runs "
                "at any n; the release is certified: false)");
  cmd->add_flag("--no-fallback", a->no_fallback,
                "prime practical: run the filter even when the feasibility check predicts it is "
                "noise-dominated (default: fall back to dp-mean)");
  cmd->add_option("--bounds", a->bounds, "LO,HI clipping bounds for every coordinate (bounded)");
  add_seed_option(cmd, a->seed);
  cmd->add_option("--threads", a->threads, "threads for the clipped sum")
      ->check(CLI::Range(1, 256));
  add_input_options(cmd, a->input);
  cmd->callback([a] { run_mean(*a); });
}

}  // namespace dpstats::cli
