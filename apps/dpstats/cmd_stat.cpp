// dpstats stat STATISTIC --epsilon E --delta D [--bounds LO,HI]... [--quantiles Q,...]
//              [--grid-size N] [--categories A,B,...] [--category NAME]... [--column J]
//              [--scale-share S]
//              [--budget FILE] [--seed N] [--threads T] [input options] INPUT
// STATISTIC is one of the stats registry (count, sum, mean, variance, std, quantiles, histogram);
// the options a statistic does not read are refused by the registry, as in Python.
#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "budget_file.hpp"
#include "cli.hpp"
#include "dry_run_cli.hpp"
#include "options_cli.hpp"
#include "ranks.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/stats/stats.hpp"

namespace dpstats::cli {
namespace {

struct StatArgs : ReleaseArgs {  // the shared options, declared once (options_cli.hpp)
  std::string statistic;
  InputArgs input;
  stats::StatRequest request;         // the statistics' own options (stats/stats.hpp)
  std::vector<std::string> category;  // --category NAME, repeatable, taken verbatim
  std::optional<int> column;
};

stats::StatOptions options_of(stats::Statistic s, const StatArgs& a) {
  stats::StatRequest request = a.request;
  request.scale_share = a.scale_share;
  if (!a.category.empty()) {
    if (!request.categories) request.categories.emplace();
    request.categories->insert(request.categories->end(), a.category.begin(), a.category.end());
  }
  stats::StatOptions o;
  o.privacy = a.target();
  if (a.threads) o.run.threads = *a.threads;
  stats::apply_request(s, request, o);
  return o;
}

// A column whose every cell is a finite number holds codes: each is named by its value ("3" for
// 3, 3.0 or 3.000e+00, as a .npy column's codes are), so the same code always counts together.
void name_codes_by_value(std::vector<std::string>& cells) {
  std::vector<double> values(cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string& c = cells[i];
    const auto [end, ec] = std::from_chars(c.data(), c.data() + c.size(), values[i]);
    if (ec != std::errc() || end != c.data() + c.size() || !std::isfinite(values[i])) return;
  }
  for (std::size_t i = 0; i < cells.size(); ++i) cells[i] = fmt::format("{}", values[i]);
}

// The histogram's column as category names of one table: read as text (a text column such as a
// department name, or numeric codes, "3" for 3.0), picked by --columns NAME or --column J.
// Counting rows (`count` without --columns) keeps the first column's cells only, as written:
// a row's cells are never parsed or named, so the read is one pass of text.
std::vector<std::string> category_cells(const StatArgs& a, const std::string& path, bool rows_only) {
  ReadOptions ro = read_options(a.input);
  ro.text = true;
  if (rows_only) {
    ro.columns = {ColumnSpec{"1", 1}};
    return std::move(read_table(path, ro).text.at(0));
  }
  Table t = read_table(path, ro);
  const int d = static_cast<int>(t.text.size());
  const int column = a.column.value_or(0);
  require(column >= 0 && column < d, fmt::format("--column must be in [0, {}), got {}", d, column));
  require(a.column || d == 1 || a.input.columns.empty(),
          "histogram takes one column: give --columns with one name or index");
  std::vector<std::string> cells = std::move(t.text[static_cast<std::size_t>(column)]);
  name_codes_by_value(cells);
  return cells;
}

// This rank's cells (one process: all of them): one INPUT is read whole and rank r keeps its
// block of rows; --shards: this rank's files, one after the other (one process: every file).
std::vector<std::string> category_column(const StatArgs& a, Communicator& comm, bool rows_only = false) {
  if (dry_run_open()) {  // the header alone (the columns must exist), and the declared rows
    dry_run_table(a.input);
    return std::vector<std::string>(static_cast<std::size_t>(dry_run_rows()), "0");
  }
  require(comm.size() == 1 || a.input.path != "-",
          "INPUT '-' (stdin) cannot be read on several ranks (launched as {}); give a file or "
          "--shards FILES", comm.size());
  std::vector<std::string> cells;
  all_or_none(comm, [&] {
    if (!a.input.shards) {
      cells = category_cells(a, a.input.path, rows_only);
      const auto n = cells.size(), P = static_cast<std::size_t>(comm.size());
      const auto r = static_cast<std::size_t>(comm.rank());
      cells = std::vector<std::string>(cells.begin() + static_cast<long>(n * r / P),
                                       cells.begin() + static_cast<long>(n * (r + 1) / P));
      return;
    }
    for (const auto& file : rank_shard_files(a.input, comm)) {
      auto part = category_cells(a, file, rows_only);
      cells.insert(cells.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    }
  });
  return cells;
}

void run_stat(const StatArgs& a) {
  const auto s = parse_enum<stats::Statistic>(a.statistic);
  const stats::StatOptions o = options_of(s, a);
  require(!a.column || s == stats::Statistic::histogram, "--column applies to histogram only");
  auto rng = make_rng(a.seed);
  nlohmann::ordered_json head = {{"command", "stat"}, {"statistic", a.statistic}};
  nlohmann::json fields;
  std::int64_t n = 0, d = 1;
  if (s == stats::Statistic::histogram) {
    stats::StatOptions ranked = o;
    ranked.run.comm = ranks();  // null: one process
    const auto values = category_column(a, comm_or_single(ranked.run.comm));
    n = static_cast<std::int64_t>(values.size());  // not printed: add/remove keeps n private
    BudgetFile budget(is_root() ? a.budget : std::nullopt);  // the ledger lives on rank 0
    const auto r = stats::histogram(values, ranked, *rng, budget.get());
    nlohmann::ordered_json est = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < r.estimate.categories.size(); ++k)
      est[r.estimate.categories[k]] = r.estimate.counts[static_cast<Eigen::Index>(k)];
    head["estimate"] = est;
    fields = release_fields_json(r);
    budget.commit();  // before anything is printed
  } else {
    stats::StatOptions ranked = o;
    ranked.run.comm = ranks();  // null: one process
    // count without --columns counts rows: the cells are read as text, so a table with text
    // columns (names, dates, codes) is fine; only the number of rows enters the count.
    const bool rows_only = s == stats::Statistic::count && a.input.columns.empty();
    Table table;
    if (rows_only) {
      const auto cells = category_column(a, comm_or_single(ranked.run.comm), true);
      table.values = DataMatrix(RowMatrix(RowMatrix::Zero(static_cast<Eigen::Index>(cells.size()), 1)));
      n = static_cast<std::int64_t>(cells.size());  // not printed: add/remove keeps n private
    } else {
      InputShard input = read_input_shard(a.input, ranked.run.comm);
      table = std::move(input.table);
      n = input.total;
    }
    d = table.values.cols();
    BudgetFile budget(is_root() ? a.budget : std::nullopt);  // the ledger lives on rank 0
    const auto r = stats::numeric(s, table.values, ranked, *rng, budget.get());
    head["estimate"] = std::vector<double>(r.estimate.data(), r.estimate.data() + r.estimate.size());
    fields = release_fields_json(r);
    budget.commit();  // before anything is printed
  }
  print_json(release_output(std::move(head), fields, {{"n", n}, {"d", d}}, &a.input));
}

}  // namespace

void add_stat_command(CLI::App& app) {
  auto a = std::make_shared<StatArgs>();
  std::string names;
  for (const auto& m : stats::registry()) names += fmt::format("\n  {:10} {}", m.name, m.summary);
  auto* cmd = app.add_subcommand("stat", "Everyday private statistics of a table's columns:" + names);
  cmd->add_option("STATISTIC", a->statistic, "count, sum, mean, variance, std, quantiles, histogram")
      ->required();
  const auto statistics = stats::registry();
  add_release_options(cmd, *a, kEveryRelease | kScaleShare, kEpsilon | kDelta, statistics);
  add_request_options(cmd, "stat", a->request, statistics);
  cmd->add_option("--category", a->category,
                  "histogram: one public category, verbatim (repeat it; for names with commas)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--column", a->column,
                  "histogram: 0-based position among the selected columns of the one holding the "
                  "categories (default 0; or select it with --columns NAME). Read as text");
  add_input_options(cmd, a->input);
  cmd->callback([a] { run_stat(*a); });
}

}  // namespace dpstats::cli
