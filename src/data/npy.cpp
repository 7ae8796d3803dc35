// NumPy .npy reader and writer (format versions 1.0, 2.0 and 3.0; numpy/lib/format.py).
// Layout: magic "\x93NUMPY", major, minor, header length (uint16 LE for 1.x, uint32 LE for
// 2.x/3.x), a Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...)}, data.
// Little-endian numeric dtypes are converted to double; anything else is rejected by name.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <istream>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"

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

double load_as_double(Dtype t, const unsigned char* p) {
  switch (t) {
    case Dtype::f8:
      return load_le<double>(p);
    case Dtype::f4:
      return static_cast<double>(load_le<float>(p));
    case Dtype::i8:
      return static_cast<double>(load_le<std::int64_t>(p));
    case Dtype::i4:
      return static_cast<double>(load_le<std::int32_t>(p));
    case Dtype::i2:
      return static_cast<double>(load_le<std::int16_t>(p));
    case Dtype::u1:
      return static_cast<double>(*p);
    case Dtype::b1:
      return *p != 0 ? 1.0 : 0.0;
  }
  return 0;
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
        fail(fmt::format("unexpected header key '{}'", key.substr(0, 20)));
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

}  // namespace

Table read_npy(std::istream& in, const std::string& name) {
  std::array<char, 10> pre{};
  std::size_t got = static_cast<std::size_t>(in.rdbuf() ? in.rdbuf()->sgetn(pre.data(), 8) : 0);
  require(got > 0, fmt::format("input file '{}' is empty", name));
  require(got == 8 && std::string_view(pre.data(), 6) == kMagic,
          fmt::format("input file '{}' is not a .npy file (missing the \\x93NUMPY magic)", name));
  const int major = static_cast<unsigned char>(pre[6]);
  const int minor = static_cast<unsigned char>(pre[7]);
  require(major >= 1 && major <= 3,
          fmt::format("input file '{}': unsupported .npy format version {}.{}, expected 1.0, 2.0 "
                      "or 3.0",
                      name, major, minor));
  std::uint64_t header_len = 0;
  if (major == 1) {
    read_exact(in, pre.data(), 2, name, "header length");
    header_len = load_le<std::uint16_t>(reinterpret_cast<const unsigned char*>(pre.data()));
  } else {
    read_exact(in, pre.data(), 4, name, "header length");
    header_len = load_le<std::uint32_t>(reinterpret_cast<const unsigned char*>(pre.data()));
  }
  require(header_len <= (std::uint64_t{1} << 24),
          fmt::format("input file '{}': .npy header length {} is implausibly large", name,
                      header_len));
  std::string header_text(header_len, '\0');
  read_exact(in, header_text.data(), header_len, name, "header");
  const NpyHeader h = HeaderParser(header_text, name).parse();

  const std::optional<Dtype> dtype = parse_dtype(h.descr);
  require(dtype.has_value(),
          fmt::format("input file '{}': unsupported dtype '{}', expected one of <f8, <f4, <i8, "
                      "<i4, <i2, <u1, |u1, |b1 (little-endian numeric)",
                      name, h.descr.substr(0, 20)));
  require(h.shape.size() == 1 || h.shape.size() == 2,
          fmt::format("input file '{}': array has {} dimensions, expected a 1-D (n,) or 2-D (n, d) "
                      "array",
                      name, h.shape.size()));
  const std::uint64_t n = h.shape[0];
  const std::uint64_t d = h.shape.size() == 2 ? h.shape[1] : 1;
  require(n > 0 && d > 0,
          fmt::format("input file '{}' is empty (shape {} x {})", name, n, d));
  require(n <= kMaxElements / d,
          fmt::format("input file '{}': shape {} x {} is too large", name, n, d));

  const std::size_t count = static_cast<std::size_t>(n * d);
  const std::size_t bytes = count * item_size(*dtype);
  Table table;
  const auto rows = static_cast<Eigen::Index>(n);
  const auto cols = static_cast<Eigen::Index>(d);
  const bool fortran = h.fortran_order && d > 1;

  if (*dtype == Dtype::f8 && !fortran && std::endian::native == std::endian::little) {
    table.values.resize(rows, cols);
    read_exact(in, reinterpret_cast<char*>(table.values.data()), bytes, name, "data");
  } else {
    std::vector<unsigned char> raw(bytes);
    read_exact(in, reinterpret_cast<char*>(raw.data()), bytes, name, "data");
    std::vector<double> flat(count);
    const std::size_t size = item_size(*dtype);
    for (std::size_t k = 0; k < count; ++k) flat[k] = load_as_double(*dtype, raw.data() + k * size);
    if (fortran) {
      // Column-major on disk: element (i, j) is at j * n + i.
      table.values = Eigen::Map<const Eigen::MatrixXd>(flat.data(), rows, cols);
    } else {
      table.values = Eigen::Map<const RowMatrix>(flat.data(), rows, cols);
    }
  }
  require(in.rdbuf()->sgetc() == std::char_traits<char>::eof(),
          fmt::format("input file '{}' has extra bytes after the {} x {} array", name, n, d));

  const double* v = table.values.data();
  for (std::size_t k = 0; k < count; ++k) {
    if (!std::isfinite(v[k])) {
      throw InvalidArgument(fmt::format(
          "input file '{}', row {}, column {}: NaN or infinite value, expected a finite number",
          name, k / d + 1, k % d + 1));
    }
  }
  return table;
}

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
