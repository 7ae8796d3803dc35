// NumPy .npy reader and writer (format versions 1.0, 2.0 and 3.0; numpy/lib/format.py).
// Layout: magic "\x93NUMPY", major, minor, header length (uint16 LE for 1.x, uint32 LE for
// 2.x/3.x), a Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...)}, data.
// Little-endian numeric dtypes are converted to double; anything else is rejected by name.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <istream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "input_internal.hpp"

namespace dpstats {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
// Largest element count accepted (2^40 doubles = 8 TiB): guards the size arithmetic.
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 40;

enum class Dtype { f8, f4, i8, i4, i2, u1, b1 };

std::optional<Dtype> parse_dtype(std::string_view descr) {
  if (descr == "<f8") return Dtype::f8;
  if (descr == "<f4") return Dtype::f4;
  if (descr == "<i8") return Dtype::i8;
  if (descr == "<i4") return Dtype::i4;
  if (descr == "<i2") return Dtype::i2;
  if (descr == "<u1" || descr == "|u1") return Dtype::u1;
  if (descr == "|b1") return Dtype::b1;
  return std::nullopt;
}

std::size_t item_size(Dtype t) {
  switch (t) {
    case Dtype::f8:
    case Dtype::i8:
      return 8;
    case Dtype::f4:
    case Dtype::i4:
      return 4;
    case Dtype::i2:
      return 2;
    case Dtype::u1:
    case Dtype::b1:
      return 1;
  }
  return 0;
}

// Reads a little-endian T from p (the file is little-endian whatever the host is).
template <class T>
T load_le(const unsigned char* p) {
  std::array<unsigned char, sizeof(T)> bytes;
  std::memcpy(bytes.data(), p, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) std::reverse(bytes.begin(), bytes.end());
  T v;
  std::memcpy(&v, bytes.data(), sizeof(T));
  return v;
}

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
};

// Parser for the header's Python dict literal. Only the forms NumPy writes are accepted:
// string keys; values that are strings, True/False, or tuples of non-negative integers.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = parse_string();
      expect(':');
      skip_space();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"')
          fail("unsupported dtype (structured or non-string 'descr'); expected one of <f8, <f4, "
               "<i8, <i4, <i2, <u1, |u1, |b1");
        h.descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        h.shape = parse_shape();
        have_shape = true;
      } else {
        fail("unexpected header key (only 'descr', 'fortran_order' and 'shape' are allowed)");
      }
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_space();
      if (peek() != '}') fail("malformed header dict");
    }
    if (!have_descr || !have_order || !have_shape)
      fail("header must define 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InvalidArgument(fmt::format("input file '{}': invalid .npy header: {}", name_, what));
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n')) ++i_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++i_;
  }
  std::string parse_string() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    const std::size_t close = s_.find(quote, i_ + 1);
    if (close == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(i_ + 1, close - i_ - 1));
    i_ = close + 1;
    return out;
  }
  bool parse_bool() {
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    fail("'fortran_order' must be True or False");
  }
  std::vector<std::uint64_t> parse_shape() {
    expect('(');
    std::vector<std::uint64_t> shape;
    while (true) {
      skip_space();
      if (peek() == ')') {
        ++i_;
        return shape;
      }
      if (peek() < '0' || peek() > '9') fail("'shape' must be a tuple of non-negative integers");
      std::uint64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (v > kMaxElements) fail("'shape' has a dimension too large");
        v = v * 10 + static_cast<std::uint64_t>(peek() - '0');
        ++i_;
      }
      shape.push_back(v);
      skip_space();
      if (peek() == ',') {
        ++i_;
      } else if (peek() != ')') {
        fail("'shape' must be a tuple of non-negative integers");
      }
    }
  }

  std::string_view s_;
  const std::string& name_;
  std::size_t i_ = 0;
};

