#include "cli.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"
#include "dpstats/output_fields.hpp"
#include "dry_run_cli.hpp"
#include "ranks.hpp"

#include <unistd.h>

#include <iostream>

namespace dpstats::cli {

void add_input_options(CLI::App* cmd, InputArgs& in, bool required) {
  auto* input = cmd->add_option("INPUT", in.path,
                                "CSV (RFC 4180), .npy or .npz file, or - for stdin (see "
                                "docs/guide.md \"Reading tables\")");
  if (required) input->required();
  cmd->add_option("--columns", in.columns,
                  "columns to use, comma-separated: header names or 1-based indices (default all; "
                  "other columns may hold text)");
  auto* h = cmd->add_flag("--header", in.header, "the first line is column names (even if numeric)");
  auto* nh = cmd->add_flag("--no-header", in.no_header, "the first line is data");
  h->excludes(nh);
  cmd->add_flag("--drop-missing", in.drop_missing,
                "drop rows with a missing value (empty, NA, NaN) in a used column; n counts the "
                "rows kept (default: a missing value is an error)");
  cmd->add_option("--array", in.array, ".npz input: the array to read (default: the only one)");
  cmd->add_option("--max-input-bytes", in.max_bytes,
                  "limit on the input's bytes and on the parsed values' bytes (default 4 GiB)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-line-bytes", in.max_line_bytes,
                  "CSV: limit on one record's bytes (default 16 MiB)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{0xFFFFFFFFu}));
  cmd->add_flag("--shards", in.shards,
                "INPUT and the files after it are shards of one table, in order (a quoted glob "
                "such as 'part_*.csv' expands in sorted order); under mpirun each rank reads a "
                "contiguous block of them (docs/guide.md \"Running on a cluster\")");
  cmd->add_option("MORE", in.more, "--shards: further shard files or globs");
}

ReadOptions read_options(const InputArgs& in) {
  ReadOptions o;
  if (!in.columns.empty()) o.columns = parse_column_list(in.columns);
  o.header = in.header ? HeaderMode::present : in.no_header ? HeaderMode::absent : HeaderMode::detect;
  o.missing = in.drop_missing ? MissingPolicy::drop : MissingPolicy::error;
  o.array = in.array;
  o.limits.max_bytes = in.max_bytes;
  o.limits.max_line_bytes = in.max_line_bytes;
  return o;
}

Table read_input(const InputArgs& in) { return read_table(in.path, read_options(in)); }

std::unique_ptr<Rng> make_rng(const std::optional<std::uint64_t>& seed) {
  if (dry_run_open()) return std::make_unique<NoDrawRng>();  // a dry run draws nothing
  if (seed) return std::make_unique<SeededRng>(*seed);
  return std::make_unique<SecureRng>();
}

void print_json(const nlohmann::ordered_json& j) {
  // A dry run prints its plan only: a method that charges nothing (a non-private reference)
  // reaches here with an output computed on the stand-in table, which is never printed.
  if (dry_run_open()) dry_run_stop({}, std::nullopt);
  if (!is_root()) return;  // under mpirun only rank 0 prints
  // Under mpirun a rank's stdout is a pseudo-terminal whatever mpirun's own stdout is: one line.
  const bool terminal = isatty(STDOUT_FILENO) && ranks() == nullptr;
  std::cout << (terminal ? j.dump(2) : j.dump()) << std::endl;
}

nlohmann::ordered_json release_output(nlohmann::ordered_json head, const nlohmann::json& fields,
                                      const nlohmann::ordered_json& extra, const InputArgs* input) {
  // A dry run that got here charged nothing: it abstained on its plan (public values), or it is
  // a method that charges nothing (a non-private reference).
  if (dry_run_open()) {
    if (fields.value("status", "") == "abstained")
      dry_run_abstained(fields.at("diagnostics").value("abstained", "(no reason stated)"));
    dry_run_stop({}, std::nullopt);
  }
  auto copy = [&](const char* key) {
    head[key] = nlohmann::ordered_json::parse(fields.at(key).dump());
  };
  for (const char* key : {"status", "privacy", "seeded", "noise"}) copy(key);
  // Under add/remove neighbouring the number of rows is what the release protects (a count is
  // its noisy estimate): it is printed only where n is public, i.e. under replace-one.
  const auto& privacy = fields.at("privacy");
  const bool n_private =
      privacy.is_object() && privacy.value("neighbouring", "") == "add-remove";
  if (extra.is_object())
    for (const auto& [key, value] : extra.items())
      if (!(n_private && key == "n")) head[key] = value;
  copy("diagnostics");
  copy("ledger");
  // Under replace-one the guarantee assumes the row count public; rows dropped for a missing
  // value make it depend on the data (a replaced row may be dropped or not), so no proof covers
  // the release and the count is not printed (issue 28). Under add/remove dropping a row is a
  // stable per-row transformation and nothing changes.
  if (input && input->drop_missing && !n_private) {
    head["privacy"]["certified"] = false;
    head.erase("n");
    head["diagnostics"]["drop_missing"] =
        "rows with a missing value were dropped (--drop-missing): under replace-one neighbouring "
        "the number of rows kept depends on the data, so no proof covers this release "
        "(certified: false) and n is not printed; impute the missing values instead";
  }
  return declared_output(std::move(head));
}

nlohmann::ordered_json declared_output(nlohmann::ordered_json out) {
  return declared_output(out, output_scope(nlohmann::json::parse(out.dump())));
}

nlohmann::ordered_json declared_output(nlohmann::ordered_json out, const std::string& scope) {
  for (const std::string& path : keep_declared(out, scope))
    if (is_root())
      std::cerr << "dpstats: internal: the output field '" << path << "' of '" << scope
                << "' is not declared (dpstats/output_fields.hpp) and was left out\n";
  return out;
}

std::vector<double> parse_numbers(const std::string& text, const char* option) {
  std::vector<double> out;
  std::size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    const std::string s = text.substr(start, comma == std::string::npos ? comma : comma - start);
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(used == s.size() && !s.empty() && std::isfinite(x),
            fmt::format("{} must be comma-separated finite numbers, got '{}'", option, text));
    out.push_back(x);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

}  // namespace dpstats::cli
