// Streaming RFC 4180 CSV reader (docs/guide.md "Reading tables"): quoted fields with embedded
// commas, quotes ("") and newlines, CRLF or LF, trailing blank lines. The input is parsed record
// by record with a per-record and a total byte limit, so memory is bounded on any bytes: one
// record buffer plus the parsed values (8 bytes per kept cell, also under the total limit).
// Errors name the input, the line and the column, never a cell's content.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <istream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "input_internal.hpp"

namespace dpstats {
namespace {

// Buffered bytes of a stream with a running total checked against the limit.
class ByteSource {
 public:
  ByteSource(std::istream& in, const std::string& name, std::uint64_t max_bytes)
      : sb_(in.rdbuf()), name_(name), max_(max_bytes), buf_(std::size_t{1} << 16) {
    require(sb_ != nullptr, fmt::format("cannot read input file '{}'", name));
  }
  int get() { return pos_ < end_ || fill() ? static_cast<unsigned char>(buf_[pos_++]) : kEof; }
  int peek() { return pos_ < end_ || fill() ? static_cast<unsigned char>(buf_[pos_]) : kEof; }
  // The buffered bytes not consumed yet; reads the next block only when none is left (where get()
  // would), so the limits are checked at the same points. Empty at the end of the input.
  std::string_view window() {
    if (pos_ == end_) fill();
    return {buf_.data() + pos_, end_ - pos_};
  }
  void advance(std::size_t n) { pos_ += n; }
  static constexpr int kEof = -1;

 private:
  bool fill() {
    const std::streamsize got = sb_->sgetn(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    pos_ = 0;
    end_ = got > 0 ? static_cast<std::size_t>(got) : 0;
    total_ += end_;
    if (total_ > max_) input_detail::too_large(name_, max_);
    return end_ > 0;
  }
  std::streambuf* sb_;
  const std::string& name_;
  std::uint64_t max_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  std::uint64_t total_ = 0;
};

// One record: its fields' text back to back, each field's end offset, the line it starts on.
struct Record {
  std::string text;
  std::vector<std::uint32_t> ends;
  std::size_t line = 0;
  bool blank() const { return ends.size() == 1 && text.empty() && !quoted_first; }
  std::string_view field(std::size_t j) const {
    const std::size_t b = j == 0 ? 0 : ends[j - 1];
    return std::string_view(text).substr(b, ends[j] - b);
  }
  bool quoted_first = false;
};

// The parser kernel: splits the byte stream into records (RFC 4180 with lenient spaces around
// fields). Kept as one state machine on purpose; it is the part the fuzz harness exercises.
class RecordReader {
 public:
  RecordReader(std::istream& in, const std::string& name, const ReadLimits& limits)
      : src_(in, name, limits.max_bytes), name_(name), max_record_(limits.max_line_bytes) {}

  bool next(Record& r) {
    r.text.clear();
    r.ends.clear();
    r.quoted_first = false;
    r.line = line_;
    bytes_ = 0;
    int c = src_.get();
    if (c == ByteSource::kEof) return false;
    count();
    if (line_ == 1 && r.text.empty() && c == 0xEF && skip_bom()) c = take();
    for (;;) {
      while (c == ' ' || c == '\t') c = take();
      if (c == '"') {
        if (r.ends.empty()) r.quoted_first = true;
        c = quoted_field(r);
      } else {
        const std::size_t start = r.text.size();
        c = unquoted_field(c, r.text);
        while (r.text.size() > start && (r.text.back() == ' ' || r.text.back() == '\t'))
          r.text.pop_back();
      }
      r.ends.push_back(static_cast<std::uint32_t>(r.text.size()));
      if (c == ',') {
        c = take();
        continue;
      }
      if (c == '\r' && src_.peek() == '\n') src_.get();
      if (c != ByteSource::kEof) ++line_;
      return true;
    }
  }

