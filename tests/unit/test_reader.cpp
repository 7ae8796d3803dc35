// Readers for the tool's INPUT: strict CSV (header auto-detection, every bad cell rejected with its
// position and without its value) and .npy (versions, dtypes, Fortran order, 1-D, bad files).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "dpstats/data/checked_rows.hpp"
#include "dpstats/data/reader.hpp"
#include "dpstats/error.hpp"

namespace dpstats {
namespace {

namespace fs = std::filesystem;

Table csv(const std::string& text) {
  std::istringstream in(text);
  return read_csv(in, "t.csv");
}

// The InvalidArgument message thrown by f (fails the test if nothing or something else is thrown).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no exception thrown";
  return {};
}

std::string csv_error(const std::string& text) {
  return error_of([&] { csv(text); });
}

// A .npy file image: magic, version, header padded to 64 bytes, payload.
std::string npy_bytes(int major, const std::string& dict, const std::string& payload) {
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  const std::size_t unpadded = 8 + len_bytes + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  for (std::size_t b = 0; b < len_bytes; ++b)
    out.push_back(static_cast<char>((header.size() >> (8 * b)) & 0xFF));
  return out + header + payload;
}

template <class T>
std::string raw(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  std::memcpy(s.data(), v.data(), s.size());  // the test host is little-endian (x86-64/arm64)
  return s;
}

std::string dict(const std::string& descr, bool fortran, const std::string& shape) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

// Reads as a regular file would (size known); the stream path must agree.
Table npy(const std::string& bytes, const ReadOptions& o = {}) {
  std::istringstream stream(bytes);
  std::string stream_error;
  try {
    (void)read_npy(stream, "t.npy", o, -1);
  } catch (const InvalidArgument& e) {
    stream_error = e.what();
  }
  std::istringstream in(bytes);
  try {
    return read_npy(in, "t.npy", o, static_cast<std::int64_t>(bytes.size()));
  } catch (const InvalidArgument&) {
    EXPECT_FALSE(stream_error.empty()) << "the stream path accepted what the sized path refused";
    throw;
  }
}

std::string npy_error(const std::string& bytes) {
  return error_of([&] { npy(bytes); });
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("dpstats_reader_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name, const std::string& contents) const {
    const std::string p = (path_ / name).string();
    std::ofstream(p, std::ios::binary) << contents;
    return p;
  }
  std::string path(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// ---------------------------------------------------------------- CSV

TEST(ReadCsv, ParsesNumbersWithoutHeader) {
  const Table t = csv("1,2.5,-3\n4e2,+0.5,.25\n");
  EXPECT_TRUE(t.header.empty());
  ASSERT_EQ(t.values.rows(), 2);
  ASSERT_EQ(t.values.cols(), 3);
  EXPECT_EQ(t.values(0, 1), 2.5);
  EXPECT_EQ(t.values(0, 2), -3);
  EXPECT_EQ(t.values(1, 0), 400);
  EXPECT_EQ(t.values(1, 1), 0.5);
  EXPECT_EQ(t.values(1, 2), 0.25);
}

TEST(ReadCsv, DetectsHeaderOnlyWhenEveryCellIsANameAndTheNextLineIsNumeric) {
  const Table t = csv("x,y\n1,2\n3,4\n");
  EXPECT_EQ(t.header, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(t.values.rows(), 2);
  // A mixed first line is neither eaten as a header nor taken as data: it is refused.
  const std::string mixed = csv_error("1,label\n5,6\n");
  EXPECT_NE(mixed.find("--header or --no-header"), std::string::npos) << mixed;
  EXPECT_EQ(mixed.find("label"), std::string::npos) << mixed;
  const Table quoted = csv("\"a\", \"b\"\n1,2\n");
  EXPECT_EQ(quoted.header, (std::vector<std::string>{"a", "b"}));
}

TEST(ReadCsv, HeaderCellsMustBeNonEmpty) {
  // Detected: an empty cell is missing, so the line is not all names and the input is refused.
  const std::string e = csv_error("a,,c\n1,2,3\n");
  EXPECT_NE(e.find("--header or --no-header"), std::string::npos) << e;
  ReadOptions declared;
  declared.header = HeaderMode::present;
  std::istringstream in("a,,c\n1,2,3\n");
  const std::string d = error_of([&] { read_csv(in, "t.csv", declared); });
  EXPECT_NE(d.find("line 1, column 2: empty header cell"), std::string::npos) << d;
}

TEST(ReadCsv, TrimsSpacesAndCarriageReturns) {
  const Table t = csv(" a , b \r\n 1 ,\t2 \r\n3,4\r\n");
  EXPECT_EQ(t.header, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(t.values.rows(), 2);
  EXPECT_EQ(t.values(0, 0), 1);
  EXPECT_EQ(t.values(0, 1), 2);
  EXPECT_EQ(t.values(1, 1), 4);
}

TEST(ReadCsv, LastLineWithoutNewlineAndSingleColumn) {
  const Table t = csv("1\n2\n3");
  ASSERT_EQ(t.values.rows(), 3);
  ASSERT_EQ(t.values.cols(), 1);
  EXPECT_EQ(t.values(2, 0), 3);
}

TEST(ReadCsv, EmptyInputsAreRejected) {
  for (const std::string text : {"", "\n", "  \r\n", "a,b\n", "a,b", "\n\n\n"}) {
    const std::string e = csv_error(text);
    EXPECT_NE(e.find("no data rows"), std::string::npos) << "input '" << text << "': " << e;
  }
}

TEST(ReadCsv, TrailingBlankLinesAreSkippedInnerOnesAreRows) {
  const std::string blank_inside = csv_error("1,2\n\n3,4\n");
  EXPECT_NE(blank_inside.find("line 2"), std::string::npos) << blank_inside;
  EXPECT_EQ(csv("1,2\n3,4\n\n\r\n \n").values.rows(), 2);
  // With one column an inner blank line is a missing value.
  const std::string missing = csv_error("1\n\n3\n");
  EXPECT_NE(missing.find("line 2, column 1: missing value"), std::string::npos) << missing;
}

TEST(ReadCsv, EmptyCellNamesLineAndColumn) {
  const std::string e = csv_error("a,b\n1,2\n3, \n");
  EXPECT_NE(e.find("'t.csv'"), std::string::npos) << e;
  EXPECT_NE(e.find("line 3, column 2"), std::string::npos) << e;
  EXPECT_NE(e.find("missing value"), std::string::npos) << e;
}

TEST(ReadCsv, NonNumericCellIsNeverQuoted) {
  const std::string e = csv_error("1,2\n3,abc\n");
  EXPECT_NE(e.find("line 2, column 2"), std::string::npos) << e;
  EXPECT_EQ(e.find("abc"), std::string::npos) << e;
  const std::string e2 = csv_error("1,2\n3,4e5x\n");
  EXPECT_EQ(e2.find("4e5x"), std::string::npos) << e2;
  for (const std::string cell : {"1.2.3", "1 2", "--1", "+-1", "0x10", "1e", "+", "\"3x\""}) {
    const std::string ei = csv_error("1,2\n3," + cell + "\n");
    EXPECT_NE(ei.find("line 2, column 2"), std::string::npos) << cell << ": " << ei;
    EXPECT_NE(ei.find("non-numeric"), std::string::npos) << cell << ": " << ei;
  }
}

TEST(ReadCsv, NanIsMissingInfinityIsRejectedWithoutEchoingTheValue) {
  for (const std::string cell : {"nan", "NaN", "-nan", "+NAN", "NA", "N/A", "null", "None", ""}) {
    const std::string e = csv_error("1,2\n3," + cell + "\n");
    EXPECT_NE(e.find("line 2, column 2: missing value"), std::string::npos) << cell << ": " << e;
  }
  for (const std::string cell : {"inf", "-inf", "+Inf", "INFINITY", "-Infinity", "infinity"}) {
    const std::string e = csv_error("1,2\n3," + cell + "\n");
    EXPECT_NE(e.find("line 2, column 2"), std::string::npos) << cell << ": " << e;
    EXPECT_NE(e.find("infinite"), std::string::npos) << cell << ": " << e;
    EXPECT_EQ(e.find("'" + cell + "'"), std::string::npos) << cell << ": " << e;
  }
  // A NaN in the first line is data, not a header.
  const std::string first = csv_error("nan,1\n2,3\n");
  EXPECT_NE(first.find("line 1, column 1"), std::string::npos) << first;
}

TEST(ReadCsv, OverflowIsRejectedUnderflowIsNot) {
  const std::string e = csv_error("1,2\n1e400,3\n");
  EXPECT_NE(e.find("line 2, column 1"), std::string::npos) << e;
  EXPECT_EQ(e.find("1e400"), std::string::npos) << e;
  const std::string neg = csv_error("1,2\n3,-1e999\n");
  EXPECT_NE(neg.find("line 2, column 2"), std::string::npos) << neg;
  const Table t = csv("1e-400,2\n");
  EXPECT_EQ(t.values(0, 0), 0);
}

TEST(ReadCsv, RaggedRowsAreRejected) {
  const std::string e = csv_error("1,2\n3,4\n5,6,7\n");
  EXPECT_NE(e.find("line 3"), std::string::npos) << e;
  EXPECT_NE(e.find("3 columns"), std::string::npos) << e;
  EXPECT_NE(e.find("expected 2"), std::string::npos) << e;
  const std::string short_row = csv_error("a,b,c\n1,2\n");
  EXPECT_NE(short_row.find("line 2"), std::string::npos) << short_row;
  const std::string trailing_comma = csv_error("1,2\n3,4,\n");
  EXPECT_NE(trailing_comma.find("line 2"), std::string::npos) << trailing_comma;
}

TEST(ReadCsv, PreservesFullDoublePrecision) {
  const double x = 0.1 + 0.2;
  std::ostringstream s;
  s.precision(17);
  s << x << "," << -std::numeric_limits<double>::max() << "\n";
  const Table t = csv(s.str());
  EXPECT_EQ(t.values(0, 0), x);
  EXPECT_EQ(t.values(0, 1), -std::numeric_limits<double>::max());
}

// ---------------------------------------------------------------- .npy

TEST(ReadNpy, RoundTripsWriteNpy) {
  TempDir dir;
  RowMatrix X(3, 2);
  X << 1.5, -2, 0.1, 1e300, -0.0, 7;
  const std::string p = dir.path("x.npy");
  write_npy(p, X);
  const Table t = read_table(p);
  EXPECT_TRUE(t.header.empty());
  EXPECT_EQ(t.values, X);
  // NumPy's own layout: header padded so that the data start at a multiple of 64 bytes.
  EXPECT_EQ(fs::file_size(p) % 64, (3u * 2u * 8u) % 64);
}

// The reader's finiteness scan travels with the values it passed (one scan per tool release):
// a RowsView of them is checked, whether the file is used in place or rows were dropped; a
// matrix made any other way is not, so a release checks it.
TEST(ReadNpy, ValuesTheScanPassedCarryTheCheck) {
  TempDir dir;
  RowMatrix X(3, 2);
  X << 1, 2, std::numeric_limits<double>::quiet_NaN(), 4, 5, 6;
  const std::string p = dir.path("x.npy"), q = dir.path("finite.npy");
  write_npy(p, X);
  write_npy(q, X.bottomRows(1));
  ReadOptions drop;
  drop.missing = MissingPolicy::drop;
  const Table t = read_table(p, drop);
  ASSERT_EQ(t.values.rows(), 2);
  EXPECT_TRUE(t.values.checked_finite());
  const DataMatrix copy = t.values;
  EXPECT_TRUE(RowsView(copy).checked());
  EXPECT_TRUE(RowsView(read_table(q).values).checked());  // the file in place
  const DataMatrix made(RowMatrix(X.bottomRows(1)));
  EXPECT_FALSE(made.checked_finite());
  EXPECT_FALSE(RowsView(made).checked());
  EXPECT_FALSE(RowsView(X).checked());
  EXPECT_THROW(read_table(p), InvalidArgument);  // the NaN without drop: no values at all
}

// A caller whose release checks its rows before it charges (ReadOptions::release_checks_finite)
// gets a regular file's values unscanned: the same values, NaN included, not marked checked; the
// selection still applies, --drop-missing still scans and drops, and a stream (read once) is
// scanned whatever the caller says.
TEST(ReadNpy, ARegularFileIsLeftToTheReleasesCheckWhenItDeclaresOne) {
  TempDir dir;
  RowMatrix X(3, 2);
  X << 1, 2, std::numeric_limits<double>::quiet_NaN(), 4, 5, std::numeric_limits<double>::infinity();
  const std::string p = dir.path("x.npy");
  write_npy(p, X);
  ReadOptions later;
  later.release_checks_finite = true;
  const Table t = read_table(p, later);
  ASSERT_EQ(t.values.rows(), 3);
  EXPECT_TRUE(std::isnan(t.values(1, 0)));
  EXPECT_FALSE(t.values.checked_finite());
  later.columns = {{"2", 2}};
  const Table second = read_table(p, later);
  ASSERT_EQ(second.values.cols(), 1);
  EXPECT_EQ(second.values(1, 0), 4);
  EXPECT_TRUE(std::isinf(second.values(2, 0)));
  later.columns = {{"1", 1}};
  later.missing = MissingPolicy::drop;
  const Table dropped = read_table(p, later);
  EXPECT_EQ(dropped.values.rows(), 2);
  EXPECT_TRUE(dropped.values.checked_finite());
  later = ReadOptions{};
  later.release_checks_finite = true;
  std::ifstream in(p, std::ios::binary);
  EXPECT_NE(error_of([&] { read_npy(in, "s", later); }).find("'s', row 2, column 1: missing value"),
            std::string::npos);
  // Without the declaration: the input layer's message, which the tool reads the file again for.
  EXPECT_NE(error_of([&] { read_table(p); }).find("row 2, column 1: missing value (NaN)"),
            std::string::npos);
}

TEST(ReadNpy, WriteNpyAcceptsStridedViews) {
  TempDir dir;
  RowMatrix big(4, 3);
  big << 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12;
  const std::string p = dir.path("block.npy");
  write_npy(p, big.block(1, 1, 2, 2));
  const Table t = read_table(p);
  RowMatrix expect(2, 2);
  expect << 5, 6, 8, 9;
  EXPECT_EQ(t.values, expect);
}

TEST(ReadNpy, ConvertsIntegerFloatAndBoolDtypes) {
  const Table f4 = npy(npy_bytes(1, dict("<f4", false, "(2, 2)"), raw<float>({1.5f, 2, 3, -4})));
  EXPECT_EQ(f4.values(1, 1), -4);
  EXPECT_EQ(f4.values(0, 0), 1.5);
  const Table i8 = npy(npy_bytes(1, dict("<i8", false, "(1, 3)"),
                                 raw<std::int64_t>({-5, 0, std::int64_t{1} << 40})));
  EXPECT_EQ(i8.values(0, 0), -5);
  EXPECT_EQ(i8.values(0, 2), std::ldexp(1.0, 40));
  const Table i4 = npy(npy_bytes(1, dict("<i4", false, "(3,)"), raw<std::int32_t>({-7, 8, 9})));
  ASSERT_EQ(i4.values.cols(), 1);
  EXPECT_EQ(i4.values(0, 0), -7);
  const Table i2 = npy(npy_bytes(1, dict("<i2", false, "(2, 1)"), raw<std::int16_t>({-300, 300})));
  EXPECT_EQ(i2.values(0, 0), -300);
  for (const char* u1 : {"<u1", "|u1"}) {
    const Table t = npy(npy_bytes(1, dict(u1, false, "(1, 2)"), std::string("\x00\xff", 2)));
    EXPECT_EQ(t.values(0, 1), 255) << u1;
  }
  const Table b1 = npy(npy_bytes(1, dict("|b1", false, "(1, 3)"), std::string("\x01\x00\x01", 3)));
  EXPECT_EQ(b1.values(0, 0), 1);
  EXPECT_EQ(b1.values(0, 1), 0);
  EXPECT_EQ(b1.values(0, 2), 1);
}

TEST(ReadNpy, OneDimensionalIsAColumn) {
  const Table t = npy(npy_bytes(1, dict("<f8", false, "(4,)"), raw<double>({1, 2, 3, 4})));
  ASSERT_EQ(t.values.rows(), 4);
  ASSERT_EQ(t.values.cols(), 1);
  EXPECT_EQ(t.values(3, 0), 4);
}

TEST(ReadNpy, FortranOrderIsTransposedIntoRowMajor) {
  // The 2 x 3 matrix [[1, 2, 3], [4, 5, 6]] stored column by column.
  for (const char* descr : {"<f8", "<i4"}) {
    const std::string payload = std::string(descr) == "<f8"
                                    ? raw<double>({1, 4, 2, 5, 3, 6})
                                    : raw<std::int32_t>({1, 4, 2, 5, 3, 6});
    const Table t = npy(npy_bytes(1, dict(descr, true, "(2, 3)"), payload));
    RowMatrix expect(2, 3);
    expect << 1, 2, 3, 4, 5, 6;
    EXPECT_EQ(t.values, expect) << descr;
  }
}

TEST(ReadNpy, AcceptsFormatVersions2And3AndKeyOrder) {
  for (int major : {2, 3}) {
    const Table t = npy(npy_bytes(major, dict("<f8", false, "(1, 2)"), raw<double>({3, 4})));
    EXPECT_EQ(t.values(0, 1), 4) << major;
  }
  const Table reordered = npy(npy_bytes(
      1, "{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<f8\"}", raw<double>({5, 6})));
  EXPECT_EQ(reordered.values(1, 0), 6);
}

TEST(ReadNpy, RejectsUnsupportedDtypesWithoutQuotingTheHeader) {
  for (const char* descr : {">f8", ">i4", "<c16", "<U3", "<f2", "|O"}) {
    const std::string e = npy_error(npy_bytes(1, dict(descr, false, "(1,)"), std::string(16, '\0')));
    EXPECT_EQ(e.find(std::string("'") + descr + "'"), std::string::npos) << e;
    EXPECT_NE(e.find("dtype"), std::string::npos) << e;
  }
  const std::string structured =
      npy_error(npy_bytes(1, "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (1,), }",
                          std::string(8, '\0')));
  EXPECT_NE(structured.find("dtype"), std::string::npos) << structured;
}

TEST(ReadNpy, RejectsBadFiles) {
  const std::string truncated =
      npy_error(npy_bytes(1, dict("<f8", false, "(2, 2)"), raw<double>({1, 2, 3})));
  EXPECT_NE(truncated.find("truncated"), std::string::npos) << truncated;
  const std::string trailing =
      npy_error(npy_bytes(1, dict("<f8", false, "(1, 1)"), raw<double>({1, 2})));
  EXPECT_NE(trailing.find("extra bytes"), std::string::npos) << trailing;
  const std::string bad_magic = npy_error("\x93NUMPX\x01\x00rest-of-file");
  EXPECT_NE(bad_magic.find("magic"), std::string::npos) << bad_magic;
  const std::string version = npy_error(npy_bytes(4, dict("<f8", false, "(1,)"), raw<double>({1})));
  EXPECT_NE(version.find("version 4.0"), std::string::npos) << version;
  const std::string three_d =
      npy_error(npy_bytes(1, dict("<f8", false, "(1, 1, 1)"), raw<double>({1})));
  EXPECT_NE(three_d.find("3 dimensions"), std::string::npos) << three_d;
  const std::string scalar = npy_error(npy_bytes(1, dict("<f8", false, "()"), raw<double>({1})));
  EXPECT_NE(scalar.find("0 dimensions"), std::string::npos) << scalar;
  const std::string header = npy_error(npy_bytes(1, "{'descr': '<f8', 'shape': (1,)}", raw<double>({1})));
  EXPECT_NE(header.find("header"), std::string::npos) << header;
  EXPECT_NE(npy_error("").find("is empty"), std::string::npos);
}

TEST(ReadNpy, ZeroRowsOrColumnsAreEmpty) {
  for (const char* shape : {"(0, 3)", "(0,)", "(3, 0)"}) {
    const std::string e = npy_error(npy_bytes(1, dict("<f8", false, shape), ""));
    EXPECT_NE(e.find("is empty"), std::string::npos) << shape << ": " << e;
  }
}

TEST(ReadNpy, NanAndInfinityNameRowAndColumn) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::string e = npy_error(npy_bytes(1, dict("<f8", false, "(2, 3)"),
                                            raw<double>({1, 2, 3, 4, nan, 6})));
  EXPECT_NE(e.find("row 2, column 2: missing value"), std::string::npos) << e;
  // Fortran order: the position is reported in the logical (row, column) of the matrix.
  const std::string f = npy_error(npy_bytes(1, dict("<f4", true, "(2, 3)"),
                                            raw<float>({1, 2, 3, 4, static_cast<float>(inf), 6})));
  EXPECT_NE(f.find("row 1, column 3: infinite"), std::string::npos) << f;
}

// ---------------------------------------------------------------- read_table

TEST(ReadTable, MissingFileAndDirectoryAreRejected) {
  TempDir dir;
  const std::string missing = dir.path("nope.csv");
  EXPECT_EQ(error_of([&] { read_table(missing); }),
            "cannot open input file '" + missing + "'");
  const std::string e = error_of([&] { read_table(dir.path("")); });
  EXPECT_NE(e.find("directory"), std::string::npos) << e;
}

TEST(ReadTable, ChoosesFormatByExtensionOrMagic) {
  TempDir dir;
  const Table c = read_table(dir.file("a.csv", "u,v\n1,2\n"));
  EXPECT_EQ(c.header, (std::vector<std::string>{"u", "v"}));
  const std::string bytes = npy_bytes(1, dict("<f8", false, "(1, 2)"), raw<double>({7, 8}));
  const Table sniffed = read_table(dir.file("array.bin", bytes));
  EXPECT_EQ(sniffed.values(0, 1), 8);
  const std::string not_npy = error_of([&] { read_table(dir.file("fake.npy", "1,2\n")); });
  EXPECT_NE(not_npy.find("not a .npy file"), std::string::npos) << not_npy;
  const std::string csv_err = error_of([&] { read_table(dir.file("bad.csv", "1,2\n3,x\n")); });
  EXPECT_NE(csv_err.find("bad.csv"), std::string::npos) << csv_err;
}

// Redirects std::cin for the lifetime of the object.
class StdinFrom {
 public:
  explicit StdinFrom(const std::string& text) : buf_(text), old_(std::cin.rdbuf(&buf_)) {}
  ~StdinFrom() { std::cin.rdbuf(old_); }

 private:
  std::stringbuf buf_;
  std::streambuf* old_;
};

TEST(ReadTable, DashReadsStdinAsCsvOrNpy) {
  {
    StdinFrom in("h\n1\n2\n");
    const Table t = read_table("-");
    EXPECT_EQ(t.header, (std::vector<std::string>{"h"}));
    EXPECT_EQ(t.values.rows(), 2);
  }
  {
    StdinFrom in(npy_bytes(1, dict("<i8", false, "(2,)"), raw<std::int64_t>({3, 4})));
    const Table t = read_table("-");
    EXPECT_EQ(t.values(1, 0), 4);
  }
  {
    StdinFrom in("");
    const std::string e = error_of([] { read_table("-"); });
    EXPECT_NE(e.find("'<stdin>' is empty"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace dpstats
