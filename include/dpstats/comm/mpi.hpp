// The MPI communicator (issue 18): the Communicator seam (comm/communicator.hpp) over an MPI
// communicator. Built only when CMake finds MPI (option DPSTATS_MPI; the macro DPSTATS_HAVE_MPI
// is then defined), in the separate library dpstats::mpi, so the core library and the Python
// module never link MPI.
//
//  * allreduce_sum is exact and checked: every 64-bit value is split into a signed high and an
//    unsigned low 32-bit half, the halves are summed with MPI_SUM on int64 (no wrap for fewer
//    than 2^31 ranks; integer sums are the same in any order), and the total is rebuilt in
//    128 bits. A total outside the 64-bit range throws InvalidArgument on every rank (each holds
//    the same halves), so no rank continues to a release.
//  * broadcast, allgather and alltoall move bytes of any length (lengths first, then the bytes;
//    messages over 1 GiB are refused on every rank).
//  * MPI errors are fatal (MPI_ERRORS_ARE_FATAL): a rank that dies takes the job down.
// The caller initialises MPI (MPI_Init) and keeps `comm` valid while this object is used.
#pragma once
#include <mpi.h>

#include "dpstats/comm/communicator.hpp"

namespace dpstats {

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allreduce_sum(std::span<std::int64_t> values) override;
  void broadcast(Bytes& bytes, int root) override;
  std::vector<Bytes> allgather(const Bytes& bytes) override;
  std::vector<Bytes> alltoall(const std::vector<Bytes>& send) override;
  MPI_Comm handle() const { return comm_; }

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace dpstats