 private:
  // The rest of an unquoted field whose first byte `c` was taken: copied span by span from the
  // buffer (the record limit checked per span, before the next block is read, so errors come
  // exactly as byte by byte). Returns the byte that ends it (',', '\n', '\r' or EOF), taken.
  int unquoted_field(int c, std::string& text) {
    if (c == ',' || c == '\n' || c == '\r' || c == ByteSource::kEof) return c;
    text.push_back(static_cast<char>(c));
    for (;;) {
      const std::string_view w = src_.window();
      if (w.empty()) return ByteSource::kEof;
      std::size_t k = 0;
      while (k < w.size() && w[k] != ',' && w[k] != '\n' && w[k] != '\r') ++k;
      bytes_ += k;
      if (bytes_ > max_record_) record_too_long();
      text.append(w.data(), k);
      src_.advance(k);
      if (k < w.size()) return take();
    }
  }
  [[noreturn]] void record_too_long() const {
    throw InvalidArgument(fmt::format(
        "input file '{}', line {}: a record longer than {} bytes (raise the limit with "
        "--max-line-bytes)",
        name_, line_, max_record_));
  }
  int take() {
    const int c = src_.get();
    if (c != ByteSource::kEof) count();
    return c;
  }
  void count() {
    if (++bytes_ > max_record_) record_too_long();
  }
  bool skip_bom() {
    if (src_.peek() != 0xBB) return false;
    src_.get();
    if (src_.peek() != 0xBF) return false;
    src_.get();
    return true;
  }
  int quoted_field(Record& r) {
    const std::size_t start_line = line_;
    for (;;) {
      int c = take();
      if (c == ByteSource::kEof)
        throw InvalidArgument(fmt::format("{}: a quoted field is not closed",
                                          input_detail::where(name_, start_line, r.ends.size() + 1)));
      if (c == '"') {
        c = take();
        if (c != '"') {
          while (c == ' ' || c == '\t') c = take();
          if (c != ',' && c != '\n' && c != '\r' && c != ByteSource::kEof)
            throw InvalidArgument(fmt::format("{}: text after the closing quote of a field",
                                              input_detail::where(name_, line_, r.ends.size() + 1)));
          return c;
        }
      } else if (c == '\n') {
        ++line_;
      }
      r.text.push_back(static_cast<char>(c));
    }
  }

  ByteSource src_;
  const std::string& name_;
  std::uint64_t max_record_;
  std::uint64_t bytes_ = 0;
  std::size_t line_ = 1;
};

enum class CellKind { number, missing, infinite, overflow, text };

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x | 0x20) == (y | 0x20);
         });
}

bool is_missing_token(std::string_view cell) {
  return cell.empty() || cell == "NA" || cell == "N/A" || cell == "null" || cell == "None" ||
         iequals(cell, "nan");
}

// Parses one cell. Accepts an optional leading '+' (from_chars does not).
CellKind parse_cell(std::string_view cell, double& value) {
  while (!cell.empty() && (cell.front() == ' ' || cell.front() == '\t')) cell.remove_prefix(1);
  while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\t')) cell.remove_suffix(1);
  if (is_missing_token(cell)) return CellKind::missing;
  const char* first = cell.data();
  const char* last = cell.data() + cell.size();
  if (*first == '+' && last - first > 1 && first[1] != '+' && first[1] != '-') ++first;
  const auto [ptr, ec] = std::from_chars(first, last, value, std::chars_format::general);
  if (ptr != last || ec == std::errc::invalid_argument) return CellKind::text;
  if (ec == std::errc::result_out_of_range) {
    // from_chars reports overflow and underflow alike; strtod tells them apart.
    const std::string copy(first, last);
    const double v = std::strtod(copy.c_str(), nullptr);
    if (!std::isfinite(v)) return CellKind::overflow;
    value = v;
    return CellKind::number;
  }
  if (std::isnan(value)) return CellKind::missing;
  if (std::isinf(value)) return CellKind::infinite;
  return CellKind::number;
}

