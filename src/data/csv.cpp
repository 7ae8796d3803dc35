// Strict numeric CSV reader (design.md §4: INPUT is numeric CSV with an auto-detected header).
// The whole stream is read into one buffer and parsed with std::from_chars; every problem throws
// InvalidArgument naming the input, the 1-based line and column. A cell that parsed as a number
// (NaN, infinity, overflow) is never quoted back, so data values cannot leak through errors.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <istream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"

namespace dpstats {
namespace {

// Longest prefix of a non-numeric cell quoted in an error message.
constexpr std::size_t kQuotedCellChars = 20;
// Cap on the up-front reservation (doubles), so a long first line cannot request huge memory.
constexpr std::size_t kMaxReserve = std::size_t{1} << 27;

std::string read_all(std::istream& in, const std::string& name) {
  std::string buffer;
  std::streambuf* sb = in.rdbuf();
  require(sb != nullptr, fmt::format("cannot read input file '{}'", name));
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::size_t used = 0;
  for (;;) {
    buffer.resize(used + kChunk);
    const std::streamsize got = sb->sgetn(buffer.data() + used, static_cast<std::streamsize>(kChunk));
    if (got <= 0) break;
    used += static_cast<std::size_t>(got);
  }
  buffer.resize(used);
  return buffer;
}

std::string_view trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

enum class CellKind { number, not_finite, overflow, not_a_number, empty };

// Parses one trimmed cell. Accepts an optional leading '+' (from_chars does not).
CellKind parse_cell(std::string_view cell, double& value) {
  if (cell.empty()) return CellKind::empty;
  const char* first = cell.data();
  const char* last = cell.data() + cell.size();
  if (*first == '+' && last - first > 1 && first[1] != '+' && first[1] != '-') ++first;
  const auto [ptr, ec] = std::from_chars(first, last, value, std::chars_format::general);
  if (ptr != last) return CellKind::not_a_number;
  if (ec == std::errc::invalid_argument) return CellKind::not_a_number;
  if (ec == std::errc::result_out_of_range) {
    // from_chars reports both overflow and underflow this way; strtod tells them apart
    // (underflow gives a finite value, typically a subnormal or zero).
    const std::string copy(first, last);
    const double v = std::strtod(copy.c_str(), nullptr);
    if (!std::isfinite(v)) return CellKind::overflow;
    value = v;
    return CellKind::number;
  }
  if (!std::isfinite(value)) return CellKind::not_finite;
  return CellKind::number;
}

// Splits a line into trimmed cells (reusing `cells`' storage).
void split_line(std::string_view line, std::vector<std::string_view>& cells) {
  cells.clear();
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      cells.push_back(trim(line.substr(start)));
      return;
    }
    cells.push_back(trim(line.substr(start, comma - start)));
    start = comma + 1;
  }
}

std::string where(const std::string& name, std::size_t line, std::size_t column) {
  return fmt::format("input file '{}', line {}, column {}", name, line, column);
}

bool looks_like_header(const std::vector<std::string_view>& cells) {
  double ignored = 0;
  return std::any_of(cells.begin(), cells.end(), [&](std::string_view c) {
    return parse_cell(c, ignored) == CellKind::not_a_number;
  });
}

std::string unquote(std::string_view cell) {
  if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"')
    cell = cell.substr(1, cell.size() - 2);
  return std::string(cell);
}

}  // namespace

Table read_csv(std::istream& in, const std::string& name) {
  const std::string buffer = read_all(in, name);
  std::string_view text(buffer);
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 BOM
  // A file of nothing but blank space (e.g. a lone newline) has no data rows.
  require(text.find_first_not_of(" \t\r\n") != std::string_view::npos,
          fmt::format("input file '{}' is empty (no data rows)", name));

  Table table;
  std::vector<double> values;
  std::vector<std::string_view> cells;
  std::size_t columns = 0;      // 0 until the first row (header or data) fixes it
  std::size_t columns_line = 0;  // the line that fixed it
  std::size_t rows = 0;
  std::size_t line_number = 0;
  std::size_t pos = 0;

  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    split_line(line, cells);

    if (line_number == 1 && looks_like_header(cells)) {
      for (std::size_t j = 0; j < cells.size(); ++j) {
        require(!cells[j].empty(),
                fmt::format("{}: empty header cell (a header was detected on line 1, so every "
                            "header cell must name its column)",
                            where(name, 1, j + 1)));
        table.header.push_back(unquote(cells[j]));
      }
      columns = cells.size();
      columns_line = 1;
      continue;
    }

    if (columns == 0) {
      columns = cells.size();
      columns_line = line_number;
      // Reserve from the first row's length; growth handles the rest.
      const std::size_t rows_guess = text.size() / (line.size() + 1) + 1;
      values.reserve(rows_guess + rows_guess / 8 > kMaxReserve / columns
                         ? kMaxReserve
                         : (rows_guess + rows_guess / 8) * columns);
    }
    require(cells.size() == columns,
            fmt::format("input file '{}', line {}: ragged row with {} column{}, expected {} (as on "
                        "line {})",
                        name, line_number, cells.size(), cells.size() == 1 ? "" : "s", columns,
                        columns_line));
    for (std::size_t j = 0; j < cells.size(); ++j) {
      double v = 0;
      switch (parse_cell(cells[j], v)) {
        case CellKind::number:
          values.push_back(v);
          break;
        case CellKind::empty:
          throw InvalidArgument(
              fmt::format("{}: empty cell, expected a finite number", where(name, line_number, j + 1)));
        case CellKind::not_finite:
          throw InvalidArgument(fmt::format("{}: NaN or infinite value, expected a finite number",
                                            where(name, line_number, j + 1)));
        case CellKind::overflow:
          throw InvalidArgument(
              fmt::format("{}: number out of the range of a double, expected a finite number",
                          where(name, line_number, j + 1)));
        case CellKind::not_a_number: {
          const std::string_view cell = cells[j];
          const bool cut = cell.size() > kQuotedCellChars;
          throw InvalidArgument(fmt::format("{}: non-numeric cell '{}{}', expected a finite number",
                                            where(name, line_number, j + 1),
                                            cell.substr(0, kQuotedCellChars), cut ? "..." : ""));
        }
      }
    }
    ++rows;
    // The loop stops when the text ends right after a '\n': the only line that may be skipped
    // is an empty one at the very end of the file.
  }

  require(rows > 0, fmt::format("input file '{}' is empty (no data rows)", name));
  table.values = Eigen::Map<const RowMatrix>(values.data(), static_cast<Eigen::Index>(rows),
                                             static_cast<Eigen::Index>(columns));
  return table;
}

}  // namespace dpstats
