// dpstats moments --method jme|lambda-jme|ime|cs|pp|pp-debiased --workload prefix|decay:B|window:K|
//   average|adam:B --factorization auto|input|output|sqrt|banded:B|blt:M [--clip Z] [--scale-share S]
//   [--clip-check-share S]
//   (--epsilon E --delta D | --rho R --delta D | --noise-multiplier S --delta D) [--diagonal]
//   [--lambda L] [--alpha A] [--tau T] [--on-norm clip|reject] [--steps N] [--budget FILE] [--seed N] INPUT
// The rows of INPUT are the stream. Output (JSON Lines): the first line holds the release's
// fields (status, privacy, ledger, diagnostics) once; then one compact line per step
// {"step", "first", "second"}. With --steps N the rows are read one at a time as they arrive (a
// live stream, e.g. from a pipe; without --clip each line also states the adaptive clip the next
// row runs at, {"step", "clip", ...}) and each line is flushed as soon as its row has
// been pushed; without it the horizon is the number of rows of INPUT, read first, and the batch
// API runs (a private clip when --clip is absent, a private count of clipped rows when given).
// Options are validated and the whole release's budget charged before the first line is printed.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <span>
#include <sstream>
#include <string>

#include "budget_file.hpp"
#include "cli.hpp"
#include "dry_run_cli.hpp"
#include "options_cli.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"
#include "dpstats/moments/estimator.hpp"
#include "dpstats/moments/moments_request.hpp"
#include "ranks.hpp"

namespace dpstats::cli {

namespace {

struct MomentsArgs : ReleaseArgs {  // the shared options, declared once (options_cli.hpp)
  std::optional<moments::Method> method;  // --method, parsed by EnumNames<Method>
  moments::MomentsRequest request;  // the moments' own options (moments/moments_request.hpp)
  std::optional<std::size_t> steps;
  bool no_centre = false;  // --no-centre: centre = false
  InputArgs input;
};

moments::Method method_of(const MomentsArgs& a) {
  return a.method.value_or(moments::MomentsOptions{}.method);
}

// The moments options on `steps` rows of `dim` columns, the shared ones applied.
moments::MomentsOptions options_of(const MomentsArgs& a, std::size_t steps, std::size_t dim) {
  moments::MomentsRequest request = a.request;
  request.rho = a.rho;
  request.scale_share = a.scale_share;
  request.neighbouring = a.neighbouring;
  request.profile = a.profile;
  if (a.no_centre) request.centre = false;
  moments::MomentsOptions o = moments::moments_options(method_of(a), request, steps, dim);
  o.privacy = a.target();
  if (a.threads) o.run.threads = *a.threads;
  return o;
}

std::vector<std::string> split_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream ss(line);
  for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
  return cells;
}

// One CSV row of numbers, the cells at `columns` (0-based; every cell when empty); false for a
// blank line. The other cells are not read (dates, names). Never echoes a value in an error.
bool parse_row(const std::string& line, std::vector<double>& row, std::size_t line_no,
               const std::vector<std::size_t>& columns = {}) {
  row.clear();
  if (line.find_first_not_of(" \t\r") == std::string::npos) return false;
  const auto cells = split_cells(line);
  auto number = [&](const std::string& cell) {
    char* end = nullptr;
    const double v = std::strtod(cell.c_str(), &end);
    while (end && (*end == ' ' || *end == '\t' || *end == '\r')) ++end;
    require(end != cell.c_str() && end && *end == '\0',
            "INPUT line {}: a cell is not a number", line_no);
    row.push_back(v);
  };
  if (columns.empty()) {
    for (const auto& cell : cells) number(cell);
    return true;
  }
  for (const std::size_t j : columns) {
    require(j < cells.size(), "INPUT line {} has {} cells, --columns selects cell {}", line_no,
            cells.size(), j + 1);
    number(cells[j]);
  }
  return true;
}

// The 0-based cells --columns selects in the live stream (empty: every cell): a name is matched
// against the header line (when the input has one), else a positive integer is a 1-based index.
std::vector<std::size_t> live_columns(const InputArgs& input, const std::vector<std::string>& names) {
  std::vector<std::size_t> out;
  if (input.columns.empty()) return out;
  for (const ColumnSpec& c : parse_column_list(input.columns)) {
    const auto it = std::find(names.begin(), names.end(), c.name);
    if (it != names.end()) {
      out.push_back(static_cast<std::size_t>(it - names.begin()));
      continue;
    }
    require(c.index > 0, "--columns: no column named '{}'{}", c.name,
            names.empty() ? " (the input has no header: give 1-based indices)" : "");
    out.push_back(c.index - 1);
  }
  return out;
}

void print_header(const moments::MomentEstimator& est, const MomentsArgs& a, std::size_t d) {
  nlohmann::ordered_json head = {{"command", "moments"}, {"method", name_of(method_of(a))}};
  const nlohmann::ordered_json extra = {{"n", est.config().steps}, {"d", d}};
  std::cout << release_output(std::move(head), release_fields_json(est.release_fields()), extra)
                   .dump()
            << std::endl;  // flushed: the release's fields come before the first step
}

// A step's line, {"step":t,["clip":c,]"first":[...],"second":[...]}: the text nlohmann's dump()
// writes (its number formatter; null for a non-finite value), appended to `out` without building
// a JSON object per step (a 10^6-step stream prints 2·10^7 numbers).
void append_number(std::string& out, double x) {
  if (!std::isfinite(x)) {
    out += "null";
    return;
  }
  char buffer[64];
  out.append(buffer, nlohmann::detail::to_chars(buffer, buffer + sizeof buffer, x));
}

void append_list(std::string& out, const char* key, std::span<const double> values) {
  out += ",\"";
  out += key;
  out += "\":[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    append_number(out, values[i]);
  }
  out += ']';
}

