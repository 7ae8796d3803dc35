// The tool's --dry-run (dry_run_cli.hpp).
#include "dry_run_cli.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"
#include "ranks.hpp"

namespace dpstats::cli {
namespace {

struct Open {
  std::unique_ptr<DryRun> run;
  std::optional<std::int64_t> n_hint;
  std::string release;  // "stat mean", "mean dp-mean", "fit classify", ...
  std::string remedy;   // the public option(s) that replace the command's private estimates
  std::optional<std::int64_t> d;  // the input's columns (none for `noise`)
};

Open& state() {
  static Open open;
  return open;
}

// What a user gives instead of a command's private estimates.
std::string remedy_of(const std::string& command) {
  if (command == "stat") return "--bounds";
  if (command == "mean") return "--bounds (bounded) or --scale";
  if (command == "median") return "--domain-radius";
  if (command == "moments") return "--clip";
  if (command == "fit") return "the task's public scale (--feature-scale, --feature-bound)";
  return "";
}

// "stat mean": the command and what it runs (STATISTIC, --method, --task when given).
std::string release_of(const CLI::App& cmd) {
  std::string out = cmd.get_name();
  for (const char* name : {"STATISTIC", "--method", "--task"}) {
    const CLI::Option* o = cmd.get_option_no_throw(name);
    if (o && o->count() > 0) out += " " + o->as<std::string>();
  }
  return out;
}

// The input's first line (a header, or for a table without one the first row, whose cells are
// only counted), within the per-line limit.
std::string first_line(const InputArgs& in) {
  const std::string& path = in.path;
  require(!path.ends_with(".npy") && !path.ends_with(".npz"),
          "--dry-run reads the header of a CSV input; for a .npy/.npz input give a CSV with the "
          "same columns (its header line alone is enough)");
  std::ifstream file;
  if (path != "-") {
    file.open(path, std::ios::binary);
    require(file.good(), fmt::format("cannot open the input '{}'", path));
  }
  std::istream& s = path == "-" ? std::cin : file;
  std::string line;
  for (char c; line.size() <= in.max_line_bytes && s.get(c) && c != '\n';) line += c;
  require(line.size() <= in.max_line_bytes, "the input's first line is longer than "
                                            "--max-line-bytes");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  require(!line.empty(), "the input is empty: --dry-run needs its header line");
  return line;
}

}  // namespace

void begin_dry_run(const CLI::App& cmd, std::optional<std::int64_t> n_hint) {
  require(ranks() == nullptr, "--dry-run runs in one process (not under mpirun/srun)");
  Open& s = state();
  if (s.run) throw std::logic_error("a dry run is already open");
  s.run = std::make_unique<DryRun>();
  s.n_hint = n_hint;
  s.release = release_of(cmd);
  s.remedy = remedy_of(cmd.get_name());
}

bool dry_run_open() { return state().run != nullptr && !state().run->stopped(); }

std::int64_t dry_run_rows() { return state().n_hint.value_or(kPlannedRows); }

Table dry_run_table(const InputArgs& in) {
  const std::string line = first_line(in);
  // The cells of the first line are counted as text (never parsed), then the one input layer
  // reads that line followed by a row of zeros: the header rule, --columns and the names are
  // the real run's.
  ReadOptions count;
  count.header = HeaderMode::absent;
  count.text = true;
  count.threads = 1;
  std::istringstream only(line + "\n");
  const std::size_t k = read_csv(only, in.path, count).text.size();
  std::string zeros = "0";
  for (std::size_t j = 1; j < k; ++j) zeros += ",0";
  std::istringstream framed(line + "\n" + zeros + "\n");
  ReadOptions ro = read_options(in);
  ro.threads = 1;
  const Table shape = read_csv(framed, in.path, ro);
  Open& s = state();
  s.d = shape.values.cols();
  // The stand-in is held in memory as the real table would be: within --max-input-bytes.
  const double bytes = 8.0 * static_cast<double>(dry_run_rows()) * static_cast<double>(*s.d);
  require(bytes <= static_cast<double>(in.max_bytes),
          fmt::format("--n-hint {} rows x {} columns is {:.3g} bytes of values, above "
                      "--max-input-bytes {}", dry_run_rows(), *s.d, bytes, in.max_bytes));
  Table out;
  out.header = shape.header;
  out.values = DataMatrix(RowMatrix::Zero(dry_run_rows(), shape.values.cols()));
  return out;
}

nlohmann::ordered_json dry_run_output() {
  Open& s = state();
  if (!s.run || !s.run->stopped())  // (a stopped run is no longer open: its plan prints)
    throw std::logic_error("the dry run's release did not reach its charge");
  const nlohmann::json plan = s.run->json(s.n_hint, s.remedy);
  nlohmann::ordered_json out = {{"command", "dry-run"},
                                {"release", s.release},
                                {"n_hint", plan["n_hint"]},
                                {"n_planned", dry_run_rows()},
                                {"d", s.d ? nlohmann::ordered_json(*s.d) : nullptr}};
  for (const char* key : {"verdict", "rows_needed", "checks", "private", "spends", "stages",
                          "caveat"})
    out[key] = plan[key];
  return declared_output(std::move(out));
}

}  // namespace dpstats::cli
