// Column selection, the missing-value policy on dense arrays and the shared message pieces of
// the input layer (reader.hpp). Messages name the user's parameters and positions, never data.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "input_internal.hpp"

namespace dpstats::input_detail {

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

// What a row's selected cells say: keep it, drop it (NaN under drop), or an error at `column`.
struct RowCheck {
  enum Kind { keep, drop, infinite, missing } kind = keep;
  std::size_t column = 0;  // 0-based, for the errors
};

RowCheck check_row(const double* row, const std::vector<std::size_t>& selected,
                   MissingPolicy missing) {
  for (std::size_t j : selected) {
    if (std::isinf(row[j])) return {RowCheck::infinite, j};
    if (std::isnan(row[j])) {
      if (missing == MissingPolicy::drop) return {RowCheck::drop, j};
      return {RowCheck::missing, j};
    }
  }
  return {};
}

[[noreturn]] void throw_cell(const RowCheck& c, std::int64_t row, const std::string& name) {
  if (c.kind == RowCheck::infinite)
    throw InvalidArgument(fmt::format("input file '{}', row {}, column {}: infinite value, "
                                      "expected a finite number",
                                      name, row + 1, c.column + 1));
  throw InvalidArgument(fmt::format(
      "input file '{}', row {}, column {}: missing value (NaN); drop such rows with "
      "--drop-missing (Python: drop_missing=True)",
      name, row + 1, c.column + 1));
}

// Rows [begin, end): the number of rows to drop; the first error (in row order) goes to `first`.
struct PartScan {
  std::int64_t dropped = 0;
  std::int64_t error_row = -1;
  RowCheck error;
};

PartScan scan_rows(const double* X, std::int64_t d, std::int64_t begin, std::int64_t end,
                   const std::vector<std::size_t>& selected, bool all, MissingPolicy missing) {
  constexpr std::int64_t kBlock = 256;  // rows checked at once before looking row by row
  PartScan out;
  for (std::int64_t b = begin; b < end; b += kBlock) {
    const std::int64_t e = std::min(end, b + kBlock);
    if (all && all_finite(X + b * d, (e - b) * d)) continue;
    for (std::int64_t i = b; i < e; ++i) {
      const RowCheck c = check_row(X + i * d, selected, missing);
      if (c.kind == RowCheck::drop) ++out.dropped;
      if (c.kind == RowCheck::infinite || c.kind == RowCheck::missing) {
        out.error_row = i;
        out.error = c;
        return out;
      }
    }
  }
  return out;
}

// The selected columns of every row, copied.
RowMatrix select_columns(const DataMatrix& X, const std::vector<std::size_t>& selected) {
  RowMatrix out(X.rows(), static_cast<Eigen::Index>(selected.size()));
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const double* row = X.data() + i * X.cols();
    for (Eigen::Index c = 0; c < out.cols(); ++c)
      out(i, c) = row[selected[static_cast<std::size_t>(c)]];
  }
  return out;
}

}  // namespace

// Marks values the scan below found finite (DataMatrix::checked_finite): a release reads them
// as checked rows and does not scan them again.
struct FiniteScan {
  static DataMatrix mark(DataMatrix X) {
    X.finite_ = X.rows() > 0 && X.cols() > 0;
    return X;
  }
};

DataMatrix finish_dense(DataMatrix X, const std::vector<std::size_t>& selected,
                        const ReadOptions& options, const std::string& name) {
  const std::int64_t n = X.rows(), d = X.cols();
  const bool all = identity(selected, static_cast<std::size_t>(d));
  if (options.release_checks_finite && options.missing == MissingPolicy::error) {
    if (all) return X;  // no scan: the release checks its rows (ReadOptions)
    return select_columns(X, selected);
  }
  const int threads = std::max(options.threads, 1);
  std::vector<PartScan> parts(static_cast<std::size_t>(threads));
  parallel_ranges(n, threads, 1 << 14, [&](int p, std::int64_t b, std::int64_t e) {
    parts[static_cast<std::size_t>(p)] = scan_rows(X.data(), d, b, e, selected, all, options.missing);
  });
  std::int64_t dropped = 0;
  for (const PartScan& s : parts) {
    if (s.error_row >= 0) throw_cell(s.error, s.error_row, name);  // the first part's first error
    dropped += s.dropped;
  }
  require(dropped < n, fmt::format("input file '{}' has no data rows (every row had a missing "
                                   "value)",
                                   name));
  // Every selected cell of every kept row is finite now (an infinite one, or a NaN not dropped,
  // threw above).
  if (all && dropped == 0) return FiniteScan::mark(std::move(X));  // the same storage (zero-copy)
  if (dropped == 0) return FiniteScan::mark(select_columns(X, selected));
  const auto k = static_cast<Eigen::Index>(selected.size());
  RowMatrix out(n - dropped, k);
  Eigen::Index kept = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double* row = X.data() + i * d;
    if (check_row(row, selected, options.missing).kind == RowCheck::drop) continue;
    for (Eigen::Index c = 0; c < k; ++c) out(kept, c) = row[selected[static_cast<std::size_t>(c)]];
    ++kept;
  }
  return FiniteScan::mark(std::move(out));
}

}  // namespace dpstats::input_detail
