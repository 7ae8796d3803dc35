// The MPI communicator (comm/mpi.hpp). Built only with DPSTATS_HAVE_MPI (dpstats::mpi).
#include "dpstats/comm/mpi.hpp"

#include <climits>
#include <numeric>

#include "dpstats/error.hpp"

namespace dpstats {
namespace {

__extension__ typedef __int128 i128;

// MPI counts are int: a message, and the bytes one rank receives in one collective, stay below
// 2^31. Every rank knows every length before the bytes move, so every rank refuses together.
constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 30;

std::vector<int> checked_counts(const std::vector<std::uint64_t>& lengths, const char* what) {
  std::uint64_t total = 0;
  std::vector<int> counts(lengths.size());
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    require(lengths[i] <= kMaxBytes, "{}: a message of {} bytes exceeds the limit of 2^30 bytes",
            what, lengths[i]);
    total += lengths[i];
    counts[i] = static_cast<int>(lengths[i]);
  }
  require(total <= static_cast<std::uint64_t>(INT_MAX),
          "{}: {} bytes in one collective exceed the limit of 2^31 - 1", what, total);
  return counts;
}

std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> displ(counts.size(), 0);
  for (std::size_t i = 1; i < counts.size(); ++i) displ[i] = displ[i - 1] + counts[i - 1];
  return displ;
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

void MpiCommunicator::allreduce_sum(std::span<std::int64_t> values) {
  if (values.empty()) return;
  // Halves: v = hi * 2^32 + lo with hi = v >> 32 (signed) and lo in [0, 2^32). Summed over fewer
  // than 2^31 ranks neither half's sum leaves the int64 range.
  const std::size_t n = values.size();
  std::vector<std::int64_t> halves(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    halves[2 * i] = values[i] >> 32;
    halves[2 * i + 1] = static_cast<std::int64_t>(static_cast<std::uint64_t>(values[i]) & 0xFFFFFFFFu);
  }
  require(halves.size() <= static_cast<std::size_t>(INT_MAX),
          "allreduce_sum: {} values exceed one collective's limit", n);
  MPI_Allreduce(MPI_IN_PLACE, halves.data(), static_cast<int>(halves.size()), MPI_INT64_T, MPI_SUM,
                comm_);
  for (std::size_t i = 0; i < n; ++i) {
    const i128 total = static_cast<i128>(halves[2 * i]) * (i128{1} << 32) + halves[2 * i + 1];
    require(total >= INT64_MIN && total <= INT64_MAX,
            "allreduce_sum: the sum over ranks of entry {} leaves the 64-bit range; nothing was "
            "released", i);
    values[i] = static_cast<std::int64_t>(total);
  }
}

void MpiCommunicator::broadcast(Bytes& bytes, int root) {
  require(root >= 0 && root < size_, "broadcast: root {} is not a rank of {}", root, size_);
  std::uint64_t length = bytes.size();
  MPI_Bcast(&length, 1, MPI_UINT64_T, root, comm_);
  checked_counts({length}, "broadcast");
  if (rank_ != root) bytes.assign(length, 0);
  if (length > 0) MPI_Bcast(bytes.data(), static_cast<int>(length), MPI_BYTE, root, comm_);
}

std::vector<Bytes> MpiCommunicator::allgather(const Bytes& bytes) {
  std::uint64_t mine = bytes.size();
  std::vector<std::uint64_t> lengths(static_cast<std::size_t>(size_));
  MPI_Allgather(&mine, 1, MPI_UINT64_T, lengths.data(), 1, MPI_UINT64_T, comm_);
  const std::vector<int> counts = checked_counts(lengths, "allgather");
  const std::vector<int> displ = displacements(counts);
  Bytes all(static_cast<std::size_t>(displ.back() + counts.back()));
  MPI_Allgatherv(bytes.data(), static_cast<int>(mine), MPI_BYTE, all.data(), counts.data(),
                 displ.data(), MPI_BYTE, comm_);
  std::vector<Bytes> out(static_cast<std::size_t>(size_));
  for (std::size_t r = 0; r < out.size(); ++r)
    out[r].assign(all.begin() + displ[r], all.begin() + displ[r] + counts[r]);
  return out;
}

std::vector<Bytes> MpiCommunicator::alltoall(const std::vector<Bytes>& send) {
  require(static_cast<int>(send.size()) == size_, "alltoall: {} messages for {} ranks",
          send.size(), size_);
  std::vector<std::uint64_t> send_len(send.size()), recv_len(send.size());
  for (std::size_t r = 0; r < send.size(); ++r) send_len[r] = send[r].size();
  MPI_Alltoall(send_len.data(), 1, MPI_UINT64_T, recv_len.data(), 1, MPI_UINT64_T, comm_);
  // Both directions are checked on every rank; a refusal is then the same everywhere only for the
  // receive side, so the send side is checked after an agreement on it (one more int allreduce).
  std::int64_t bad = 0;
  try {
    checked_counts(send_len, "alltoall");
    checked_counts(recv_len, "alltoall");
  } catch (const InvalidArgument&) {
    bad = 1;
  }
  allreduce_sum(std::span<std::int64_t>(&bad, 1));
  require(bad == 0, "alltoall: a rank's messages exceed the 2^31 - 1 byte limit of one collective; "
          "nothing was released");
  const std::vector<int> scounts = checked_counts(send_len, "alltoall");
  const std::vector<int> rcounts = checked_counts(recv_len, "alltoall");
  const std::vector<int> sdispl = displacements(scounts), rdispl = displacements(rcounts);
  Bytes packed;
  packed.reserve(static_cast<std::size_t>(sdispl.back() + scounts.back()));
  for (const auto& m : send) packed.insert(packed.end(), m.begin(), m.end());
  Bytes received(static_cast<std::size_t>(rdispl.back() + rcounts.back()));
  MPI_Alltoallv(packed.data(), scounts.data(), sdispl.data(), MPI_BYTE, received.data(),
                rcounts.data(), rdispl.data(), MPI_BYTE, comm_);
  std::vector<Bytes> out(send.size());
  for (std::size_t r = 0; r < out.size(); ++r)
    out[r].assign(received.begin() + rdispl[r], received.begin() + rdispl[r] + rcounts[r]);
  return out;
}

}  // namespace dpstats
