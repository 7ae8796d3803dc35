#include "repro.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "dpstats/error.hpp"

namespace dpstats::repro {

CsvTable::CsvTable(std::vector<std::string> columns) : columns_(std::move(columns)) {}

void CsvTable::add_row(const std::vector<double>& values) {
  require(values.size() == columns_.size(), "CsvTable: row length differs from the columns");
  rows_.push_back(values);
}

std::filesystem::path CsvTable::write(const std::filesystem::path& out, const std::string& name) const {
  std::filesystem::create_directories(out);
  const auto path = out / name;
  std::ofstream f(path);
  require(static_cast<bool>(f), "cannot write " + path.string());
  for (std::size_t j = 0; j < columns_.size(); ++j) f << (j ? "," : "") << columns_[j];
  f << "\n";
  f.precision(10);
  for (const auto& row : rows_) {
    for (std::size_t j = 0; j < row.size(); ++j) f << (j ? "," : "") << row[j];
    f << "\n";
  }
  return path;
}

namespace {
std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

bool plot(const PlotSpec& spec) {
  std::ostringstream cmd;
  cmd << "/usr/bin/python3 " << quote(DPSTATS_SOURCE_DIR "/experiments/plot.py") << " --csv "
      << quote(spec.csv.string()) << " --png " << quote(spec.png.string()) << " --x "
      << quote(spec.x) << " --title " << quote(spec.title) << " --xlabel " << quote(spec.xlabel)
      << " --ylabel " << quote(spec.ylabel);
  for (const auto& y : spec.y) cmd << " --y " << quote(y);
  if (!spec.group.empty()) cmd << " --group " << quote(spec.group);
  if (spec.logx) cmd << " --logx";
  if (spec.logy) cmd << " --logy";
  if (std::system(cmd.str().c_str()) != 0) {
    std::cerr << "dpstats: warning: could not render " << spec.png << " (python3-matplotlib?)\n";
    return false;
  }
  return true;
}

Progress::Progress(std::string what, std::size_t total)
    : what_(std::move(what)), total_(total), tty_(isatty(STDERR_FILENO)) {}

void Progress::step(std::size_t done) {
  done_ += done;
  if (tty_) std::cerr << "\r" << what_ << ": " << done_ << "/" << total_ << std::flush;
}

Progress::~Progress() {
  if (tty_) std::cerr << "\r" << what_ << ": " << done_ << "/" << total_ << " done\n";
}

namespace {
std::vector<Experiment>& registry() {
  static std::vector<Experiment> r;
  return r;
}
}  // namespace

bool register_experiment(Experiment e) {
  registry().push_back(std::move(e));
  std::sort(registry().begin(), registry().end(),
            [](const Experiment& a, const Experiment& b) { return a.name < b.name; });
  return true;
}

const std::vector<Experiment>& experiments() { return registry(); }

}  // namespace dpstats::repro
