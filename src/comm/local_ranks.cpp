// run_local_ranks: P ranks as P threads sharing memory, for tests of the distributed paths.
// Every collective is one round: each rank deposits its contribution in its slot, waits until all
// have, reads what it needs, and waits until all have read (so the slots can be reused). A rank
// that fails sets `failed`, which wakes the others, who throw instead of waiting forever.
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"

namespace dpstats {
namespace {

struct Shared {
  explicit Shared(int p) : ranks(p), slots(static_cast<std::size_t>(p)) {}
  int ranks;
  std::vector<Bytes> slots;
  std::mutex mutex;
  std::condition_variable cv;
  int arrived = 0;
  long generation = 0;
  bool failed = false;

  // Blocks until every rank has called wait() in this generation.
  void wait() {
    std::unique_lock lock(mutex);
    const long gen = generation;
    if (++arrived == ranks) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return generation != gen || failed; });
    if (generation == gen) throw InvalidArgument("another rank failed; nothing was released");
  }
  void fail() {
    const std::lock_guard lock(mutex);
    failed = true;
    cv.notify_all();
  }
};

class LocalRank final : public Communicator {
 public:
  LocalRank(Shared& s, int rank) : s_(s), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return s_.ranks; }

  std::vector<Bytes> allgather(const Bytes& bytes) override {
    s_.slots[static_cast<std::size_t>(rank_)] = bytes;
    s_.wait();
    std::vector<Bytes> all = s_.slots;
    s_.wait();
    return all;
  }
  void allreduce_sum(std::span<std::int64_t> values) override {
    add_gathered(allgather(to_bytes(std::vector<std::int64_t>(values.begin(), values.end()))),
                 values);
  }
  void broadcast(Bytes& bytes, int root) override {
    require(root >= 0 && root < s_.ranks, "broadcast: root {} is not a rank", root);
    const auto all = allgather(rank_ == root ? bytes : Bytes{});
    bytes = all[static_cast<std::size_t>(root)];
  }
  std::vector<Bytes> alltoall(const std::vector<Bytes>& send) override {
    require(static_cast<int>(send.size()) == s_.ranks, "alltoall: {} messages for {} ranks",
            send.size(), s_.ranks);
    // Through allgather of the whole send list, serialised as (length, bytes) per destination.
    Bytes packed;
    for (const auto& m : send) {
      const auto len = to_bytes(static_cast<std::uint64_t>(m.size()));
      packed.insert(packed.end(), len.begin(), len.end());
      packed.insert(packed.end(), m.begin(), m.end());
    }
    const auto all = allgather(packed);
    std::vector<Bytes> received(send.size());
    for (std::size_t src = 0; src < all.size(); ++src) {
      std::size_t at = 0;
      for (int dst = 0; dst <= rank_; ++dst) {
        std::uint64_t len;
        std::memcpy(&len, all[src].data() + at, sizeof len);
        at += sizeof len;
        if (dst == rank_) received[src].assign(all[src].begin() + static_cast<long>(at),
                                               all[src].begin() + static_cast<long>(at + len));
        at += len;
      }
    }
    return received;
  }

 private:
  Shared& s_;
  int rank_;
};

}  // namespace

void run_local_ranks(int ranks, const std::function<void(Communicator&)>& body) {
  require(ranks >= 1 && ranks <= 64, "ranks = {} must be in [1, 64]", ranks);
  Shared shared(ranks);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      LocalRank comm(shared, r);
      try {
        body(comm);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
        shared.fail();
      }
    });
  for (auto& t : threads) t.join();
  // Rank 0's error first: it is the one a real run would print.
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace dpstats
