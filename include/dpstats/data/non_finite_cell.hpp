// NonFiniteCell: the error check_data throws on a NaN or an infinite cell. Typed, so that a caller
// that knows where the rows came from (the tool: a file it read) can report the cell in its own
// terms -- the tool reads the file again with the input layer's scan, whose message names the
// file, the row and the column (never a value).
#pragma once
#include <cstdint>
#include <string>

#include "dpstats/error.hpp"

namespace dpstats {

class NonFiniteCell : public InvalidArgument {
 public:
  // `row`, `column`: the cell's 0-based position in the matrix that was checked.
  NonFiniteCell(const std::string& what, std::int64_t row, std::int64_t column)
      : InvalidArgument(what), row_(row), column_(column) {}
  std::int64_t row() const { return row_; }
  std::int64_t column() const { return column_; }

 private:
  std::int64_t row_, column_;
};

}  // namespace dpstats
