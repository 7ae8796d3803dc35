// Shared pieces of the command-line tool: it stays thin — parse, call the library, print JSON.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/data/non_finite_cell.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::cli {

// Registers the input options every data command shares (INPUT, --columns, --header/--no-header,
// --drop-missing, --array, --max-input-bytes, --max-line-bytes); `read_input` then reads INPUT
// through the one input layer (dpstats/data/reader.hpp, docs/guide.md "Reading tables").
struct InputArgs {
  std::string path;
  std::string columns;
  bool header = false, no_header = false, drop_missing = false;
  std::string array;
  std::uint64_t max_bytes = ReadLimits{}.max_bytes;
  std::uint64_t max_line_bytes = ReadLimits{}.max_line_bytes;
  bool shards = false;             // --shards: INPUT and `more` are shard files (globs expanded)
  std::vector<std::string> more;   // further shard files after INPUT
  // Set by a command whose release checks every cell finite before it charges anything (bounds:
  // in its first counting pass): in one process the input layer then skips its own scan of a
  // .npy/.npz file (ReadOptions::release_checks_finite), and run_on_input reports a bad cell.
  bool release_checks_finite = false;
};
void add_input_options(CLI::App* cmd, InputArgs& input, bool required = true);
ReadOptions read_options(const InputArgs& input);
Table read_input(const InputArgs& input);

// This rank's rows of the input (docs/guide.md "Running on a cluster"). One process: INPUT, or
// with --shards the files concatenated in order. Several ranks (`comm`): one INPUT is read whole
// by every rank, which keeps rows [n·r/P, n·(r+1)/P); with --shards the list of files is cut into
// P contiguous blocks, so the rows in rank order are the files in order for any P. A read error
// on any rank stops every rank with it; the ranks must agree on the columns (count and names).
struct InputShard {
  Table table;              // this rank's rows
  std::int64_t total = 0;   // rows over all ranks
  bool unscanned = false;   // the input layer left the finiteness check to the release
};
InputShard read_input_shard(const InputArgs& input, Communicator* comm);

// Runs `release` on `shard`'s rows. Where the input layer left the finiteness check to the release
// (InputShard::unscanned), a NaN or infinite cell it finds (NonFiniteCell, thrown before anything
// is charged) is reported as the input layer reports it -- file, row, column, never a value: the
// input is read again with the scan, which throws that message.
void rescan_input(const InputArgs& input);
template <class Release>
decltype(auto) run_on_input(const InputArgs& input, const InputShard& shard, Release&& release) {
  try {
    return release();
  } catch (const NonFiniteCell&) {
    if (shard.unscanned) rescan_input(input);
    throw;
  }
}
// With --shards: this rank's files of INPUT and the files after it (globs expanded in byte
// order), rank r holding files [ceil(F·r/P), ceil(F·(r+1)/P)).
std::vector<std::string> rank_shard_files(const InputArgs& input, Communicator& comm);

// "1,2.5,3" -> {1, 2.5, 3}; InvalidArgument naming `option` for anything but finite numbers.
std::vector<double> parse_numbers(const std::string& text, const char* option);

// SeededRng when --seed was given (the release then says "seeded": true), SecureRng otherwise.
std::unique_ptr<Rng> make_rng(const std::optional<std::uint64_t>& seed);

// Prints one JSON object on stdout: indented on a terminal, one line otherwise.
void print_json(const nlohmann::ordered_json& j);

// `head` (command, method, estimate, ...) followed by a release's fields in the order of
// design.md §4: status, privacy, seeded, noise, then `extra` (n, d, ...), diagnostics, ledger.
// `n` is left out of a release under add/remove neighbouring (the row count is not public there).
// `input`: the input options when the release read a table (--drop-missing under replace-one
// makes the release certified: false and leaves n out). The result is declared_output's.
nlohmann::ordered_json release_output(nlohmann::ordered_json head, const nlohmann::json& fields,
                                      const nlohmann::ordered_json& extra = {},
                                      const InputArgs* input = nullptr);
// `out` with only the fields its scope declares (dpstats/output_fields.hpp); an undeclared field
// is left out and named on stderr (a bug: tests/cli/neighbours.py fails on it).
nlohmann::ordered_json declared_output(nlohmann::ordered_json out);
// The same for an output that names no command (a moments stream's step lines: "moments/step").
nlohmann::ordered_json declared_output(nlohmann::ordered_json out, const std::string& scope);

// Each command registers itself on the app; the callback runs after a successful parse.
void add_mean_command(CLI::App& app);
void add_noise_command(CLI::App& app);
void add_account_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_repro_command(CLI::App& app);
void add_moments_command(CLI::App& app);
void add_median_command(CLI::App& app);
void add_fit_command(CLI::App& app);
void add_stat_command(CLI::App& app);
void add_budget_command(CLI::App& app);
void add_bounds_command(CLI::App& app);
void add_fields_command(CLI::App& app);

}  // namespace dpstats::cli
