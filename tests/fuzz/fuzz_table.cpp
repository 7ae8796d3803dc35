// libFuzzer harness: read_table on a file holding any bytes, named .csv, .npy, .npz or with no
// extension (format sniffing); covers the .npz reader (zip directory, stored and deflate).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "dpstats/error.hpp"
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const char* const kExt[] = {".csv", ".npy", ".npz", ".bin"};
  const std::string path = "/tmp/dpstats-fuzz-" + std::to_string(::getpid()) + kExt[data[0] >> 6];
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data) + 1, static_cast<std::streamsize>(size - 1));
  }
  dpstats::ReadOptions o = dpstats::fuzz::options_from(data[0]);
  if ((data[0] & 32) != 0) o.array = "x";
  try {
    const dpstats::Table t = dpstats::read_table(path, o);
    const bool empty = o.text ? t.text.empty() || t.text[0].empty() : t.values.rows() == 0;
    if (empty) __builtin_trap();  // a table is never empty
  } catch (const dpstats::InvalidArgument&) {
  }
  std::remove(path.c_str());
  return 0;
}
