#include "cli.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"
#include "dpstats/output_fields.hpp"
#include "dry_run_cli.hpp"
#include "options_cli.hpp"
#include "ranks.hpp"

#include <unistd.h>

#include <iostream>

namespace dpstats::cli {

// The input options from their declarations (command "input", src/options.cpp).
void add_input_options(CLI::App* cmd, InputArgs& in, bool required) {
  auto* input = add_declared(cmd, "input", "input", in.path);
  if (required) input->required();
  add_declared(cmd, "input", "columns", in.columns);
  auto* h = add_declared_flag(cmd, "input", "header", in.header);
  add_declared_flag(cmd, "input", "no_header", in.no_header)->excludes(h);
  add_declared_flag(cmd, "input", "drop_missing", in.drop_missing);
  add_declared(cmd, "input", "array", in.array);
  // CLI11 alone would wrap "-1" into an unsigned count: the text is checked first.
  add_declared(cmd, "input", "max_bytes", in.max_bytes)->check(CLI::PositiveNumber);
  add_declared(cmd, "input", "max_line_bytes", in.max_line_bytes)->check(CLI::PositiveNumber);
  add_declared_flag(cmd, "input", "shards", in.shards);
  add_declared(cmd, "input", "more", in.more);
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
