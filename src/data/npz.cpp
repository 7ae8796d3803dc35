// NumPy .npz reader: a zip archive of .npy members, stored or deflated (zlib). One member is read
// (the only one, or the one named by ReadOptions::array) through the .npy reader: a stored member
// with its size known (checked before allocation), a deflated one as a stream whose memory grows
// only with the bytes inflated. Zip64 archives (members over 4 GiB) are refused by name.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"
#include "input_internal.hpp"

namespace dpstats {
namespace {

std::uint32_t u16(const char* p) {
  return static_cast<std::uint32_t>(static_cast<unsigned char>(p[0])) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(p[1])) << 8;
}
std::uint32_t u32(const char* p) { return u16(p) | u16(p + 2) << 16; }

struct Member {
  std::string name;
  std::uint32_t method = 0;
  std::uint64_t compressed = 0, uncompressed = 0, local_offset = 0;
};

[[noreturn]] void bad_zip(const std::string& path, const char* what) {
  throw InvalidArgument(fmt::format("input file '{}': invalid .npz archive: {}", path, what));
}

std::string read_at(std::ifstream& in, std::uint64_t offset, std::size_t n, const std::string& path) {
  std::string out(n, '\0');
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(out.data(), static_cast<std::streamsize>(n));
  if (static_cast<std::size_t>(in.gcount()) != n) bad_zip(path, "truncated");
  return out;
}

// The central directory's members, from the end-of-central-directory record.
std::vector<Member> list_members(std::ifstream& in, std::uint64_t size, const std::string& path) {
  const std::size_t tail_len = static_cast<std::size_t>(std::min<std::uint64_t>(size, 65557));
  if (tail_len < 22) bad_zip(path, "too short");
  const std::string tail = read_at(in, size - tail_len, tail_len, path);
  const std::size_t eocd = tail.rfind(std::string_view("PK\x05\x06", 4));
  if (eocd == std::string::npos || eocd + 22 > tail.size()) bad_zip(path, "no end record");
  const std::uint32_t count = u16(tail.data() + eocd + 10);
  const std::uint32_t cd_size = u32(tail.data() + eocd + 12);
  const std::uint32_t cd_offset = u32(tail.data() + eocd + 16);
  if (cd_offset == 0xFFFFFFFFu || count == 0xFFFFu) bad_zip(path, "zip64 archives are not supported");
  if (std::uint64_t{cd_offset} + cd_size > size || cd_size > (1u << 24)) bad_zip(path, "bad directory");
  const std::string cd = read_at(in, cd_offset, cd_size, path);
  std::vector<Member> out;
  std::size_t p = 0;
  for (std::uint32_t k = 0; k < count; ++k) {
    if (p + 46 > cd.size() || cd.compare(p, 4, "PK\x01\x02", 4) != 0) bad_zip(path, "bad directory entry");
    Member m;
    m.method = u16(cd.data() + p + 10);
    m.compressed = u32(cd.data() + p + 20);
    m.uncompressed = u32(cd.data() + p + 24);
    const std::size_t name_len = u16(cd.data() + p + 28);
    const std::size_t skip = name_len + u16(cd.data() + p + 30) + u16(cd.data() + p + 32);
    m.local_offset = u32(cd.data() + p + 42);
    if (p + 46 + skip > cd.size()) bad_zip(path, "bad directory entry");
    m.name = cd.substr(p + 46, name_len);
    if (m.compressed == 0xFFFFFFFFu || m.uncompressed == 0xFFFFFFFFu || m.local_offset == 0xFFFFFFFFu)
      bad_zip(path, "zip64 archives are not supported");
    out.push_back(std::move(m));
    p += 46 + skip;
  }
  if (out.empty()) bad_zip(path, "no arrays");
  return out;
}

const Member& choose(const std::vector<Member>& members, const std::string& array,
                     const std::string& path) {
  if (array.empty()) {
    require(members.size() == 1,
            fmt::format("input file '{}' holds {} arrays; choose one with --array NAME (Python: "
                        "array=)",
                        path, members.size()));
    return members[0];
  }
  for (const Member& m : members)
    if (m.name == array || m.name == array + ".npy") return m;
  throw InvalidArgument(fmt::format("--array: input file '{}' has no array named '{}'", path,
                                    input_detail::quote_param(array)));
}

// Serves at most `left` bytes of the underlying buffer, raw (stored) or inflated (deflate).
class MemberBuffer : public std::streambuf {
 public:
  MemberBuffer(std::streambuf* src, std::uint64_t left, bool deflate, const std::string& path)
      : src_(src), left_(left), deflate_(deflate), path_(path), in_(1 << 16), out_(1 << 16) {
    if (deflate_ && inflateInit2(&z_, -15) != Z_OK) bad_zip(path, "zlib initialisation failed");
    setg(out_.data(), out_.data(), out_.data());
  }
  ~MemberBuffer() override {
    if (deflate_) inflateEnd(&z_);
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const std::size_t got = deflate_ ? inflate_some() : raw_some(out_.data(), out_.size());
    if (got == 0) return traits_type::eof();
    setg(out_.data(), out_.data(), out_.data() + got);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::size_t raw_some(char* dst, std::size_t cap) {
    const auto want = static_cast<std::streamsize>(std::min<std::uint64_t>(cap, left_));
    if (want == 0) return 0;
    const std::streamsize got = src_->sgetn(dst, want);
    if (got <= 0) return 0;
    left_ -= static_cast<std::uint64_t>(got);
    return static_cast<std::size_t>(got);
  }
  std::size_t inflate_some() {
    z_.next_out = reinterpret_cast<Bytef*>(out_.data());
    z_.avail_out = static_cast<uInt>(out_.size());
    while (z_.avail_out == out_.size() && !done_) {
      if (z_.avail_in == 0) {
        z_.avail_in = static_cast<uInt>(raw_some(in_.data(), in_.size()));
        z_.next_in = reinterpret_cast<Bytef*>(in_.data());
        if (z_.avail_in == 0) bad_zip(path_, "a deflated member is truncated");
      }
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) done_ = true;
      else if (rc != Z_OK) bad_zip(path_, "a deflated member is corrupt");
    }
    return out_.size() - z_.avail_out;
  }

