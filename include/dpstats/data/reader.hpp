// Readers for the tool's INPUT: numeric CSV (header auto-detected) or NumPy .npy; "-" is stdin.
// Validation is strict: an empty or missing file, a ragged row, a non-numeric, NaN or infinite
// cell all throw InvalidArgument naming the file, row and column (never the cell's value when
// it parsed as a number).
#pragma once
#include <istream>
#include <string>
#include <vector>

#include "dpstats/data/matrix.hpp"

namespace dpstats {

struct Table {
  RowMatrix values;                  // n x d
  std::vector<std::string> header;   // empty when the file has none
};

// Chooses the format from the extension (.npy) or, for stdin, from the NumPy magic bytes.
Table read_table(const std::string& path);
Table read_csv(std::istream& in, const std::string& name);
Table read_npy(std::istream& in, const std::string& name);

// Writes X as a little-endian float64 .npy file (used by tests and experiments).
void write_npy(const std::string& path, const ConstMatrixRef& X);

}  // namespace dpstats
