// libFuzzer harness: read_csv on any bytes (the first byte picks the options).
#include <sstream>
#include <string>

#include "dpstats/error.hpp"
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const dpstats::ReadOptions o = dpstats::fuzz::options_from(data[0]);
  std::istringstream in(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  try {
    const dpstats::Table t = dpstats::read_csv(in, "fuzz.csv", o);
    const bool empty = o.text ? t.text.empty() || t.text[0].empty() : t.values.rows() == 0;
    if (empty) __builtin_trap();  // a table is never empty
  } catch (const dpstats::InvalidArgument&) {
  }
  return 0;
}