// Values kept so far, in blocks (growth never copies; the final matrix is one copy).
class ValueStore {
 public:
  explicit ValueStore(std::uint64_t max_cells) : max_cells_(max_cells) {}
  void push_row(std::span<const double> row, const std::string& name) {
    if (count_ + row.size() > max_cells_) input_detail::too_large(name, max_cells_ * 8);
    for (double v : row) {
      if (blocks_.empty() || blocks_.back().size() == blocks_.back().capacity()) {
        blocks_.emplace_back();
        blocks_.back().reserve(std::min<std::size_t>(std::size_t{4096} << blocks_.size(),
                                                     std::size_t{1} << 20));
      }
      blocks_.back().push_back(v);
    }
    count_ += row.size();
  }
  RowMatrix take(std::size_t rows, std::size_t cols) {
    RowMatrix m(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
    double* out = m.data();
    for (auto& b : blocks_) {
      out = std::copy(b.begin(), b.end(), out);
      std::vector<double>().swap(b);
    }
    return m;
  }

 private:
  std::uint64_t max_cells_;
  std::uint64_t count_ = 0;
  std::vector<std::vector<double>> blocks_;
};

// Numeric rows waiting to be parsed: their fields back to back. flush() parses the cells on
// `threads` threads (each row's outcome depends on its own cells only), then commits the rows in
// order, so errors, dropped rows and the limits come exactly as row by row.
class RowBatch {
 public:
  static constexpr std::size_t kMaxRows = 1 << 15;
  static constexpr std::size_t kMaxText = std::size_t{8} << 20;

  void push(const Record& r) {
    rows_.push_back({text_.size(), ends_.size(), r.ends.size(), r.line});
    text_ += r.text;
    ends_.insert(ends_.end(), r.ends.begin(), r.ends.end());
  }
  bool full() const { return rows_.size() >= kMaxRows || text_.size() >= kMaxText; }
  bool empty() const { return rows_.empty(); }

  // What parsing row i's selected cells found: every one a number, or the first that is not.
  struct Outcome {
    CellKind kind = CellKind::number;
    std::size_t column = 0;  // 0-based, of the first non-number
    bool ragged = false;
  };

  // Parses every row (values into `values`, k per row), then calls commit(i, row) in row order.
  template <class Commit>
  void flush(const std::vector<std::size_t>& selected, std::size_t columns, int threads,
             Commit&& commit) {
    const std::size_t n = rows_.size(), k = selected.size();
    values_.resize(n * k);
    outcomes_.assign(n, Outcome{});
    parallel_ranges(static_cast<std::int64_t>(n), threads, 1024,
                    [&](int, std::int64_t b, std::int64_t e) {
                      for (auto i = static_cast<std::size_t>(b); i < static_cast<std::size_t>(e); ++i)
                        outcomes_[i] = parse_row(i, selected, columns, values_.data() + i * k);
                    });
    for (std::size_t i = 0; i < n; ++i)
      commit(rows_[i].line, rows_[i].cells, outcomes_[i],
             std::span<const double>(values_.data() + i * k, k));
    rows_.clear();
    text_.clear();
    ends_.clear();
  }

 private:
  struct Row {
    std::size_t text_at, ends_at, cells, line;
  };
  std::string_view field(const Row& r, std::size_t j) const {
    const std::size_t b = j == 0 ? 0 : ends_[r.ends_at + j - 1];
    return std::string_view(text_).substr(r.text_at + b, ends_[r.ends_at + j] - b);
  }
  Outcome parse_row(std::size_t i, const std::vector<std::size_t>& selected, std::size_t columns,
                    double* out) const {
    const Row& r = rows_[i];
    if (r.cells != columns) return {CellKind::number, 0, true};
    for (std::size_t c = 0; c < selected.size(); ++c) {
      const CellKind kind = parse_cell(field(r, selected[c]), out[c]);
      if (kind != CellKind::number) return {kind, selected[c], false};
    }
    return {};
  }

