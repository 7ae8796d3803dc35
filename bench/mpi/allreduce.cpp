// Time per allreduce on this machine (docs/ranks-cost.md "Measured"): the checked exact int64
// allreduce of MpiCommunicator (two 32-bit halves summed with MPI_SUM, rebuilt in 128 bits)
// against a plain MPI_Allreduce(MPI_SUM) of the same int64 words, 8 B to 8 MB.
// usage: mpirun -np P bench_mpi_allreduce [repeats]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "dpstats/comm/mpi.hpp"

namespace {

template <class F>
double median_seconds(int repeats, MPI_Comm comm, F&& f) {
  std::vector<double> t;
  for (int k = 0; k < repeats; ++k) {
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    f();
    double mine = MPI_Wtime() - start, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    t.push_back(slowest);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 50;
  dpstats::MpiCommunicator comm(MPI_COMM_WORLD);
  if (comm.rank() == 0) std::printf("ranks %d\nbytes,plain_us,dpstats_us,ratio\n", comm.size());
  for (const std::size_t bytes : {std::size_t{8}, std::size_t{64}, std::size_t{512},
                                  std::size_t{4} << 10, std::size_t{32} << 10,
                                  std::size_t{256} << 10, std::size_t{2} << 20,
                                  std::size_t{8} << 20}) {
    std::vector<std::int64_t> v(bytes / 8, 0), w(v);  // zeros: repeated in-place sums stay in range
    const double plain = median_seconds(repeats, MPI_COMM_WORLD, [&] {
      MPI_Allreduce(MPI_IN_PLACE, w.data(), static_cast<int>(w.size()), MPI_INT64_T, MPI_SUM,
                    MPI_COMM_WORLD);
    });
    const double ours = median_seconds(repeats, MPI_COMM_WORLD, [&] { comm.allreduce_sum(v); });
    if (comm.rank() == 0)
      std::printf("%zu,%.1f,%.1f,%.2f\n", bytes, plain * 1e6, ours * 1e6, ours / plain);
  }
  MPI_Finalize();
}
