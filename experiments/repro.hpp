// `dpstats repro NAME`: regenerate a paper's table or figure into a folder as CSV + PNG + a short
// markdown summary. Each experiment registers itself with DPSTATS_EXPERIMENT in its own .cpp
// under experiments/<paper>/; the files are compiled as an object library into the tool, so the
// registration always runs.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/parallel.hpp"

namespace dpstats::repro {

struct ReproOptions {
  std::filesystem::path out;           // folder for CSV, PNG and summary.md
  bool quick = false;                  // the small size (< 2 minutes); otherwise the paper's size
  std::optional<std::uint64_t> seed;   // data and noise seed; secure noise when absent
  int threads = default_threads();    // data-pass threads; seeded outputs do not depend on it
};

// A CSV table written column by column.
class CsvTable {
 public:
  explicit CsvTable(std::vector<std::string> columns);
  void add_row(const std::vector<double>& values);
  // Writes `out/name` and returns its path.
  std::filesystem::path write(const std::filesystem::path& out, const std::string& name) const;
  const std::vector<std::string>& columns() const { return columns_; }

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<double>> rows_;
};

// A line plot of a CSV: y columns against an x column, optionally grouped by a column (one line
// per distinct value), with optional error-bar columns named "<y>_se". Rendered by
// experiments/plot.py with the Debian matplotlib; returns false (and says why on stderr) when
// plotting is unavailable — the CSV and summary are still written.
struct PlotSpec {
  std::filesystem::path csv;
  std::filesystem::path png;
  std::string title, x, xlabel, ylabel;
  std::vector<std::string> y;
  std::string group;  // optional
  bool logx = false, logy = false;
};
bool plot(const PlotSpec& spec);

// Progress on stderr, only when stderr is a terminal.
class Progress {
 public:
  Progress(std::string what, std::size_t total);
  void step(std::size_t done = 1);
  ~Progress();

 private:
  std::string what_;
  std::size_t total_, done_ = 0;
  bool tty_;
};

struct Experiment {
  std::string name;
  std::string description;
  std::function<void(const ReproOptions&)> run;
};

bool register_experiment(Experiment e);
const std::vector<Experiment>& experiments();

}  // namespace dpstats::repro

#define DPSTATS_CONCAT_INNER(a, b) a##b
#define DPSTATS_CONCAT(a, b) DPSTATS_CONCAT_INNER(a, b)
// DPSTATS_EXPERIMENT("prime-fig1", "PRIME Fig. 1: error against d, alpha and epsilon", run_fig1);
#define DPSTATS_EXPERIMENT(name, description, function)                            \
  static const bool DPSTATS_CONCAT(dpstats_experiment_registered_, __LINE__) = \
      ::dpstats::repro::register_experiment({name, description, function})
