// The sweep's commands, in process (the library calls the tool makes, with the tool's defaults)
// and through the tool itself (sweep.hpp).
#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <unistd.h>

#include "dpstats/error.hpp"
#include "dpstats/mean/methods.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/moments/estimator.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/bounds.hpp"
#include "dpstats/stats/stats.hpp"
#include "guarantee.hpp"
#include "sweep.hpp"

namespace dpstats::sweep {
namespace {

using synthetic::RealTable;

std::vector<double> to_std(const Vector& v) { return {v.data(), v.data() + v.size()}; }

// Runs `release` and judges it; an exception on these valid requests is recorded as an error.
template <class F>
Outcome in_process(const std::string& command, const RealTable& t, double epsilon, int seed,
                   F release) {
  try {
    const auto [estimate, fields] = release();
    return judge(command, t, epsilon, seed, estimate, fields);
  } catch (const std::exception& e) {
    return Outcome{.command = command, .table = t.name, .epsilon = epsilon, .seed = seed,
                   .error = true, .reason = e.what()};
  }
}

std::pair<Estimate, nlohmann::json> stat(stats::Statistic s, const RealTable& t, double epsilon,
                                         int seed, bool public_bounds = false) {
  stats::StatOptions o;
  o.privacy = {epsilon, 0};
  if (public_bounds)
    for (const auto& [lo, hi] : t.public_bounds) o.bounds.push_back({lo, hi});
  if (s == stats::Statistic::quantiles) o.quantiles.assign(std::begin(kQuantiles), std::end(kQuantiles));
  SeededRng rng(static_cast<std::uint64_t>(seed));
  const auto r = stats::numeric(s, t.values, o, rng);
  testing::expect_guarantee_from_ledger(r);  // the statement is what the ledger composes to
  return {to_std(r.estimate), release_fields_json(r)};
}

std::pair<Estimate, nlohmann::json> mean(const RealTable& t, double epsilon, int seed,
                                         bool alpha, std::string method = "") {
  MeanRequest r;
  r.method = std::move(method);
  r.privacy = {epsilon, kDelta};
  if (alpha) r.alpha = kAlpha;
  SeededRng rng(static_cast<std::uint64_t>(seed));
  const auto out = run_mean(t.values, r, rng);
  testing::expect_guarantee_from_ledger(out);  // the statement is what the ledger composes to
  return {to_std(out.estimate), release_fields_json(out)};
}

std::pair<Estimate, nlohmann::json> bounds(const RealTable& t, double epsilon, int seed) {
  BoundsOptions o;
  o.privacy = {epsilon, 0};
  SeededRng rng(static_cast<std::uint64_t>(seed));
  const auto r = private_bounds(t.values, o, rng);
  testing::expect_guarantee_from_ledger(r);  // the statement is what the ledger composes to
  return {{}, release_fields_json(r)};
}

std::pair<Estimate, nlohmann::json> median(const RealTable& t, double epsilon, int seed) {
  GeometricMedianOptions o;
  o.privacy = {epsilon, kDelta};
  SeededRng rng(static_cast<std::uint64_t>(seed));
  const auto r = geometric_median(t.values, o, rng);
  testing::expect_guarantee_from_ledger(r);  // the statement is what the ledger composes to
  return {to_std(r.estimate), release_fields_json(r)};
}

std::pair<Estimate, nlohmann::json> moments(const RealTable& t, double epsilon, int seed) {
  moments::MomentsOptions o;
  o.privacy = {epsilon, kDelta};
  o.steps = static_cast<std::size_t>(t.values.rows());
  o.dim = static_cast<std::size_t>(t.values.cols());
  SeededRng rng(static_cast<std::uint64_t>(seed));
  const auto r = moments::estimate_moments(t.values, moments::make_config(o), rng);
  testing::expect_guarantee_from_ledger(r);  // the statement is what the ledger composes to
  Estimate last;
  if (r.estimate.first.rows() > 0) last = to_std(r.estimate.first.bottomRows(1).transpose());
  return {last, release_fields_json(r)};
}

// One line of a CSV: the header, or a row of numbers written exactly.
void write_csv(const std::string& path, const std::vector<std::string>& header, const ConstMatrixRef& X) {
  std::ofstream f(path);
  for (std::size_t j = 0; j < header.size(); ++j) f << (j ? "," : "") << header[j];
  f << "\n";
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    for (Eigen::Index j = 0; j < X.cols(); ++j) f << (j ? "," : "") << fmt::format("{}", X(i, j));
    f << "\n";
  }
}

std::string tmp_dir() {
  const char* t = std::getenv("TMPDIR");
  return t ? t : "/tmp";
}

// Runs the tool: its stdout lines (the release first), and its stderr in `error`.
std::vector<std::string> tool(const std::string& args, std::string& error) {
  const std::string err = fmt::format("{}/dpstats_sweep_stderr_{}", tmp_dir(), ::getpid());
  const std::string cmd = fmt::format("{} {} 2>{}", DPSTATS_CLI, args, err);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::vector<std::string> lines;
  std::string line;
  std::array<char, 65536> buf;
  while (pipe && fgets(buf.data(), buf.size(), pipe.get())) {
    line += buf.data();
    if (line.back() != '\n') continue;
    lines.push_back(std::move(line));
    line.clear();
  }
  std::ifstream e(err);
  error.assign(std::istreambuf_iterator<char>(e), {});
  std::remove(err.c_str());
  return lines;
}

}  // namespace

