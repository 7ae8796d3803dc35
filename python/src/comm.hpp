// comm= in the Python module (issue 18): an mpi4py communicator as the library's Communicator
// (comm/communicator.hpp). Every collective goes through the mpi4py object's own lowercase,
// pickle-based methods (allgather, bcast, alltoall) on bytes, so the extension never links MPI
// and works with whichever MPI mpi4py was built against. The library calls these with the GIL
// released; each call takes it back. The integer allreduce is an allgather added in rank order
// with an overflow check, so every rank gets the same sum or the same error.
#pragma once
#include <pybind11/pybind11.h>

#include <memory>

#include "dpstats/comm/communicator.hpp"

namespace dpstats::python {

class PyCommunicator final : public Communicator {
 public:
  explicit PyCommunicator(pybind11::object comm);
  ~PyCommunicator() override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allreduce_sum(std::span<std::int64_t> values) override;
  void broadcast(Bytes& bytes, int root) override;
  std::vector<Bytes> allgather(const Bytes& bytes) override;
  std::vector<Bytes> alltoall(const std::vector<Bytes>& send) override;

 private:
  pybind11::object comm_;
  int rank_ = 0, size_ = 1;
};

// comm=None: nullptr (this process holds every row). Otherwise the communicator (the caller sets
// options.run.comm to it for the duration of the call). Every binding that takes comm= uses this.
std::unique_ptr<PyCommunicator> communicator(const pybind11::object& comm);

}  // namespace dpstats::python
