// The real-table sweep (issue 27 item 7): every command's default on the small, odd tables of
// synthetic/real_tables.hpp at epsilon 0.1, 0.3, 1, 3 over several seeds. Each release is judged:
// `ok` must lie within its stated error of the truth (or, where a command states none, within
// the tolerance documented beside its check in checks.cpp and in docs/results/real-data.md), and
// an abstention must name its cause. The tally per command and epsilon (ok share, worst error) is
// what docs/results/real-data.md reports.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/synthetic/real_tables.hpp"

namespace dpstats::sweep {

inline constexpr double kEpsilons[] = {0.1, 0.3, 1, 3};
inline constexpr int kSeeds = 3;
inline constexpr double kDelta = 1e-6;  // the commands that need delta > 0; stat runs at 0
inline constexpr double kAlpha = 0.05;  // `mean --alpha`
inline constexpr double kQuantiles[] = {0.5, 0.95, 0.99};  // `stat quantiles`

// One release, judged.
struct Outcome {
  std::string command, table;
  double epsilon = 0;
  int seed = 0;
  bool ok = false;
  bool error = false;     // the library threw on a valid request (a bug, never acceptable)
  std::string reason;     // abstention reason or error message
  double error_units = 0; // worst |estimate - truth| over columns, in the command's unit
  bool within = true;     // ok: every column within its stated error (or tolerance)
  double worst_ratio = 0; // ok: worst |estimate - truth| / stated error
  double confidence = 1;  // the stated error's confidence (1: a documented tolerance)
  std::string detail;     // the first column outside, for the failure message
};

using Estimate = std::vector<double>;

// The columns' truth, from the rows (all of them, or the clean ones).
struct ColumnTruth {
  Eigen::Index n = 0;
  Vector mean, variance, sum, sd;
  std::vector<std::vector<double>> sorted;  // per column, ascending
};
ColumnTruth column_truth(const ConstMatrixRef& X, const std::vector<char>& drop = {});
// The unit errors are reported in: the column's sd (a tiny positive number for a constant one).
double unit_of(const ColumnTruth& t, Eigen::Index j);

// Every command that reads numeric columns, in process (the library, as the tool calls it).
std::vector<Outcome> run_column_commands(const synthetic::RealTable& t, double epsilon, int seed);
// The same commands through the tool (one pass: the CLI contract), at one epsilon and seed.
std::vector<Outcome> run_column_commands_cli(const synthetic::RealTable& t, double epsilon,
                                             int seed, const std::string& csv_dir);
// The tool run with `args`: its release (null when it printed none), the estimate (the final
// step's first moment when `final_step`) and its stderr.
struct ToolRun {
  Estimate estimate;
  nlohmann::json fields;
  std::string error;
};
ToolRun run_tool(const std::string& args, bool final_step = false);
// `fit` on a table made for it (classify, user level, heavy-tailed), through the tool.
std::vector<Outcome> run_fit_cli(const synthetic::RealTable& t, double epsilon, int seed,
                                 const std::string& csv_dir);

// Judging one release's JSON (the tool's output or release_fields_json of a library release).
Outcome judge(const std::string& command, const synthetic::RealTable& t, double epsilon, int seed,
              const Estimate& estimate, const nlohmann::json& fields);

// The per-(command, epsilon) tally the docs report.
struct Tally {
  int runs = 0, oks = 0, outside = 0, errors = 0;
  double worst = 0, worst_ratio = 0;
};
using Summary = std::map<std::pair<std::string, double>, Tally>;
void add(Summary& s, const Outcome& o);
std::string markdown(const Summary& s);

}  // namespace dpstats::sweep