  std::streambuf* src_;
  std::uint64_t left_;
  bool deflate_;
  bool done_ = false;
  const std::string& path_;
  std::vector<char> in_, out_;
  z_stream z_{};
};

}  // namespace

Table read_npz(const std::string& path, const ReadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  require(in.is_open(), fmt::format("cannot open input file '{}'", path));
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  const std::vector<Member> members = list_members(in, size, path);
  const Member& m = choose(members, options.array, path);
  require(m.method == 0 || m.method == 8,
          fmt::format("input file '{}': a .npz member uses zip method {}, expected stored (0) or "
                      "deflate (8)",
                      path, m.method));
  const std::string local = read_at(in, m.local_offset, 30, path);
  if (local.compare(0, 4, "PK\x03\x04", 4) != 0) bad_zip(path, "bad local header");
  const std::uint64_t data = m.local_offset + 30 + u16(local.data() + 26) + u16(local.data() + 28);
  if (data + m.compressed > size) bad_zip(path, "a member runs past the end of the file");
  if (m.method == 0 && m.compressed != m.uncompressed) bad_zip(path, "bad stored member size");
  in.clear();
  in.seekg(static_cast<std::streamoff>(data));
  MemberBuffer member(in.rdbuf(), m.compressed, m.method == 8, path);
  std::istream member_in(&member);
  const std::string name = options.array.empty() ? path : path + ":" + input_detail::quote_param(options.array);
  return read_npy(member_in, name, options,
                  m.method == 0 ? static_cast<std::int64_t>(m.compressed) : -1);
}

}  // namespace dpstats
