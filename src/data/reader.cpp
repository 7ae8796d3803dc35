// read_table: opens the tool's INPUT (a path, or "-" for stdin) and dispatches to the CSV, .npy
// or .npz reader. A regular file's size is known before reading (a .npy header is checked against
// it); stdin, devices and FIFOs are read through one buffer with the same limits, and a .npy
// from them allocates only as its bytes arrive.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <fstream>
#include <iostream>
#include <istream>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "input_internal.hpp"

namespace dpstats {
namespace {

constexpr std::string_view kNpyMagic = "\x93NUMPY";
constexpr std::string_view kZipMagic = "PK\x03\x04";

// Reads a file descriptor (a device, a FIFO) or a stream buffer (std::cin's) through a 1 MiB
// buffer; `prefix` peeks the first bytes without consuming them.
class PullBuffer : public std::streambuf {
 public:
  explicit PullBuffer(int fd) : fd_(fd), buf_(std::size_t{1} << 20) { setg(buf_.data(), buf_.data(), buf_.data()); }
  explicit PullBuffer(std::streambuf* src) : PullBuffer(-1) { src_ = src; }
  std::string_view prefix(std::size_t n) {
    while (static_cast<std::size_t>(egptr() - gptr()) < n) {
      const std::size_t used = static_cast<std::size_t>(egptr() - buf_.data());
      const std::size_t got = pull(egptr(), buf_.size() - used);
      if (got == 0) break;
      setg(gptr(), gptr(), egptr() + got);
    }
    return {gptr(), std::min<std::size_t>(n, static_cast<std::size_t>(egptr() - gptr()))};
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const std::size_t got = pull(buf_.data(), buf_.size());
    if (got == 0) return traits_type::eof();
    setg(buf_.data(), buf_.data(), buf_.data() + got);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::size_t pull(char* dst, std::size_t cap) {
    if (src_ != nullptr) {
      const std::streamsize got = src_->sgetn(dst, static_cast<std::streamsize>(cap));
      return got > 0 ? static_cast<std::size_t>(got) : 0;
    }
    for (;;) {
      const ssize_t got = ::read(fd_, dst, cap);
      if (got < 0 && errno == EINTR) continue;
      return got > 0 ? static_cast<std::size_t>(got) : 0;
    }
  }
  int fd_;
  std::streambuf* src_ = nullptr;
  std::vector<char> buf_;
};

std::string lower_extension(const std::string& path) {
  if (path.size() < 4) return {};
  std::string ext = path.substr(path.size() - 4);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

Table read_pulled(PullBuffer& buffer, const std::string& name, const ReadOptions& options) {
  std::istream in(&buffer);
  const std::string_view head = buffer.prefix(kNpyMagic.size());
  if (head == kNpyMagic) return read_npy(in, name, options);
  require(head.substr(0, kZipMagic.size()) != kZipMagic,
          fmt::format("input file '{}' looks like a .npz archive, which must be a regular file "
                      "(not stdin or a pipe)",
                      name));
  return read_csv(in, name, options);
}

Table read_regular(const std::string& path, std::uint64_t size, const ReadOptions& options) {
  if (size > options.limits.max_bytes) input_detail::too_large(path, options.limits.max_bytes);
  const std::string ext = lower_extension(path);
  if (ext == ".npz") return read_npz(path, options);
  if (ext == ".npy") return input_detail::read_npy_file(path, size, options);
  std::ifstream in(path, std::ios::binary);
  require(in.is_open(), fmt::format("cannot open input file '{}'", path));
  char magic[6] = {};
  in.read(magic, sizeof magic);
  const std::string_view head(magic, static_cast<std::size_t>(in.gcount()));
  in.clear();
  in.seekg(0);
  require(in.good(), fmt::format("cannot read input file '{}'", path));
  if (head == kNpyMagic) return input_detail::read_npy_file(path, size, options);
  if (head.substr(0, kZipMagic.size()) == kZipMagic) return read_npz(path, options);
  return read_csv(in, path, options);
}

// ReadOptions::text on a .npy/.npz (the CSV reader keeps text itself): the numbers formatted.
Table as_text(Table t, const ReadOptions& options) {
  if (!options.text || !t.text.empty()) return t;
  t.text.resize(static_cast<std::size_t>(t.values.cols()));
  for (Eigen::Index j = 0; j < t.values.cols(); ++j)
    for (Eigen::Index i = 0; i < t.values.rows(); ++i)
      t.text[static_cast<std::size_t>(j)].push_back(fmt::format("{}", t.values(i, j)));
  t.values = DataMatrix();
  return t;
}

Table read_any(const std::string& path, const ReadOptions& options);

}  // namespace

std::vector<ColumnSpec> parse_column_list(const std::string& text) {
  std::vector<ColumnSpec> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    require(!item.empty(), "--columns: empty entry (give names or 1-based indices, comma-separated)");
    ColumnSpec spec{item, 0};
    if (item.size() <= 9 && std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      spec.index = std::stoul(item);
      require(spec.index > 0, "--columns: indices are 1-based, got 0");
    }
    out.push_back(spec);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

Table read_table(const std::string& path) { return read_table(path, ReadOptions{}); }

Table read_table(const std::string& path, const ReadOptions& options) {
  return as_text(read_any(path, options), options);
}

namespace {

Table read_any(const std::string& path, const ReadOptions& options) {
  if (path == "-") {
    require(std::cin.rdbuf() != nullptr, "cannot read input file '<stdin>'");
    PullBuffer buffer(std::cin.rdbuf());
    return read_pulled(buffer, "<stdin>", options);
  }
  struct stat st {};
  require(::stat(path.c_str(), &st) == 0, fmt::format("cannot open input file '{}'", path));
  require(!S_ISDIR(st.st_mode),
          fmt::format("input path '{}' is a directory, expected a CSV, .npy or .npz file", path));
  if (S_ISREG(st.st_mode)) return read_regular(path, static_cast<std::uint64_t>(st.st_size), options);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  require(fd >= 0, fmt::format("cannot open input file '{}'", path));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  PullBuffer buffer(fd);
  return read_pulled(buffer, path, options);
}

}  // namespace

}  // namespace dpstats
