// Shared by the libFuzzer harnesses: the options a harness reads with are drawn from the input's
// first byte (header mode, missing policy, columns, text), and the limits are small so that any unbounded allocation shows up under
// -malloc_limit_mb. A harness accepts InvalidArgument (the contract for bad input); any other
// exception (std::bad_alloc included) escapes and is a crash.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "dpstats/data/reader.hpp"

namespace dpstats::fuzz {

inline ReadOptions options_from(std::uint8_t b) {
  ReadOptions o;
  o.header = static_cast<HeaderMode>(b % 3);
  o.missing = (b & 4) != 0 ? MissingPolicy::drop : MissingPolicy::error;
  if ((b & 8) != 0) o.columns.push_back(ColumnSpec{"2", 2});
  if ((b & 16) != 0) o.columns.push_back(ColumnSpec{"a", 0});
  o.text = (b & 32) != 0;  // text columns (a histogram's input)
  o.limits.max_bytes = std::uint64_t{1} << 20;
  o.limits.max_line_bytes = 4096;
  return o;
}

}  // namespace dpstats::fuzz
