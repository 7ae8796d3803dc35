#include "comm.hpp"

#include "dpstats/error.hpp"

namespace py = pybind11;

namespace dpstats::python {
namespace {

py::bytes to_py(const Bytes& b) {
  return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
}
Bytes from_py(const py::handle& h) {
  const std::string s = py::cast<std::string>(py::bytes(py::reinterpret_borrow<py::object>(h)));
  return Bytes(s.begin(), s.end());
}

}  // namespace

PyCommunicator::PyCommunicator(py::object comm) : comm_(std::move(comm)) {
  for (const char* m : {"Get_rank", "Get_size", "allgather", "bcast", "alltoall"})
    require(py::hasattr(comm_, m),
            "comm must be an mpi4py communicator (e.g. mpi4py.MPI.COMM_WORLD): it has no {}()", m);
  rank_ = comm_.attr("Get_rank")().cast<int>();
  size_ = comm_.attr("Get_size")().cast<int>();
}

PyCommunicator::~PyCommunicator() {
  py::gil_scoped_acquire gil;
  comm_ = py::object();
}

void PyCommunicator::allreduce_sum(std::span<std::int64_t> values) {
  add_gathered(allgather(to_bytes(std::vector<std::int64_t>(values.begin(), values.end()))),
               values);
}

void PyCommunicator::broadcast(Bytes& bytes, int root) {
  require(root >= 0 && root < size_, "broadcast: root {} is not a rank of {}", root, size_);
  py::gil_scoped_acquire gil;
  const py::object got = comm_.attr("bcast")(rank_ == root ? py::object(to_py(bytes)) : py::none(),
                                             py::arg("root") = root);
  bytes = from_py(got);
}

std::vector<Bytes> PyCommunicator::allgather(const Bytes& bytes) {
  py::gil_scoped_acquire gil;
  const py::list got = comm_.attr("allgather")(to_py(bytes));
  std::vector<Bytes> out;
  for (const auto& item : got) out.push_back(from_py(item));
  require(static_cast<int>(out.size()) == size_, "allgather: {} answers from {} ranks", out.size(),
          size_);
  return out;
}

std::vector<Bytes> PyCommunicator::alltoall(const std::vector<Bytes>& send) {
  require(static_cast<int>(send.size()) == size_, "alltoall: {} messages for {} ranks",
          send.size(), size_);
  py::gil_scoped_acquire gil;
  py::list outgoing;
  for (const auto& m : send) outgoing.append(to_py(m));
  const py::list got = comm_.attr("alltoall")(outgoing);
  std::vector<Bytes> out;
  for (const auto& item : got) out.push_back(from_py(item));
  return out;
}

std::unique_ptr<PyCommunicator> communicator(const py::object& comm) {
  if (comm.is_none()) return nullptr;
  return std::make_unique<PyCommunicator>(comm);
}

}  // namespace dpstats::python
