// The tool's --dry-run (dpstats/dry_run.hpp; docs/guide.md "Before you spend epsilon"). A
// releasing command given --dry-run opens the library's DryRun as soon as it is parsed: its input
// is then read as a header alone (a table of --n-hint rows of zeros with the input's columns
// stands in for it), its generator is a NoDrawRng, and its release stops at the charge; main
// prints the plan instead of a release. A --budget file is read (the plan must fit) and never
// written.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli.hpp"
#include "dpstats/data/reader.hpp"

namespace dpstats::cli {

// Opens the dry run of `cmd` (the command being run). A std::logic_error when one is open.
void begin_dry_run(const CLI::App& cmd, std::optional<std::int64_t> n_hint);
// Whether a dry run is open and its release has not stopped yet.
bool dry_run_open();

// The stand-in table: the input's selected columns (names when it has a header) from its first
// line alone, and the declared rows (--n-hint, else kPlannedRows) of zeros.
Table dry_run_table(const InputArgs& input);
// The rows the stand-in holds.
std::int64_t dry_run_rows();
inline constexpr std::int64_t kPlannedRows = 10000;

// The plan of the stopped release (declared fields, scope "dry-run").
nlohmann::ordered_json dry_run_output();

}  // namespace dpstats::cli