void read_exact(std::istream& in, char* dst, std::size_t n, const std::string& name,
                const char* what) {
  std::size_t got = 0;
  std::streambuf* sb = in.rdbuf();
  while (got < n && sb != nullptr) {
    const std::streamsize chunk = sb->sgetn(
        dst + got,
        static_cast<std::streamsize>(std::min<std::size_t>(n - got, std::size_t{1} << 30)));
    if (chunk <= 0) break;
    got += static_cast<std::size_t>(chunk);
  }
  require(got == n, fmt::format("input file '{}' is truncated: expected {} bytes of {}, got {}",
                                name, n, what, got));
}

// What the header says about the payload.
struct Layout {
  Dtype dtype = Dtype::f8;
  bool fortran = false;
  std::uint64_t n = 0, d = 0;
  std::uint64_t header_bytes = 0;   // magic .. end of the header dict
  std::uint64_t payload_bytes = 0;
};

// The header's length; `prefix` gets the bytes before the header (10 for 1.x, 12 otherwise).
std::uint64_t header_length(std::istream& in, const std::string& name, std::uint64_t& prefix) {
  std::array<char, 10> pre{};
  const std::size_t got =
      static_cast<std::size_t>(in.rdbuf() ? in.rdbuf()->sgetn(pre.data(), 8) : 0);
  require(got > 0, fmt::format("input file '{}' is empty", name));
  require(got == 8 && std::string_view(pre.data(), 6) == kMagic,
          fmt::format("input file '{}' is not a .npy file (missing the \\x93NUMPY magic)", name));
  const int major = static_cast<unsigned char>(pre[6]);
  const int minor = static_cast<unsigned char>(pre[7]);
  require(major >= 1 && major <= 3,
          fmt::format("input file '{}': unsupported .npy format version {}.{}, expected 1.0, 2.0 "
                      "or 3.0",
                      name, major, minor));
  const auto* bytes = reinterpret_cast<const unsigned char*>(pre.data());
  prefix = major == 1 ? 10 : 12;
  if (major == 1) {
    read_exact(in, pre.data(), 2, name, "header length");
    return load_le<std::uint16_t>(bytes);
  }
  read_exact(in, pre.data(), 4, name, "header length");
  return load_le<std::uint32_t>(bytes);
}

Layout read_layout(std::istream& in, const std::string& name) {
  std::uint64_t prefix = 0;
  const std::uint64_t header_len = header_length(in, name, prefix);
  require(header_len <= (std::uint64_t{1} << 16),
          fmt::format("input file '{}': .npy header length {} is implausibly large", name,
                      header_len));
  std::string header_text(header_len, '\0');
  read_exact(in, header_text.data(), header_len, name, "header");
  const NpyHeader h = HeaderParser(header_text, name).parse();
  const std::optional<Dtype> dtype = parse_dtype(h.descr);
  require(dtype.has_value(),
          fmt::format("input file '{}': unsupported dtype, expected one of <f8, <f4, <i8, <i4, "
                      "<i2, <u1, |u1, |b1 (little-endian numeric)",
                      name));
  require(h.shape.size() == 1 || h.shape.size() == 2,
          fmt::format("input file '{}': array has {} dimensions, expected a 1-D (n,) or 2-D (n, d) "
                      "array",
                      name, h.shape.size()));
  Layout l;
  l.dtype = *dtype;
  l.n = h.shape[0];
  l.d = h.shape.size() == 2 ? h.shape[1] : 1;
  l.fortran = h.fortran_order && l.d > 1;
  l.header_bytes = prefix + header_len;
  require(l.n > 0 && l.d > 0, fmt::format("input file '{}' is empty (shape {} x {})", name, l.n, l.d));
  require(l.n <= kMaxElements / l.d,
          fmt::format("input file '{}': shape {} x {} is too large", name, l.n, l.d));
  l.payload_bytes = l.n * l.d * item_size(l.dtype);
  return l;
}

void check_size(const Layout& l, std::uint64_t size, const std::string& name);

