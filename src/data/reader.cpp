// read_table: opens the tool's INPUT (a path, or "-" for stdin) and dispatches to the CSV or .npy
// reader. A .npy file is recognised by its extension or, for any input, by the NumPy magic bytes.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <streambuf>
#include <string>
#include <string_view>
#include <system_error>

#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"

namespace dpstats {
namespace {

constexpr std::string_view kNpyMagic = "\x93NUMPY";

// Read-only stream buffer over memory already read from stdin (no second copy).
class MemoryBuffer : public std::streambuf {
 public:
  MemoryBuffer(char* begin, char* end) { setg(begin, begin, end); }
};

bool has_npy_extension(const std::string& path) {
  if (path.size() < 4) return false;
  std::string ext = path.substr(path.size() - 4);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".npy";
}

Table read_stdin() {
  std::string data;
  std::streambuf* sb = std::cin.rdbuf();
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::size_t used = 0;
  for (;;) {
    data.resize(used + kChunk);
    const std::streamsize got = sb->sgetn(data.data() + used, static_cast<std::streamsize>(kChunk));
    if (got <= 0) break;
    used += static_cast<std::size_t>(got);
  }
  data.resize(used);
  MemoryBuffer buffer(data.data(), data.data() + data.size());
  std::istream in(&buffer);
  if (std::string_view(data).substr(0, kNpyMagic.size()) == kNpyMagic) return read_npy(in, "<stdin>");
  return read_csv(in, "<stdin>");
}

}  // namespace

Table read_table(const std::string& path) {
  if (path == "-") return read_stdin();
  std::error_code ec;
  require(!std::filesystem::is_directory(path, ec),
          fmt::format("input path '{}' is a directory, expected a CSV or .npy file", path));
  std::ifstream in(path, std::ios::binary);
  require(in.is_open(), fmt::format("cannot open input file '{}'", path));
  if (has_npy_extension(path)) return read_npy(in, path);
  char magic[6] = {};
  in.read(magic, sizeof magic);
  const bool is_npy = in.gcount() == static_cast<std::streamsize>(sizeof magic) &&
                      std::string_view(magic, sizeof magic) == kNpyMagic;
  in.clear();
  in.seekg(0);
  require(in.good(), fmt::format("cannot read input file '{}'", path));
  return is_npy ? read_npy(in, path) : read_csv(in, path);
}

}  // namespace dpstats
