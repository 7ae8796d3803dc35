// MpiCommunicator under mpirun (ctest mpi_communicator_p2..p4): exact sums, the overflow guard
// refusing on every rank, byte collectives of uneven and empty lengths. Exit 0 when every check
// holds on every rank.
#include <mpi.h>

#include <cstdio>
#include <limits>

#include "dpstats/comm/mpi.hpp"
#include "dpstats/error.hpp"

namespace {

int failures = 0;
void check(bool ok, const char* what, int rank) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: FAIL %s\n", rank, what);
    ++failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    dpstats::MpiCommunicator c(MPI_COMM_WORLD);
    const int r = c.rank(), P = c.size();
    // Exact sums, negative values and values beyond 2^32 included.
    std::vector<std::int64_t> v = {r + 1, -(std::int64_t{1} << 40) * (r + 1), (std::int64_t{3} << 33) + r};
    c.allreduce_sum(v);
    check(v[0] == P * (P + 1) / 2, "sum of rank + 1", r);
    check(v[1] == -(std::int64_t{1} << 40) * (P * (P + 1) / 2), "sum of large negatives", r);
    check(v[2] == P * (std::int64_t{3} << 33) + P * (P - 1) / 2, "sum beyond 2^32", r);
    // The overflow guard: every rank refuses.
    std::vector<std::int64_t> big = {std::numeric_limits<std::int64_t>::max() / 2 + 1};
    bool refused = false;
    try {
      c.allreduce_sum(big);
    } catch (const dpstats::InvalidArgument&) {
      refused = true;
    }
    check(refused == (P > 1), "overflow refused on every rank", r);
    std::vector<std::int64_t> low = {std::numeric_limits<std::int64_t>::min() / P};
    c.allreduce_sum(low);
    check(low[0] == (std::numeric_limits<std::int64_t>::min() / P) * P, "sum down to INT64_MIN", r);
    // Byte collectives with lengths r (rank 0 sends nothing).
    const dpstats::Bytes mine(static_cast<std::size_t>(r), static_cast<std::uint8_t>(r));
    const auto all = c.allgather(mine);
    for (int k = 0; k < P; ++k)
      check(all[k] == dpstats::Bytes(static_cast<std::size_t>(k), static_cast<std::uint8_t>(k)),
            "allgather", r);
    dpstats::Bytes b = r == P - 1 ? dpstats::Bytes{1, 2, 3} : dpstats::Bytes{};
    c.broadcast(b, P - 1);
    check(b == dpstats::Bytes({1, 2, 3}), "broadcast from the last rank", r);
    std::vector<dpstats::Bytes> send(static_cast<std::size_t>(P));
    for (int k = 0; k < P; ++k) send[k].assign(static_cast<std::size_t>(k + r), static_cast<std::uint8_t>(r));
    const auto got = c.alltoall(send);
    for (int k = 0; k < P; ++k)
      check(got[k] == dpstats::Bytes(static_cast<std::size_t>(r + k), static_cast<std::uint8_t>(k)),
            "alltoall", r);
  }
  int all_failures = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all_failures == 0 ? 0 : 1;
}