// The header's shape x itemsize against the bytes there and the limits, before any allocation.
void check_payload(const Layout& l, std::int64_t size_hint, const ReadLimits& limits,
                   const std::string& name) {
  const std::uint64_t values_bytes = l.n * l.d * 8;
  if (size_hint >= 0) check_size(l, static_cast<std::uint64_t>(size_hint), name);
  if (l.payload_bytes > limits.max_bytes || values_bytes > limits.max_bytes)
    input_detail::too_large(name, limits.max_bytes);
}

void check_size(const Layout& l, std::uint64_t size, const std::string& name) {
  const std::uint64_t there = size > l.header_bytes ? size - l.header_bytes : 0;
  require(there >= l.payload_bytes,
          fmt::format("input file '{}' is truncated: the header declares {} x {} values ({} bytes), "
                      "the file holds {} bytes of data",
                      name, l.n, l.d, l.payload_bytes, there));
  require(there == l.payload_bytes,
          fmt::format("input file '{}' has extra bytes after the {} x {} array", name, l.n, l.d));
}

// Converts `count` items of type T starting at flat payload index `first` into out (row-major
// n x d); Fortran order on disk: flat index idx is element (idx % n, idx / n).
template <class T>
void convert_typed(const Layout& l, const unsigned char* src, std::uint64_t first,
                   std::size_t count, double* out) {
  for (std::size_t k = 0; k < count; ++k) {
    const std::uint64_t idx = first + k;
    const std::uint64_t at = l.fortran ? (idx % l.n) * l.d + idx / l.n : idx;
    if constexpr (std::is_same_v<T, bool>) {
      out[at] = src[k] != 0 ? 1.0 : 0.0;
    } else {
      out[at] = static_cast<double>(load_le<T>(src + k * sizeof(T)));
    }
  }
}

// Converts `count` items starting at flat payload index `first` into X.
void convert(const Layout& l, const unsigned char* src, std::uint64_t first, std::size_t count,
             RowMatrix& X) {
  double* out = X.data();
  switch (l.dtype) {
    case Dtype::f8:
      return convert_typed<double>(l, src, first, count, out);
    case Dtype::f4:
      return convert_typed<float>(l, src, first, count, out);
    case Dtype::i8:
      return convert_typed<std::int64_t>(l, src, first, count, out);
    case Dtype::i4:
      return convert_typed<std::int32_t>(l, src, first, count, out);
    case Dtype::i2:
      return convert_typed<std::int16_t>(l, src, first, count, out);
    case Dtype::u1:
      return convert_typed<std::uint8_t>(l, src, first, count, out);
    case Dtype::b1:
      return convert_typed<bool>(l, src, first, count, out);
  }
}

// A payload whose size was checked: allocate once, then read (f8 C order) or convert in chunks.
RowMatrix read_known(std::istream& in, const Layout& l, const std::string& name) {
  RowMatrix X(static_cast<Eigen::Index>(l.n), static_cast<Eigen::Index>(l.d));
  if (l.dtype == Dtype::f8 && !l.fortran && std::endian::native == std::endian::little) {
    read_exact(in, reinterpret_cast<char*>(X.data()), l.payload_bytes, name, "data");
    return X;
  }
  const std::size_t size = item_size(l.dtype);
  std::vector<unsigned char> chunk(std::size_t{1} << 20);
  const std::size_t per_chunk = chunk.size() / size;
  const std::uint64_t count = l.n * l.d;
  for (std::uint64_t first = 0; first < count; first += per_chunk) {
    const std::size_t items = static_cast<std::size_t>(std::min<std::uint64_t>(per_chunk, count - first));
    read_exact(in, reinterpret_cast<char*>(chunk.data()), items * size, name, "data");
    convert(l, chunk.data(), first, items, X);
  }
  return X;
}