void append_step(std::string& out, std::size_t step, std::optional<double> clip,
                 std::span<const double> first, std::span<const double> second) {
  out += "{\"step\":";
  out += std::to_string(step);
  if (clip) {
    out += ",\"clip\":";
    append_number(out, *clip);
  }
  append_list(out, "first", first);
  append_list(out, "second", second);
  out += "}\n";
}

void print_step(const moments::MomentEstimator& est) {
  // The line's fields are those scope "moments/step" declares (step, clip, first, second),
  // written directly: a 10^6-step stream prints 2·10^7 numbers.
  std::string line;
  append_step(line, est.step(), est.adaptive_clip() ? std::optional(est.clip()) : std::nullopt,
              est.first(), est.second());
  std::cout << line << std::flush;  // one line per step, as the row arrives
}

// One line of at most `limit` bytes (the input layer's per-line limit), or false at the end.
bool bounded_getline(std::istream& in, std::string& line, std::uint64_t limit, std::size_t line_no) {
  line.clear();
  for (int c; (c = in.get()) != EOF;) {
    if (c == '\n') return true;
    require(line.size() < limit, "INPUT line {} is longer than --max-line-bytes = {}", line_no,
            limit);
    line.push_back(static_cast<char>(c));
  }
  return !line.empty();
}

// Whether the first line is names: declared by --header / --no-header, otherwise only when no
// cell of it reads as a number (a data row is never taken for a header).
bool first_line_is_header(const MomentsArgs& a, const std::string& line) {
  if (a.input.header || a.input.no_header) return a.input.header;
  std::vector<double> ignored;
  try {
    return !parse_row(line, ignored, 1);
  } catch (const InvalidArgument&) {
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) {
      char* end = nullptr;
      std::strtod(cell.c_str(), &end);
      if (end != cell.c_str()) {
        throw InvalidArgument("INPUT line 1 mixes numbers and text: pass --header or --no-header");
      }
    }
    return true;
  }
}

// The live stream: rows read one at a time; the horizon is --steps.
void run_live(const MomentsArgs& a) {
  if (dry_run_open()) {  // the header alone: the estimator charges the stream when it is built
    const moments::MomentsOptions o =
        options_of(a, *a.steps, static_cast<std::size_t>(dry_run_table(a.input).values.cols()));
    auto rng = make_rng(a.seed);
    BudgetFile budget(a.budget);
    moments::MomentEstimator(moments::make_config(o), *rng, budget.get());  // stops at its charge
    dry_run_stop({}, std::nullopt);  // (charged nothing: plans no stage)
  }
  std::ifstream file;
  const std::string& path = a.input.path;
  if (path != "-") {
    file.open(path);
    require(file.good(), "cannot open INPUT");
  }
  std::istream& in = path == "-" ? std::cin : file;
  std::unique_ptr<Rng> rng;
  std::unique_ptr<moments::MomentEstimator> est;
  std::string line;
  std::vector<double> row;
  std::vector<std::size_t> columns;  // --columns, resolved on the first line
  for (std::size_t line_no = 1; bounded_getline(in, line, a.input.max_line_bytes, line_no);
       ++line_no) {
    if (line_no == 1) {
      const bool header = first_line_is_header(a, line);
      columns = live_columns(a.input, header ? split_cells(line) : std::vector<std::string>{});
      if (header) continue;
    }
    if (!parse_row(line, row, line_no, columns)) continue;
    if (!est) {
      const moments::MomentsOptions o = options_of(a, *a.steps, row.size());
      rng = make_rng(a.seed);
      {
        // The estimator charges the whole stream when it is built: the file is written back
        // and unlocked before the first line, so a long stream does not hold the lock.
        BudgetFile budget(a.budget);
        est = std::make_unique<moments::MomentEstimator>(moments::make_config(o), *rng,
                                                         budget.get());
        budget.commit();
      }
      print_header(*est, a, row.size());
    }
    require(row.size() == est->config().dim,
            "INPUT line {} has {} values, the first row {}", line_no, row.size(),
            est->config().dim);
    require(est->step() < est->config().steps,
            "INPUT has more rows than --steps = {}, the horizon the stream was charged for: the "
            "steps above are released, later rows are not; give --steps at least the rows to come",
            est->config().steps);
    est->push(row);
    print_step(*est);
  }
  require(est != nullptr, "INPUT holds no rows");
}

