// Column selection, the missing-value policy on dense arrays and the shared message pieces of
// the input layer (reader.hpp). Messages name the user's parameters and positions, never data.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "input_internal.hpp"

namespace dpstats::input {

std::string where(const std::string& name, std::size_t line, std::size_t column) {
  return fmt::format("input file '{}', line {}, column {}", name, line, column);
}

std::string quote_param(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string out(text.substr(0, kMax));
  std::replace_if(out.begin(), out.end(), [](char c) { return c >= 0 && c < 0x20; }, '?');
  return text.size() > kMax ? out + "..." : out;
}

void too_large(const std::string& name, std::uint64_t limit) {
  throw InvalidArgument(fmt::format(
      "input file '{}' is larger than the limit of {} bytes (raise it with --max-input-bytes; "
      "Python: max_bytes=)",
      name, limit));
}

namespace {

std::size_t resolve_one(const ColumnSpec& spec, const std::vector<std::string>* header,
                        std::size_t d, const std::string& name) {
  if (header != nullptr) {
    const auto hits = std::count(header->begin(), header->end(), spec.name);
    require(hits <= 1, fmt::format("--columns: the name '{}' appears {} times in the header of "
                                   "input file '{}'",
                                   quote_param(spec.name), hits, name));
    if (hits == 1)
      return static_cast<std::size_t>(
          std::find(header->begin(), header->end(), spec.name) - header->begin());
  }
  if (spec.index == 0) {
    throw InvalidArgument(
        header != nullptr
            ? fmt::format("--columns: no column named '{}' in the header of input file '{}'",
                          quote_param(spec.name), name)
            : fmt::format("--columns: '{}' is a name but input file '{}' has no header; select "
                          "by 1-based index or pass --header",
                          quote_param(spec.name), name));
  }
  require(spec.index <= d, fmt::format("--columns: column {} is out of range, input file '{}' "
                                       "has {} column{}",
                                       spec.index, name, d, d == 1 ? "" : "s"));
  return spec.index - 1;
}

}  // namespace

std::vector<std::size_t> resolve_columns(const ReadOptions& options,
                                         const std::vector<std::string>* header, std::size_t d,
                                         const std::string& name) {
  std::vector<std::size_t> out;
  if (options.columns.empty()) {
    for (std::size_t j = 0; j < d; ++j) out.push_back(j);
    return out;
  }
  for (const ColumnSpec& spec : options.columns) {
    const std::size_t j = resolve_one(spec, header, d, name);
    require(std::find(out.begin(), out.end(), j) == out.end(),
            fmt::format("--columns: column {} is selected twice", j + 1));
    out.push_back(j);
  }
  return out;
}

namespace {

bool identity(const std::vector<std::size_t>& selected, std::size_t d) {
  if (selected.size() != d) return false;
  for (std::size_t j = 0; j < d; ++j)
    if (selected[j] != j) return false;
  return true;
}

// Checks row i's selected cells: true to keep it, false to drop it (NaN under drop).
bool keep_row(const double* row, std::size_t i, const std::vector<std::size_t>& selected,
              const ReadOptions& options, const std::string& name) {
  for (std::size_t j : selected) {
    if (std::isinf(row[j]))
      throw InvalidArgument(fmt::format("input file '{}', row {}, column {}: infinite value, "
                                        "expected a finite number",
                                        name, i + 1, j + 1));
    if (std::isnan(row[j])) {
      if (options.missing == MissingPolicy::drop) return false;
      throw InvalidArgument(fmt::format(
          "input file '{}', row {}, column {}: missing value (NaN); drop such rows with "
          "--drop-missing (Python: drop_missing=True)",
          name, i + 1, j + 1));
    }
  }
  return true;
}

}  // namespace

void finish_dense(Table& table, const std::vector<std::size_t>& selected,
                  const ReadOptions& options, const std::string& name) {
  RowMatrix& X = table.values;
  const auto d = static_cast<std::size_t>(X.cols());
  const bool all = identity(selected, d);
  Eigen::Index kept = 0;
  std::vector<double> tmp(selected.size());
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    if (!keep_row(X.row(i).data(), static_cast<std::size_t>(i), selected, options, name)) continue;
    // Compacts in place: row i's selected cells go through `tmp` to the cells of the k-column
    // row `kept` <= i, which end at or before the end of row i (already read).
    if (!all) {
      for (std::size_t k = 0; k < selected.size(); ++k)
        tmp[k] = X(i, static_cast<Eigen::Index>(selected[k]));
      std::copy(tmp.begin(), tmp.end(), X.data() + kept * static_cast<Eigen::Index>(tmp.size()));
    } else if (kept != i) {
      X.row(kept) = X.row(i);
    }
    ++kept;
  }
  require(kept > 0, fmt::format("input file '{}' has no data rows (every row had a missing value)",
                                name));
  if (all && kept == X.rows()) return;
  RowMatrix out = Eigen::Map<const RowMatrix>(X.data(), kept,
                                              static_cast<Eigen::Index>(selected.size()));
  X = std::move(out);
}

}  // namespace dpstats::input
