// libFuzzer harness: read_npy on any bytes, once with the size known (a regular file) and once
// as a stream of unknown size (stdin, a pipe); the first byte picks the options.
#include <sstream>
#include <string>

#include "dpstats/error.hpp"
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const dpstats::ReadOptions o = dpstats::fuzz::options_from(data[0]);
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  for (const std::int64_t hint : {static_cast<std::int64_t>(bytes.size()), std::int64_t{-1}}) {
    std::istringstream in(bytes);
    try {
      const dpstats::Table t = dpstats::read_npy(in, "fuzz.npy", o, hint);
      if (t.values.rows() == 0) __builtin_trap();
    } catch (const dpstats::InvalidArgument&) {
    }
  }
  return 0;
}
