#include "dpstats/comm/communicator.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>

#include "dpstats/error.hpp"

namespace dpstats {
namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce_sum(std::span<std::int64_t>) override {}
  void broadcast(Bytes&, int root) override {
    require(root == 0, "broadcast: root {} is not a rank of a single process", root);
  }
  std::vector<Bytes> allgather(const Bytes& bytes) override { return {bytes}; }
  std::vector<Bytes> alltoall(const std::vector<Bytes>& send) override {
    require(send.size() == 1, "alltoall: {} messages for 1 rank", send.size());
    return send;
  }
};

constexpr double kExactLimit = 0x1p53;

}  // namespace

void add_gathered(const std::vector<Bytes>& gathered, std::span<std::int64_t> values) {
  for (const auto& b : gathered)
    require(b.size() == values.size() * sizeof(std::int64_t),
            "allreduce_sum: ranks passed different lengths ({} and {} bytes)", b.size(),
            values.size() * sizeof(std::int64_t));
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::int64_t sum = 0;
    for (const auto& b : gathered) {
      std::int64_t v;
      std::memcpy(&v, b.data() + i * sizeof v, sizeof v);
      require(!__builtin_add_overflow(sum, v, &sum),
              "allreduce_sum: the sum over ranks of entry {} leaves the 64-bit range; nothing was "
              "released", i);
    }
    values[i] = sum;
  }
}

Communicator& single_process() {
  static SingleProcess comm;
  return comm;
}

void allreduce_exact(Communicator& comm, Vector& values) {
  if (comm.size() == 1) return;
  std::vector<std::int64_t> words(static_cast<std::size_t>(values.size()));
  for (Eigen::Index i = 0; i < values.size(); ++i) {
    const double v = values[i];
    require(std::abs(v) < kExactLimit && v == std::nearbyint(v),
            "allreduce_exact: entry {} is not an exact integer below 2^53", i);
    words[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(v);
  }
  comm.allreduce_sum(words);
  for (Eigen::Index i = 0; i < values.size(); ++i) {
    const auto w = words[static_cast<std::size_t>(i)];
    require(w > -static_cast<std::int64_t>(kExactLimit) && w < static_cast<std::int64_t>(kExactLimit),
            "allreduce_exact: the sum over ranks of entry {} reaches 2^53 (too many rows for the "
            "exact lattice sum)", i);
    values[i] = static_cast<double>(w);
  }
}

std::int64_t allreduce_count(Communicator& comm, std::int64_t local) {
  std::int64_t v = local;
  comm.allreduce_sum(std::span<std::int64_t>(&v, 1));
  return v;
}

ShardRows shard_rows(Communicator& comm, std::int64_t local_rows) {
  const auto all = comm.allgather(to_bytes(local_rows));
  ShardRows s;
  for (int r = 0; r < comm.size(); ++r) {
    const auto n = from_bytes<std::int64_t>(all[static_cast<std::size_t>(r)]);
    if (r < comm.rank()) s.offset += n;
    s.total += n;
  }
  return s;
}

void check_agreement(Communicator& comm, const std::string& fingerprint, const std::string& what) {
  if (comm.size() == 1) return;
  const auto all = comm.allgather(Bytes(fingerprint.begin(), fingerprint.end()));
  for (int r = 1; r < comm.size(); ++r)
    require(all[static_cast<std::size_t>(r)] == all[0],
            "ranks disagree on {}: rank {} differs from rank 0 (every rank must pass the same "
            "options and data of the same shape); nothing was released",
            what, r);
}

void all_or_none(Communicator& comm, const std::function<void()>& step) {
  if (comm.size() == 1) return step();
  Bytes status{0};
  std::exception_ptr mine;
  try {
    step();
  } catch (const InvalidArgument& e) {
    mine = std::current_exception();
    const std::string what = e.what();
    status.assign(what.begin(), what.end());
    status.insert(status.begin(), std::uint8_t{1});
  }
  const auto all = comm.allgather(status);
  if (mine) std::rethrow_exception(mine);  // this rank's own error, as it was thrown
  for (int r = 0; r < comm.size(); ++r) {
    const Bytes& s = all[static_cast<std::size_t>(r)];
    if (s.empty() || s[0] == 0) continue;
    const std::string what(s.begin() + 1, s.end());
    throw InvalidArgument(r == 0 ? what : fmt::format("rank {}: {}", r, what));
  }
}

Bytes on_root_bytes(Communicator& comm, const std::function<Bytes()>& draw) {
  // Message: one status byte (0 = value, 1 = error) followed by the value or the error text.
  Bytes message;
  std::exception_ptr error;
  if (comm.rank() == 0) {
    try {
      message = draw();
      message.insert(message.begin(), std::uint8_t{0});
    } catch (const std::exception& e) {
      error = std::current_exception();
      const std::string what = e.what();
      message.assign(what.begin(), what.end());
      message.insert(message.begin(), std::uint8_t{1});
    }
  }
  comm.broadcast(message, 0);
  if (error) std::rethrow_exception(error);
  require(!message.empty(), "on_root: empty message from rank 0");
  if (message[0] == 1) throw InvalidArgument(std::string(message.begin() + 1, message.end()));
  return Bytes(message.begin() + 1, message.end());
}

}  // namespace dpstats
