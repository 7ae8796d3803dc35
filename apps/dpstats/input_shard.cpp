// read_input_shard (cli.hpp): this rank's rows of INPUT or of a list of shard files.
#include <fmt/format.h>
#include <glob.h>

#include <algorithm>

#include "cli.hpp"
#include "dry_run_cli.hpp"
#include "dpstats/error.hpp"

namespace dpstats::cli {
namespace {

// INPUT and `more`, each glob expanded in byte order (a name without wildcards stays as given).
std::vector<std::string> shard_files(const InputArgs& in) {
  std::vector<std::string> out;
  std::vector<std::string> patterns{in.path};
  patterns.insert(patterns.end(), in.more.begin(), in.more.end());
  for (const auto& p : patterns) {
    if (p.find_first_of("*?[") == std::string::npos) {
      out.push_back(p);
      continue;
    }
    glob_t g{};
    const int rc = ::glob(p.c_str(), 0, nullptr, &g);
    std::vector<std::string> matches(g.gl_pathv, g.gl_pathv + (rc == 0 ? g.gl_pathc : 0));
    ::globfree(&g);
    require(!matches.empty(), "--shards: no file matches '{}'", p);
    std::sort(matches.begin(), matches.end());
    out.insert(out.end(), matches.begin(), matches.end());
  }
  return out;
}

// The rows of `files` one after the other; every file must have the same columns.
Table concatenate(const std::vector<std::string>& files, const ReadOptions& o) {
  std::vector<Table> parts;
  Eigen::Index rows = 0;
  for (const auto& f : files) {
    parts.push_back(read_table(f, o));
    const Table& t = parts.back();
    require(t.values.cols() == parts[0].values.cols() && t.header == parts[0].header,
            "--shards: '{}' has {} columns{}, '{}' has {}{} (every shard must hold the same columns)",
            f, t.values.cols(), t.header.empty() ? "" : " (named)", files[0],
            parts[0].values.cols(), parts[0].header.empty() ? "" : " (named)");
    rows += t.values.rows();
  }
  if (parts.size() == 1) return std::move(parts[0]);  // one file: its table as read (no copy)
  Table out;
  if (parts.empty()) return out;
  out.header = parts[0].header;
  RowMatrix values(rows, parts[0].values.cols());
  Eigen::Index at = 0;
  for (const auto& t : parts) {
    values.middleRows(at, t.values.rows()) = t.values;
    at += t.values.rows();
  }
  out.values = DataMatrix(std::move(values));
  return out;
}

// What a rank read, for the agreement on columns: "-" when it read no file.
std::string column_key(const Table& t, bool read_any) {
  if (!read_any) return "-";
  std::string key = std::to_string(t.values.cols());
  for (const auto& h : t.header) key += "\x1f" + h;
  return key;
}

Eigen::Index count_of(const std::string& key) { return std::stol(key.substr(0, key.find('\x1f'))); }
std::vector<std::string> names_of(const std::string& key) {
  std::vector<std::string> names;
  for (auto at = key.find('\x1f'); at != std::string::npos;) {
    const auto next = key.find('\x1f', at + 1);
    names.push_back(key.substr(at + 1, next == std::string::npos ? next : next - at - 1));
    at = next;
  }
  return names;
}

}  // namespace

std::vector<std::string> rank_shard_files(const InputArgs& in, Communicator& c) {
  const std::vector<std::string> files = shard_files(in);
  const std::size_t F = files.size();
  const auto P = static_cast<std::size_t>(c.size()), r = static_cast<std::size_t>(c.rank());
  // Rank r reads files [ceil(F·r/P), ceil(F·(r+1)/P)): rank 0 reads first when F < P.
  return {files.begin() + static_cast<long>((F * r + P - 1) / P),
          files.begin() + static_cast<long>((F * (r + 1) + P - 1) / P)};
}

InputShard read_input_shard(const InputArgs& in, Communicator* comm) {
  if (dry_run_open()) {  // the first file's header alone, and the declared rows of zeros
    InputArgs first = in;
    if (in.shards) first.path = shard_files(in).front();
    InputShard out;
    out.table = dry_run_table(first);
    out.total = out.table.values.rows();
    return out;
  }
  require(in.shards || in.more.empty(),
          "one INPUT expected, got {} (pass --shards to read several files as one table)",
          in.more.size() + 1);
  Communicator& c = comm_or_single(comm);
  // mpirun gives stdin to rank 0 alone: a table on stdin cannot be read by every rank.
  require(c.size() == 1 || in.path != "-",
          "INPUT '-' (stdin) cannot be read on several ranks (launched as {}); give a file or "
          "--shards FILES", c.size());
  const auto P = static_cast<std::size_t>(c.size()), r = static_cast<std::size_t>(c.rank());
  InputShard out;
  ReadOptions options = read_options(in);
  // One process: a release that checks its rows before any charge is their one scan (cli.hpp).
  options.release_checks_finite = in.release_checks_finite && P == 1;
  out.unscanned = options.release_checks_finite;
  bool read_any = true;
  all_or_none(c, [&] {
    if (!in.shards) {
      // Every rank reads the whole file and keeps its block: a mapped .npy costs no copy; a CSV
      // is parsed by every rank.
      Table all = read_table(in.path, options);
      if (P == 1) {  // the whole table, as read (its values' finiteness check travels with it)
        out.table = std::move(all);
        return;
      }
      const auto n = static_cast<std::size_t>(all.values.rows());
      const auto lo = static_cast<Eigen::Index>(n * r / P), hi = static_cast<Eigen::Index>(n * (r + 1) / P);
      out.table.header = std::move(all.header);
      const auto d = all.values.cols();  // rank r's block, a view sharing the storage (no copy)
      out.table.values = DataMatrix(all.values.owner(), all.values.data() + lo * d, hi - lo, d);
      return;
    }
    const std::vector<std::string> mine = rank_shard_files(in, c);
    read_any = !mine.empty();
    out.table = concatenate(mine, options);
  });
  // The columns: every rank that read a file must agree with the first such rank; a rank that read
  // none takes its columns (it holds no rows).
  const std::string key = column_key(out.table, read_any);
  const auto all = c.allgather(Bytes(key.begin(), key.end()));
  std::vector<std::string> keys;
  for (const auto& b : all) keys.emplace_back(b.begin(), b.end());
  const auto first = std::find_if(keys.begin(), keys.end(), [](const auto& k) { return k != "-"; });
  for (std::size_t k = 0; k < keys.size() && first != keys.end(); ++k)
    require(keys[k] == "-" || keys[k] == *first,
            "ranks disagree on the input's columns: rank {} read {} column(s), rank {} read {} "
            "(every shard must hold the same columns, named alike); nothing was released",
            k, keys[k] == "-" ? 0 : count_of(keys[k]), first - keys.begin(), count_of(*first));
  if (!read_any && first != keys.end()) {
    out.table.values.resize(0, count_of(*first));
    out.table.header = names_of(*first);
  }
  out.total = shard_rows(c, out.table.values.rows()).total;
  return out;
}

void rescan_input(const InputArgs& input) {
  InputArgs scanned = input;
  scanned.release_checks_finite = false;
  read_input_shard(scanned, nullptr);  // throws the input layer's error on the bad cell
}

}  // namespace dpstats::cli