ToolRun run_tool(const std::string& args, bool final_step) {
  ToolRun run;
  const std::vector<std::string> lines = tool(args, run.error);
  if (lines.empty() || lines[0].front() != '{') return run;
  run.fields = nlohmann::json::parse(lines[0]);
  const nlohmann::json values = final_step && lines.size() > 1
                                    ? nlohmann::json::parse(lines.back())["first"]
                                    : run.fields.value("estimate", nlohmann::json());
  if (values.is_array())
    for (const auto& x : values) run.estimate.push_back(x.is_number() ? x.get<double>() : NAN);
  return run;
}

std::vector<Outcome> run_column_commands(const RealTable& t, double epsilon, int seed) {
  using S = stats::Statistic;
  std::vector<Outcome> out;
  const std::pair<S, const char*> stats_[] = {{S::count, "stat count"}, {S::sum, "stat sum"},
                                              {S::mean, "stat mean"}, {S::variance, "stat variance"},
                                              {S::std, "stat std"}, {S::quantiles, "stat quantiles"}};
  for (const auto& [s, name] : stats_)
    out.push_back(in_process(name, t, epsilon, seed, [&] { return stat(s, t, epsilon, seed); }));
  if (!t.public_bounds.empty())  // the range the column's nature makes public, as a user gives it
    out.push_back(in_process("stat quantiles --bounds", t, epsilon, seed,
                             [&] { return stat(S::quantiles, t, epsilon, seed, true); }));
  out.push_back(in_process("bounds", t, epsilon, seed, [&] { return bounds(t, epsilon, seed); }));
  out.push_back(in_process("mean", t, epsilon, seed, [&] { return mean(t, epsilon, seed, false); }));
  out.push_back(in_process("mean --alpha", t, epsilon, seed, [&] { return mean(t, epsilon, seed, true); }));
  out.push_back(in_process("mean --method dp-mean", t, epsilon, seed,
                           [&] { return mean(t, epsilon, seed, false, "dp-mean"); }));
  out.push_back(in_process("median", t, epsilon, seed, [&] { return median(t, epsilon, seed); }));
  out.push_back(in_process("moments", t, epsilon, seed, [&] { return moments(t, epsilon, seed); }));
  return out;
}

std::vector<Outcome> run_column_commands_cli(const RealTable& t, double epsilon, int seed,
                                             const std::string& dir) {
  const std::string csv = fmt::format("{}/{}.csv", dir, t.name);
  write_csv(csv, t.columns, t.values);
  const std::string common = fmt::format("--epsilon {} --seed {} {}", epsilon, seed, csv);
  const std::pair<const char*, std::string> runs[] = {
      {"stat count", "stat count --delta 0"}, {"stat sum", "stat sum --delta 0"},
      {"stat mean", "stat mean --delta 0"}, {"stat variance", "stat variance --delta 0"},
      {"stat std", "stat std --delta 0"},
      {"stat quantiles", fmt::format("stat quantiles --quantiles {} --delta 0",
                                     fmt::join(kQuantiles, ","))},
      {"bounds", "bounds"},
      {"mean", fmt::format("mean --delta {}", kDelta)},
      {"mean --alpha", fmt::format("mean --alpha {} --delta {}", kAlpha, kDelta)},
      {"mean --method dp-mean", fmt::format("mean --method dp-mean --delta {}", kDelta)},
      {"median", fmt::format("median --delta {}", kDelta)},
      {"moments", fmt::format("moments --method jme --delta {}", kDelta)}};
  std::vector<Outcome> out;
  for (const auto& [name, args] : runs) {
    const ToolRun r = run_tool(args + " " + common, std::string(name) == "moments");
    out.push_back(r.fields.is_null()
                      ? Outcome{.command = name, .table = t.name, .epsilon = epsilon, .seed = seed,
                                .error = true, .reason = r.error}
                      : judge(name, t, epsilon, seed, r.estimate, r.fields));
  }
  return out;
}

}  // namespace dpstats::sweep
