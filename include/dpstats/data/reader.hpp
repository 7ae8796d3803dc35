// The ONE input layer of the tool and the Python module: numeric tables from CSV (RFC 4180),
// NumPy .npy or .npz, a path or "-" for stdin (docs/guide.md "Reading tables").
//
// Hardening (docs/threat-model.md "Input"):
// - Nothing read from the data leaves without noise: errors name the input, the line/row and the
//   column, never a cell's content; column names come only from a declared header (--header) or
//   from a first line that the detection rule tells apart with certainty.
// - Memory is bounded on any bytes: CSV is parsed as a stream with a per-line and a total limit;
//   a .npy header's shape x itemsize is checked against the bytes that are there (file size, or
//   the stream read so far) before anything is allocated. Every violation is InvalidArgument.
#pragma once
#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "dpstats/data/data_matrix.hpp"
#include "dpstats/parallel.hpp"

namespace dpstats {

struct Table {
  // n x d (the selected columns); 0 x 0 when read as text. A float64 C-order .npy file is used in
  // place (memory-mapped, zero-copy); every other input is parsed or converted into memory.
  DataMatrix values;
  std::vector<std::string> header;   // names of the selected columns; empty without a header
  // ReadOptions::text: the selected columns as text (text[j][i]: column j, row i); `values`
  // is then left empty.
  std::vector<std::vector<std::string>> text;
};

// detect: the first line is a header only if every cell is non-numeric text and the second line
// has a number; it is data if every cell is a number or missing; otherwise the input is refused
// (pass present or absent). present: the first line is names whatever it holds (e.g. 2019,2020).
enum class HeaderMode { detect, present, absent };

// error: a missing cell (empty, NA, N/A, NaN, null, None; NaN in .npy) is an error naming its
// row and column. drop: rows with a missing value in a selected column are dropped (a per-row
// stable transformation; n is the number of rows kept).
enum class MissingPolicy { error, drop };

// A column chosen by name (matched against the header first) or by 1-based index.
struct ColumnSpec {
  std::string name;        // as given by the user
  std::size_t index = 0;   // 1-based; 0 when the spec is a name only
};

struct ReadLimits {
  // Bytes read from the input, and bytes of parsed values kept (8 per cell): 4 GiB.
  std::uint64_t max_bytes = std::uint64_t{4} << 30;
  // Bytes of one CSV record (a line, or several when a quoted field holds newlines): 16 MiB.
  std::uint64_t max_line_bytes = std::uint64_t{16} << 20;
};

struct ReadOptions {
  std::vector<ColumnSpec> columns;   // empty: every column
  HeaderMode header = HeaderMode::detect;
  MissingPolicy missing = MissingPolicy::error;
  ReadLimits limits;
  std::string array;                 // .npz member ("x" or "x.npy"); empty: the only one
  // Keep the selected cells as text (Table::text) instead of parsing numbers: categorical
  // columns for a histogram. Missing cells follow `missing`; a CSV cell is kept as written
  // (quotes removed, surrounding spaces trimmed); .npy/.npz numbers are formatted ("3", "2.5").
  bool text = false;
  // Threads for parsing, converting and checking the values (the result never depends on it).
  int threads = default_threads();
  // The caller's release checks every cell finite before it charges anything (NonFiniteCell,
  // data/non_finite_cell.hpp): a .npy of known size (a file, a stored .npz member) with no row to
  // drop then skips the input layer's own scan, and its values are not checked_finite. On a
  // NonFiniteCell the caller reads the file again without this, and that scan's error names the
  // file, row and column. A stream of unknown size (stdin, a pipe, a deflated member: read once)
  // is scanned whatever this says; CSV is checked as it is parsed.
  bool release_checks_finite = false;
};

// Parses "a,b,3" (as given to --columns) into specs: a bare positive integer is also an index.
std::vector<ColumnSpec> parse_column_list(const std::string& text);

// Chooses the format from the extension (.npy, .npz) or, for stdin and other inputs, from the
// magic bytes. Regular files, devices, FIFOs and stdin obey the same limits.
Table read_table(const std::string& path, const ReadOptions& options);
Table read_table(const std::string& path);   // default options (compatible entry point)

// Readers over a stream. `size_hint` is the number of bytes the stream holds when known (a regular
// file); otherwise the .npy reader allocates only as bytes arrive.
Table read_csv(std::istream& in, const std::string& name, const ReadOptions& options = {});
Table read_npy(std::istream& in, const std::string& name, const ReadOptions& options = {},
               std::int64_t size_hint = -1);
Table read_npz(const std::string& path, const ReadOptions& options = {});

// Writes X as a little-endian float64 .npy file (used by tests and experiments).
void write_npy(const std::string& path, const ConstMatrixRef& X);

}  // namespace dpstats
