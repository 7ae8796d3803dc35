// The communicator seam (issue 18): how a release's data passes reach rows held by several
// processes. Every algorithm's data pass is `partial(shard)` -> exact merge -> the finalisation
// the single-process path runs, so a seeded release does not depend on the number of ranks.
//
// Rules every distributed algorithm follows (docs/architecture.md, "Ranks"):
//  * Merges are exact: integer sums (the lattice sums of dpstats/exact/exact_sum.hpp,
//    counts, histograms) added with allreduce_sum. Never a floating-point allreduce.
//  * Noise once: rank 0 draws every noise sample and holds the ledger; the noisy values the
//    other ranks need to continue are broadcast as bytes (`on_root`). Other ranks never draw.
//  * Ranks are ordered: rank r holds the rows after those of ranks 0..r-1 (`shard_rows`), so a
//    global row id is offset + local index.
//  * Every rank calls the same collectives in the same order; a rank that throws inside `on_root`
//    makes every rank throw (nothing is released).
//
// A release's communicator is `options.run.comm` (RunControl); null means this process alone.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "dpstats/data/matrix.hpp"

namespace dpstats {

using Bytes = std::vector<std::uint8_t>;

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // values[i] <- the sum over ranks of values[i], on every rank. Exact: throws InvalidArgument on
  // every rank when a sum would leave the 64-bit range (the global overflow guard).
  virtual void allreduce_sum(std::span<std::int64_t> values) = 0;
  // bytes <- root's bytes (any length) on every rank.
  virtual void broadcast(Bytes& bytes, int root) = 0;
  // Every rank's bytes, indexed by rank, on every rank.
  virtual std::vector<Bytes> allgather(const Bytes& bytes) = 0;
  // send[r] goes to rank r (send.size() == size()); returns what rank r sent here, at index r.
  virtual std::vector<Bytes> alltoall(const std::vector<Bytes>& send) = 0;
};

// values[i] <- the sum of entry i of every rank's words in `gathered` (allgather of each rank's
// values as bytes), checked: InvalidArgument when the ranks' lengths differ or a sum leaves the
// 64-bit range. For communicators whose allreduce is an allgather.
void add_gathered(const std::vector<Bytes>& gathered, std::span<std::int64_t> values);

// The single-process communicator (rank 0 of 1; every collective is the identity).
Communicator& single_process();
// options.run.comm, or single_process() when it is null.
inline Communicator& comm_or_single(Communicator* comm) { return comm ? *comm : single_process(); }

// --- Collectives built on the interface ----------------------------------------------------------

// Sums of exact integers held as doubles (|x| < 2^53, integral; InvalidArgument otherwise) over
// ranks, in place. The result is exact whenever every partial and total sum is below 2^53 in
// magnitude; beyond that it throws on every rank (nothing is rounded).
void allreduce_exact(Communicator& comm, Vector& values);
std::int64_t allreduce_count(Communicator& comm, std::int64_t local);

// This rank's first global row and the global row count, from every rank's local row count.
struct ShardRows {
  std::int64_t offset = 0;  // global id of local row 0
  std::int64_t total = 0;   // rows over all ranks
};
ShardRows shard_rows(Communicator& comm, std::int64_t local_rows);

// The guard before the first collective: every rank's `fingerprint` (the public parameters and
// the data's shape that must agree, e.g. the column count) must equal rank 0's; otherwise every
// rank throws InvalidArgument naming `what`, before anything is computed or released.
void check_agreement(Communicator& comm, const std::string& fingerprint, const std::string& what);

// Runs step() on every rank; when it throws InvalidArgument on any rank, every rank throws: a
// failing rank its own exception, the others InvalidArgument with the lowest failing rank's
// message ("rank r: ..." for r > 0). So a local
// failure (reading a shard, a bad cell in one rank's rows) stops every rank before the next
// collective instead of leaving the others waiting. One allgather of a status byte per call.
void all_or_none(Communicator& comm, const std::function<void()>& step);

// Runs draw() on rank 0 only and gives its result to every rank (noise once). T is a Vector, a
// std::vector of trivially copyable values, or a trivially copyable value. When draw() throws on
// rank 0 the exception is rethrown there and every other rank throws InvalidArgument with the
// same message (so no rank continues to a release).
Bytes on_root_bytes(Communicator& comm, const std::function<Bytes()>& draw);

template <class T>
Bytes to_bytes(const T& v) {
  if constexpr (std::is_same_v<T, Vector>) {
    Bytes b(static_cast<std::size_t>(v.size()) * sizeof(double));
    if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
  } else if constexpr (requires { v.data(); v.size(); typename T::value_type; }) {
    static_assert(std::is_trivially_copyable_v<typename T::value_type>);
    Bytes b(v.size() * sizeof(typename T::value_type));
    if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
  } else {
    static_assert(std::is_trivially_copyable_v<T>);
    Bytes b(sizeof(T));
    std::memcpy(b.data(), &v, sizeof(T));
    return b;
  }
}

template <class T>
T from_bytes(const Bytes& b) {
  if constexpr (std::is_same_v<T, Vector>) {
    Vector v(static_cast<Eigen::Index>(b.size() / sizeof(double)));
    if (!b.empty()) std::memcpy(v.data(), b.data(), b.size());
    return v;
  } else if constexpr (requires { typename T::value_type; }) {
    T v(b.size() / sizeof(typename T::value_type));
    if (!b.empty()) std::memcpy(v.data(), b.data(), b.size());
    return v;
  } else {
    T v{};
    std::memcpy(&v, b.data(), sizeof(T));
    return v;
  }
}

template <class F>
auto on_root(Communicator& comm, F&& draw) -> std::invoke_result_t<F> {
  using T = std::invoke_result_t<F>;
  if (comm.size() == 1) return draw();  // the single-process path, unchanged
  return from_bytes<T>(on_root_bytes(comm, [&] { return to_bytes(draw()); }));
}

// P ranks as P threads of this process, sharing memory: for tests of the distributed code paths
// without MPI (the MPI communicator is tested under mpirun). body(comm) runs once per rank; the
// first exception any rank throws is rethrown here after every rank has stopped (a rank blocked
// in a collective when another rank failed throws too).
void run_local_ranks(int ranks, const std::function<void(Communicator&)>& body);

}  // namespace dpstats