  std::vector<Row> rows_;
  std::string text_;
  std::vector<std::uint32_t> ends_;
  std::vector<double> values_;
  std::vector<Outcome> outcomes_;
};

enum class LineKind { numeric, text, mixed };

LineKind classify(const Record& r) {
  std::size_t numeric = 0, text = 0;
  for (std::size_t j = 0; j < r.ends.size(); ++j) {
    double v = 0;
    (parse_cell(r.field(j), v) == CellKind::text ? text : numeric) += 1;
  }
  return text == 0 ? LineKind::numeric : numeric == 0 ? LineKind::text : LineKind::mixed;
}

bool has_number(const Record& r) {
  for (std::size_t j = 0; j < r.ends.size(); ++j) {
    double v = 0;
    if (parse_cell(r.field(j), v) == CellKind::number) return true;
  }
  return false;
}

// The state of one read: header decision, selected columns, rows kept.
class CsvTable {
 public:
  CsvTable(std::istream& in, const std::string& name, const ReadOptions& o)
      : reader_(in, name, o.limits), name_(name), o_(o), store_(o.limits.max_bytes / 8) {}

  Table read() {
    Record first, second;
    require(reader_.next(first), fmt::format("input file '{}' is empty (no data rows)", name_));
    const bool have_second = next_nonblank(second);
    std::vector<std::size_t> between;  // blank lines between the first and the second record
    between.swap(pending_blank_lines_);
    const bool header = has_header(first, have_second ? &second : nullptr);
    std::vector<std::string> names;
    if (header) names = header_names(first);
    names_ = names;
    selected_ = input_detail::resolve_columns(o_, header ? &names : nullptr, first.ends.size(), name_);
    columns_ = first.ends.size();
    columns_line_ = first.line;
    Table table;
    for (std::size_t j : selected_) {
      if (!header) break;
      require(!names[j].empty(),
              fmt::format("{}: empty header cell (every selected column needs a name)",
                          input_detail::where(name_, first.line, j + 1)));
      table.header.push_back(names[j]);
    }
    if (!header) add(first);
    pending_blank_lines_.insert(pending_blank_lines_.end(), between.begin(), between.end());
    if (have_second) add(second);
    Record r;
    try {
      while (reader_.next(r)) add(r);
    } catch (const InvalidArgument&) {
      flush();  // a row read before the bad bytes reports its own error first, as row by row
      throw;
    }
    flush();
    require(rows_ > 0, fmt::format("input file '{}' has no data rows{}", name_,
                                   dropped_ > 0 ? " (every row had a missing value)" : ""));
    if (o_.text) {
      table.text = std::move(text_);
      return table;
    }
    table.values = store_.take(rows_, selected_.size());
    return table;
  }

 private:
  // Reads the next record, keeping blank lines pending (they are data only if more follows).
  bool next_nonblank(Record& r) {
    while (reader_.next(r)) {
      if (!r.blank()) return true;
      pending_blank_lines_.push_back(r.line);
    }
    return false;
  }

  bool has_header(const Record& first, const Record* second) const {
    if (o_.header != HeaderMode::detect) return o_.header == HeaderMode::present;
    const LineKind k = classify(first);
    if (k == LineKind::numeric) return false;
    if (k == LineKind::text && second != nullptr && has_number(*second)) return true;
    if (k == LineKind::text && second == nullptr) return true;  // names only, no data rows
    throw InvalidArgument(fmt::format(
        "input file '{}', line {}: cannot tell whether the first line is a header (its cells "
        "are not all names, or the next line is not numeric); pass --header or --no-header "
        "(Python: header=True/False)",
        name_, first.line));
  }

  static std::vector<std::string> header_names(const Record& r) {
    std::vector<std::string> names;
    for (std::size_t j = 0; j < r.ends.size(); ++j) names.emplace_back(r.field(j));
    return names;
  }

  void add(const Record& r) {
    if (r.blank()) {
      pending_blank_lines_.push_back(r.line);
      return;
    }
    Record blank;
    blank.ends.push_back(0);
    for (std::size_t line : pending_blank_lines_) {
      blank.line = line;
      add_row(blank);
    }
    pending_blank_lines_.clear();
    add_row(r);
  }

  void add_row(const Record& r);
  void add_text_row(const Record& r);
  void flush();
  std::string ragged_message(std::size_t line, std::size_t cells) const;
  [[noreturn]] static void throw_cell(CellKind kind, const std::string& at);
  // " ('NAME')" for file column j when the first line was names (a header is not data), else "".
  std::string column_name(std::size_t j) const {
    return j < names_.size() ? fmt::format(" ('{}')", names_[j]) : std::string();
  }