void run_moments(const MomentsArgs& a) {
  Communicator* comm = ranks();  // null: one process
  if (a.steps) {
    require(comm == nullptr || comm->size() == 1,
            "--steps (a live stream read row by row) does not run on several ranks; give the "
            "whole table (without --steps)");
    run_live(a);
    return;
  }
  const InputShard input = read_input_shard(a.input, comm);
  const auto& X = input.table.values;
  check_data(X);
  // The stream's horizon: every rank's rows.
  moments::MomentsOptions o =
      options_of(a, static_cast<std::size_t>(input.total), static_cast<std::size_t>(X.cols()));
  o.run.comm = comm;
  moments::MomentsConfig c = moments::make_config(o);
  // Which row is not said (issue 28): the refusal is the one bit --on-norm reject reveals.
  if (c.on_norm == moments::NormPolicy::reject && c.clip)
    for (Eigen::Index t = 0; t < X.rows(); ++t)
      require(X.row(t).norm() <= *c.clip,
              fmt::format("a row has l2 norm above --clip {} (--on-norm reject; the row is not "
                          "named); no noise was drawn", format_number(*c.clip)));
  auto rng = make_rng(a.seed);
  // The whole table is known: the batch API (a private clip when --clip is absent, a private
  // count of clipped rows when it is given), then one line per step.
  BudgetFile budget(is_root() ? a.budget : std::nullopt);  // the ledger lives on rank 0
  const auto r = moments::estimate_moments(X, std::move(c), *rng, budget.get());
  budget.commit();  // before anything is printed
  if (!is_root()) return;
  nlohmann::ordered_json head = {{"command", "moments"}, {"method", name_of(method_of(a))}};
  const nlohmann::ordered_json extra = {{"n", input.total}, {"d", X.cols()}};
  std::cout << release_output(std::move(head), release_fields_json(r), extra, &a.input).dump()
            << std::endl;
  const RowMatrix &first = r.estimate.first, &second = r.estimate.second;
  std::string lines;  // each line: the fields of scope "moments/step"
  for (Eigen::Index t = 0; t < first.rows(); ++t) {
    append_step(lines, static_cast<std::size_t>(t + 1), std::nullopt,
                {first.row(t).data(), static_cast<std::size_t>(first.cols())},
                {second.row(t).data(), static_cast<std::size_t>(second.cols())});
    if (lines.size() >= (1 << 16) || t + 1 == first.rows()) {
      std::cout << lines;
      lines.clear();
    }
  }
  std::cout << std::flush;
}

std::string method_help() {
  std::string h;
  for (const auto& m : moments::moments_methods())
    h += fmt::format("{}{}: {}", h.empty() ? "" : "; ", m.name, m.summary);
  return h;
}

}  // namespace

void add_moments_command(CLI::App& app) {
  using namespace dpstats::moments;
  auto a = std::make_shared<MomentsArgs>();
  auto* cmd = app.add_subcommand(
      "moments", "Continual release of first and second moments of a stream (rows of INPUT)");
  auto* method = add_enum(cmd, find_option("moments", "method"), a->method, {});
  method->description(method->get_description() + ": " + method_help());
  // --delta is required: it states epsilon (also under --rho or --noise-multiplier); --threads
  // splits a step of 2^15 values or more (the output does not depend on it).
  add_release_options(cmd, *a, kEveryRelease | kRho | kNeighbouring | kScaleShare | kProfile,
                      kDelta, moments_methods());
  add_request_options(cmd, "moments", a->request, moments_methods());
  add_declared_flag(cmd, "moments", "no_centre", a->no_centre)->excludes("--centre");
  add_declared(cmd, "moments", "steps", a->steps);
  add_input_options(cmd, a->input);
  cmd->callback([a] { run_moments(*a); });
}

}  // namespace dpstats::cli