// A stream of unknown size: memory grows only with the bytes that arrived (blocks of 16 MiB),
// then one conversion into the matrix frees the blocks as it goes.
RowMatrix read_stream(std::istream& in, const Layout& l, const std::string& name) {
  constexpr std::uint64_t kBlock = std::uint64_t{1} << 24;
  const std::size_t size = item_size(l.dtype);
  std::vector<std::vector<unsigned char>> blocks;
  for (std::uint64_t have = 0; have < l.payload_bytes;) {
    const std::uint64_t want = std::min(kBlock - kBlock % size, l.payload_bytes - have);
    blocks.emplace_back(static_cast<std::size_t>(want));
    std::size_t got = 0;
    while (got < want) {
      const std::streamsize c = in.rdbuf()->sgetn(
          reinterpret_cast<char*>(blocks.back().data()) + got, static_cast<std::streamsize>(want - got));
      if (c <= 0) break;
      got += static_cast<std::size_t>(c);
    }
    have += got;
    require(got == want, fmt::format("input file '{}' is truncated: expected {} bytes of data, "
                                     "got {}",
                                     name, l.payload_bytes, have));
  }
  RowMatrix X(static_cast<Eigen::Index>(l.n), static_cast<Eigen::Index>(l.d));
  std::uint64_t first = 0;
  for (auto& b : blocks) {
    convert(l, b.data(), first, b.size() / size, X);
    first += b.size() / size;
    std::vector<unsigned char>().swap(b);
  }
  return X;
}

// A regular file mapped copy-on-write (PROT_READ | PROT_WRITE, MAP_PRIVATE): the pages are the
// page cache's until someone writes (a NumPy array handed to Python may be written; the file
// never is). Null when the file cannot be mapped.
class Mapping {
 public:
  static std::shared_ptr<const Mapping> open(const std::string& path, std::uint64_t size) {
    if (size == 0 || size > std::numeric_limits<std::size_t>::max()) return nullptr;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    require(fd >= 0, fmt::format("cannot open input file '{}'", path));
    void* addr = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (addr == MAP_FAILED) return nullptr;
    ::madvise(addr, static_cast<std::size_t>(size), MADV_SEQUENTIAL);
    return std::shared_ptr<const Mapping>(new Mapping(addr, static_cast<std::size_t>(size)));
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { ::munmap(addr_, size_); }
  const unsigned char* bytes() const { return static_cast<const unsigned char*>(addr_); }
  // Drops the whole pages inside [p, p + n) from this process (they were read and are not needed
  // again), so converting a file costs the output matrix and not the mapped input too.
  void release(const unsigned char* p, std::size_t n) const {
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto lo = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
    const auto hi = (reinterpret_cast<std::uintptr_t>(p) + n) / page * page;
    if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
  }

 private:
  Mapping(void* addr, std::size_t size) : addr_(addr), size_(size) {}
  void* addr_;
  std::size_t size_;
};

// The mapped bytes as a stream, for the header parser.
class MemoryBuf : public std::streambuf {
 public:
  MemoryBuf(const unsigned char* p, std::uint64_t n) {
    char* b = const_cast<char*>(reinterpret_cast<const char*>(p));
    setg(b, b, b + n);
  }
};

}  // namespace

Table read_npy(std::istream& in, const std::string& name, const ReadOptions& options,
               std::int64_t size_hint) {
  const Layout l = read_layout(in, name);
  check_payload(l, size_hint, options.limits, name);
  const std::vector<std::size_t> selected =
      input_detail::resolve_columns(options, nullptr, static_cast<std::size_t>(l.d), name);
  Table table;
  RowMatrix X = size_hint >= 0 ? read_known(in, l, name) : read_stream(in, l, name);
  require(size_hint >= 0 || in.rdbuf()->sgetc() == std::char_traits<char>::eof(),
          fmt::format("input file '{}' has extra bytes after the {} x {} array", name, l.n, l.d));
  ReadOptions finish = options;  // a stream of unknown size (stdin, a pipe) is read once: scanned
  finish.release_checks_finite = options.release_checks_finite && size_hint >= 0;
  table.values = input_detail::finish_dense(std::move(X), selected, finish, name);
  return table;
}

