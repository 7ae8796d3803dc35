// The shared input layer's options and hardening (reader.hpp): RFC 4180 quoting, --columns,
// header modes, the missing-value policy, byte limits, lying .npy headers, .npz members.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"

namespace dpstats {
namespace {

Table csv(const std::string& text, const ReadOptions& o = {}) {
  std::istringstream in(text);
  return read_csv(in, "t.csv", o);
}

std::string csv_error(const std::string& text, const ReadOptions& o = {}) {
  try {
    csv(text, o);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument for: " << text;
  return {};
}

ReadOptions with_columns(const std::string& list, HeaderMode h = HeaderMode::detect) {
  ReadOptions o;
  o.columns = parse_column_list(list);
  o.header = h;
  return o;
}

TEST(ReadCsvRfc4180, QuotedFieldsCommasQuotesNewlinesCrlf) {
  const Table t = csv("id,name,x\r\n7,\"Smith, J\",1.5\r\n8,\"say \"\"hi\"\"\nsecond line\",2\r\n\r\n\r\n",
                      with_columns("x"));
  EXPECT_EQ(t.header, (std::vector<std::string>{"x"}));
  ASSERT_EQ(t.values.rows(), 2);
  EXPECT_EQ(t.values(1, 0), 2);
  EXPECT_EQ(csv("\"1\",\" 2 \"\n").values(0, 1), 2);  // a quoted number is a number
  const std::string open = csv_error("1,\"2\n3,4\n");
  EXPECT_NE(open.find("line 1, column 2: a quoted field is not closed"), std::string::npos) << open;
  const std::string after = csv_error("1,\"2\"x\n");
  EXPECT_NE(after.find("after the closing quote"), std::string::npos) << after;
}

TEST(ReadCsvRfc4180, LinesAfterAQuotedNewlineAreCountedInErrors) {
  const std::string e = csv_error("a,b\n\"x\ny\",1\n2,zz\n", with_columns("2"));
  EXPECT_NE(e.find("line 4, column 2"), std::string::npos) << e;
}

TEST(ReadCsvColumns, ByNameOrIndexTextColumnsMayStayUnselected) {
  const std::string text = "id,name,x,y\nu1,alice,1,2\nu2,bob,3,4\n";
  const Table by_name = csv(text, with_columns("y,x"));
  EXPECT_EQ(by_name.header, (std::vector<std::string>{"y", "x"}));
  EXPECT_EQ(by_name.values(1, 0), 4);
  EXPECT_EQ(by_name.values(1, 1), 3);
  EXPECT_EQ(csv(text, with_columns("3")).values(0, 0), 1);
  const std::string selected_text = csv_error(text, with_columns("name,x"));
  EXPECT_NE(selected_text.find("line 2, column 2 ('name'): non-numeric"), std::string::npos) << selected_text;
  EXPECT_EQ(selected_text.find("alice"), std::string::npos) << selected_text;
  EXPECT_NE(csv_error(text, with_columns("zz")).find("no column named 'zz'"), std::string::npos);
  EXPECT_NE(csv_error(text, with_columns("9")).find("out of range"), std::string::npos);
  EXPECT_NE(csv_error(text, with_columns("x,3")).find("selected twice"), std::string::npos);
  EXPECT_NE(csv_error("1,2\n", with_columns("a")).find("has no header"), std::string::npos);
  EXPECT_THROW(parse_column_list("a,,b"), InvalidArgument);
  EXPECT_THROW(parse_column_list("0"), InvalidArgument);
}

TEST(ReadCsvHeader, NeverEatsADataRow) {
  // A first line with any cell that is not a name is never printed as column names.
  const std::string secret = csv_error("secret123.4x,5\n1,2\n");
  EXPECT_NE(secret.find("--header or --no-header"), std::string::npos) << secret;
  EXPECT_EQ(secret.find("secret"), std::string::npos) << secret;
  // NA is a missing value, so `NA,2` is a data row (an error by default, dropped on request).
  EXPECT_NE(csv_error("NA,2\n1,2\n").find("line 1, column 1: missing value"), std::string::npos);
  ReadOptions drop;
  drop.missing = MissingPolicy::drop;
  EXPECT_EQ(csv("NA,2\n1,2\n", drop).values.rows(), 1);
  // A numeric header is data unless declared.
  EXPECT_EQ(csv("2019,2020\n1,2\n").values.rows(), 2);
  ReadOptions declared;
  declared.header = HeaderMode::present;
  const Table named = csv("2019,2020\n1,2\n", declared);
  EXPECT_EQ(named.header, (std::vector<std::string>{"2019", "2020"}));
  EXPECT_EQ(named.values.rows(), 1);
  // Two text lines: cannot tell; --no-header makes the names data (and then an error).
  EXPECT_NE(csv_error("a,b\nc,d\n").find("--header"), std::string::npos);
  ReadOptions none;
  none.header = HeaderMode::absent;
  EXPECT_NE(csv_error("x,y\n1,2\n", none).find("line 1, column 1: non-numeric"), std::string::npos);
}

TEST(ReadCsvMissing, DropKeepsRowsWithoutMissingSelectedCells) {
  ReadOptions o = with_columns("x", HeaderMode::present);
  o.missing = MissingPolicy::drop;
  const Table t = csv("x,y\n1,\n,2\nNaN,3\n4,NA\n", o);
  ASSERT_EQ(t.values.rows(), 2);  // the missing y does not matter: y is not selected
  EXPECT_EQ(t.values(1, 0), 4);
  const std::string all = csv_error("x\nNA\n\"\"\n", o);
  EXPECT_NE(all.find("every row had a missing value"), std::string::npos) << all;
}

// ReadOptions::text (issue #16: a histogram of a text column): cells kept as written, quotes
// removed, spaces trimmed; the missing policy applies; the kept bytes count against the limit.
TEST(ReadCsvText, KeepsSelectedCellsAsTextWithTheMissingPolicy) {
  ReadOptions o = with_columns("dept,id");
  o.text = true;
  const Table t = csv("id,dept,age\np1, \"Legal, Compliance\" ,30\np2,Sales,41\n\n", o);
  ASSERT_EQ(t.text.size(), 2u);
  EXPECT_EQ(t.text[0], (std::vector<std::string>{"Legal, Compliance", "Sales"}));
  EXPECT_EQ(t.text[1], (std::vector<std::string>{"p1", "p2"}));
  EXPECT_EQ(t.values.size(), 0);
  EXPECT_EQ(t.header, (std::vector<std::string>{"dept", "id"}));
  ReadOptions m = with_columns("id,age");
  m.text = true;
  const std::string err = csv_error("id,age\np1,30\nSECRET,NA\n", m);
  EXPECT_NE(err.find("line 3, column 2: missing value"), std::string::npos) << err;
  EXPECT_EQ(err.find("SECRET"), std::string::npos) << err;
  m.missing = MissingPolicy::drop;
  const Table kept = csv("id,age\np1,30\np2,NA\np3,\n", m);
  EXPECT_EQ(kept.text[0], (std::vector<std::string>{"p1"}));
  EXPECT_EQ(kept.text[1], (std::vector<std::string>{"30"}));
  m.limits.max_bytes = 100;
  EXPECT_NE(csv_error("id,age\n" + std::string(90, 'x') + ",1\n", m).find("--max-input-bytes"),
            std::string::npos);
}

TEST(ReadCsvLimits, LongLinesAndLargeInputsAreRefusedEarly) {
  ReadOptions o;
  o.limits.max_line_bytes = 64;
  std::string line(1000, '1');
  for (std::size_t k = 1; k < line.size(); k += 2) line[k] = ',';
  const std::string e = csv_error(line + "\n", o);
  EXPECT_NE(e.find("longer than 64 bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("--max-line-bytes"), std::string::npos) << e;
  ReadOptions total;
  total.limits.max_bytes = 100;
  std::string rows;
  for (int k = 0; k < 100; ++k) rows += "1,2\n";
  EXPECT_NE(csv_error(rows, total).find("--max-input-bytes"), std::string::npos);
  // The parsed values obey the limit too (8 bytes per kept cell).
  total.limits.max_bytes = 4000;
  std::string ones;
  for (int k = 0; k < 600; ++k) ones += "1\n";
  EXPECT_NE(csv_error(ones, total).find("--max-input-bytes"), std::string::npos);
  const std::string nul = csv_error(std::string("1,2\n3,\0secret\n", 14));
  EXPECT_NE(nul.find("line 2, column 2: non-numeric"), std::string::npos) << nul;
  EXPECT_EQ(nul.find("secret"), std::string::npos) << nul;
}

std::string npy_file(const std::string& dict, const std::string& payload) {
  std::string header = dict;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY\x01";
  out.push_back('\0');
  out.push_back(static_cast<char>(header.size() & 0xFF));
  out.push_back(static_cast<char>(header.size() >> 8));
  return out + header + payload;
}

std::string npy_error(const std::string& bytes, std::int64_t hint, const ReadOptions& o = {}) {
  std::istringstream in(bytes);
  try {
    read_npy(in, "t.npy", o, hint);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument";
  return {};
}

TEST(ReadNpyHardened, LyingShapeIsRefusedBeforeAllocation) {
  for (const char* d : {"{'descr': '<u1', 'fortran_order': False, 'shape': (4000000000,), }",
                        "{'descr': '<f4', 'fortran_order': False, 'shape': (4000000000,), }",
                        "{'descr': '<f8', 'fortran_order': False, 'shape': (1048576, 1048576), }"}) {
    const std::string bytes = npy_file(d, std::string(16, '\0'));
    ReadOptions big;
    big.limits.max_bytes = std::uint64_t{1} << 50;
    // Sized (a regular file): the header is checked against the file size.
    const std::string sized = npy_error(bytes, static_cast<std::int64_t>(bytes.size()), big);
    EXPECT_NE(sized.find("truncated"), std::string::npos) << sized;
    // A stream (stdin, a FIFO): memory grows only with the bytes that arrive.
    const std::string stream = npy_error(bytes, -1, big);
    EXPECT_NE(stream.find("truncated"), std::string::npos) << stream;
    // Under the default limits the declared size alone is refused.
    EXPECT_NE(npy_error(bytes, -1).find("--max-input-bytes"), std::string::npos);
  }
}

TEST(ReadNpyHardened, ColumnsAndDropMissingApply) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> v = {1, 2, 3, nan, 5, 6, 7, 8, 9};
  std::string payload(v.size() * 8, '\0');
  std::memcpy(payload.data(), v.data(), payload.size());
  const std::string bytes = npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (3, 3), }", payload);
  ReadOptions o = with_columns("3,2");
  std::istringstream in(bytes);
  const Table t = read_npy(in, "t.npy", o, static_cast<std::int64_t>(bytes.size()));
  ASSERT_EQ(t.values.rows(), 3);
  EXPECT_EQ(t.values(1, 0), 6);
  EXPECT_EQ(t.values(1, 1), 5);
  o = with_columns("1");
  o.missing = MissingPolicy::drop;
  std::istringstream in2(bytes);
  const Table d = read_npy(in2, "t.npy", o, -1);
  ASSERT_EQ(d.values.rows(), 2);
  EXPECT_EQ(d.values(1, 0), 7);
  EXPECT_NE(npy_error(bytes, -1, with_columns("x")).find("has no header"), std::string::npos);
}

// A zip archive holding `members` (name, .npy bytes), stored or deflated.
std::string zip(const std::vector<std::pair<std::string, std::string>>& members, bool use_deflate) {
  auto le = [](std::string& s, std::uint32_t v, int bytes) {
    for (int b = 0; b < bytes; ++b) s.push_back(static_cast<char>((v >> (8 * b)) & 0xFF));
  };
  std::string out, cd;
  for (const auto& [name, data] : members) {
    std::string body = data;
    if (use_deflate) {
      z_stream z{};
      deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
      body.assign(deflateBound(&z, data.size()), '\0');
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
      z.avail_in = static_cast<uInt>(data.size());
      z.next_out = reinterpret_cast<Bytef*>(body.data());
      z.avail_out = static_cast<uInt>(body.size());
      deflate(&z, Z_FINISH);
      body.resize(z.total_out);
      deflateEnd(&z);
    }
    const std::uint32_t offset = static_cast<std::uint32_t>(out.size());
    const std::uint32_t crc = crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
    std::string common;
    le(common, 20, 2); le(common, 0, 2); le(common, use_deflate ? 8 : 0, 2); le(common, 0, 4);
    le(common, crc, 4); le(common, static_cast<std::uint32_t>(body.size()), 4);
    le(common, static_cast<std::uint32_t>(data.size()), 4); le(common, static_cast<std::uint32_t>(name.size()), 2);
    le(common, 0, 2);
    out += "PK\x03\x04" + common + name + body;
    cd += "PK\x01\x02";
    le(cd, 20, 2);
    cd += common + std::string(10, '\0');
    le(cd, offset, 4);
    cd += name;
  }
  std::string end = "PK\x05\x06";
  le(end, 0, 4); le(end, static_cast<std::uint32_t>(members.size()), 2);
  le(end, static_cast<std::uint32_t>(members.size()), 2); le(end, static_cast<std::uint32_t>(cd.size()), 4);
  le(end, static_cast<std::uint32_t>(out.size()), 4); le(end, 0, 2);
  return out + cd + end;
}

TEST(ReadNpz, StoredAndDeflatedMembers) {
  const std::vector<double> v = {1, 2, 3, 4};
  std::string payload(32, '\0');
  std::memcpy(payload.data(), v.data(), 32);
  const std::string a = npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", payload);
  const auto dir = std::filesystem::temp_directory_path() / ("dpstats-npz-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  for (const bool deflate : {false, true}) {
    const std::string path = (dir / (deflate ? "d.npz" : "s.npz")).string();
    std::ofstream(path, std::ios::binary) << zip({{"x.npy", a}, {"y.npy", a}}, deflate);
    ReadOptions o;
    o.array = "y";
    const Table t = read_table(path, o);
    EXPECT_EQ(t.values(1, 1), 4) << deflate;
    try {
      read_table(path);
      ADD_FAILURE() << "two arrays without --array";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("--array"), std::string::npos) << e.what();
    }
    std::ofstream(path, std::ios::binary) << zip({{"x.npy", a.substr(0, 100)}}, deflate);
    EXPECT_THROW(read_table(path), InvalidArgument) << deflate;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dpstats