  RecordReader reader_;
  const std::string& name_;
  const ReadOptions& o_;
  ValueStore store_;
  std::vector<std::size_t> selected_;
  std::vector<std::string> names_;  // the header's names (empty without a header)
  std::vector<std::size_t> pending_blank_lines_;
  RowBatch batch_;
  std::vector<std::vector<std::string>> text_;
  std::uint64_t text_bytes_ = 0;
  std::size_t columns_ = 0, columns_line_ = 0, rows_ = 0, dropped_ = 0;
};

void CsvTable::add_row(const Record& r) {
  if (o_.text) {
    const std::size_t cells = r.ends.size();
    require(cells == columns_, ragged_message(r.line, cells));
    return add_text_row(r);
  }
  batch_.push(r);
  if (batch_.full()) flush();
}

std::string CsvTable::ragged_message(std::size_t line, std::size_t cells) const {
  return fmt::format("input file '{}', line {}: ragged row with {} column{}, expected {} (as on "
                     "line {})",
                     name_, line, cells, cells == 1 ? "" : "s", columns_, columns_line_);
}

void CsvTable::flush() {
  batch_.flush(selected_, columns_, std::max(o_.threads, 1),
               [&](std::size_t line, std::size_t cells, const RowBatch::Outcome& out,
                   std::span<const double> values) {
                 require(!out.ragged, ragged_message(line, cells));
                 if (out.kind == CellKind::number) {
                   store_.push_row(values, name_);
                   ++rows_;
                 } else if (out.kind == CellKind::missing && o_.missing == MissingPolicy::drop) {
                   ++dropped_;
                 } else {
                   throw_cell(out.kind, input_detail::where(name_, line, out.column + 1) +
                                        column_name(out.column));
                 }
               });
}

void CsvTable::throw_cell(CellKind kind, const std::string& at) {
  switch (kind) {
    case CellKind::missing:
      throw InvalidArgument(fmt::format(
          "{}: missing value (empty, NA or NaN); drop such rows with --drop-missing (Python: "
          "drop_missing=True)",
          at));
    case CellKind::infinite:
      throw InvalidArgument(fmt::format("{}: infinite value, expected a finite number", at));
    case CellKind::overflow:
      throw InvalidArgument(
          fmt::format("{}: number out of the range of a double, expected a finite number", at));
    default:
      throw InvalidArgument(fmt::format(
          "{}: non-numeric cell in a selected column (content not shown), expected a finite "
          "number; pick the numeric columns with --columns (Python: columns=)",
          at));
  }
}

// ReadOptions::text: the selected cells kept as written (a missing cell follows the policy); the
// kept bytes count against the total limit as the parsed values do.
void CsvTable::add_text_row(const Record& r) {
  text_.resize(selected_.size());
  for (std::size_t k = 0; k < selected_.size(); ++k) {
    const std::size_t j = selected_[k];
    std::string_view cell = r.field(j);
    while (!cell.empty() && (cell.front() == ' ' || cell.front() == '\t')) cell.remove_prefix(1);
    while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\t')) cell.remove_suffix(1);
    if (is_missing_token(cell)) {
      if (o_.missing == MissingPolicy::drop) {
        ++dropped_;
        for (std::size_t kept = 0; kept < k; ++kept) text_[kept].pop_back();
        return;
      }
      throw InvalidArgument(fmt::format(
          "{}: missing value (empty, NA or NaN); drop such rows with --drop-missing (Python: "
          "drop_missing=True)",
          input_detail::where(name_, r.line, j + 1)));
    }
    text_bytes_ += cell.size() + sizeof(std::string);
    if (text_bytes_ > o_.limits.max_bytes) input_detail::too_large(name_, o_.limits.max_bytes);
    text_[k].emplace_back(cell);
  }
  ++rows_;
}

}  // namespace

Table read_csv(std::istream& in, const std::string& name, const ReadOptions& options) {
  require(options.limits.max_line_bytes <= 0xFFFFFFFFu,
          "--max-line-bytes must be below 4 GiB");
  CsvTable t(in, name, options);
  return t.read();
}

}  // namespace dpstats