namespace input_detail {

Table read_npy_file(const std::string& path, std::uint64_t size, const ReadOptions& options) {
  std::shared_ptr<const Mapping> map = Mapping::open(path, size);
  if (!map) {  // a file system without mmap, or no address space: read it instead
    std::ifstream in(path, std::ios::binary);
    require(in.is_open(), fmt::format("cannot open input file '{}'", path));
    return read_npy(in, path, options, static_cast<std::int64_t>(size));
  }
  MemoryBuf buf(map->bytes(), size);
  std::istream in(&buf);
  const Layout l = read_layout(in, path);
  check_payload(l, static_cast<std::int64_t>(size), options.limits, path);
  const std::vector<std::size_t> selected =
      resolve_columns(options, nullptr, static_cast<std::size_t>(l.d), path);
  const unsigned char* payload = map->bytes() + l.header_bytes;
  const auto n = static_cast<Eigen::Index>(l.n), d = static_cast<Eigen::Index>(l.d);
  Table table;
  if (l.dtype == Dtype::f8 && !l.fortran && std::endian::native == std::endian::little &&
      l.header_bytes % alignof(double) == 0) {
    table.values = DataMatrix(map, reinterpret_cast<const double*>(payload), n, d);
  } else {
    RowMatrix X(n, d);
    const std::size_t size_of = item_size(l.dtype);
    constexpr std::int64_t kChunk = 1 << 17;  // items converted before their pages are released
    parallel_ranges(static_cast<std::int64_t>(l.n * l.d), std::max(options.threads, 1), kChunk,
                    [&](int, std::int64_t begin, std::int64_t end) {
                      for (std::int64_t b = begin; b < end; b += kChunk) {
                        const std::int64_t e = std::min(end, b + kChunk);
                        const unsigned char* src = payload + static_cast<std::uint64_t>(b) * size_of;
                        convert(l, src, static_cast<std::uint64_t>(b), static_cast<std::size_t>(e - b), X);
                        map->release(src, static_cast<std::size_t>(e - b) * size_of);
                      }
                    });
    table.values = std::move(X);
  }
  table.values = finish_dense(std::move(table.values), selected, options, path);
  return table;
}

}  // namespace input_detail

void write_npy(const std::string& path, const ConstMatrixRef& X) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  require(out.is_open(), fmt::format("cannot open output file '{}'", path));
  std::string header = fmt::format("{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, {}), }}",
                                   X.rows(), X.cols());
  // Magic (6) + version (2) + length (2) + header, padded with spaces and a final '\n' to a
  // multiple of 64 bytes, as NumPy writes it.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  require(header.size() <= 0xFFFF,
          fmt::format("write_npy: header of {} bytes does not fit a version 1.0 file", header.size()));
  out.write(kMagic.data(), static_cast<std::streamsize>(kMagic.size()));
  const char version[2] = {1, 0};
  out.write(version, 2);
  const auto len = static_cast<std::uint16_t>(header.size());
  const unsigned char len_le[2] = {static_cast<unsigned char>(len & 0xFF),
                                   static_cast<unsigned char>(len >> 8)};
  out.write(reinterpret_cast<const char*>(len_le), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  std::vector<unsigned char> row(static_cast<std::size_t>(X.cols()) * 8);
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    for (Eigen::Index j = 0; j < X.cols(); ++j) {
      std::array<unsigned char, 8> b;
      const double x = X(i, j);
      std::memcpy(b.data(), &x, 8);
      if constexpr (std::endian::native == std::endian::big) std::reverse(b.begin(), b.end());
      std::memcpy(row.data() + static_cast<std::size_t>(j) * 8, b.data(), 8);
    }
    out.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size()));
  }
  out.flush();
  require(out.good(), fmt::format("failed to write output file '{}'", path));
}

}  // namespace dpstats
