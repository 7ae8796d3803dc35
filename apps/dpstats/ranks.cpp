#include "ranks.hpp"

#include <array>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <set>
#include <thread>

#include "dpstats/error.hpp"

#ifdef DPSTATS_HAVE_MPI
#include "dpstats/comm/mpi.hpp"
#endif

namespace dpstats::cli {
namespace {

// The commands whose rows may be spread over ranks. Add a command here once every method it
// runs either distributes its data passes or refuses P > 1 in the library.
const std::set<std::string>& distributed_commands() {
  static const std::set<std::string> names = {"mean",   "median", "stat",   "fit",
                                                "bounds", "moments", "version"};  // fit: heavy-tailed, user-level
  return names;
}

// A launcher's size variable, or 1 when none is set (a plain `dpstats ...`).
long launched_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(name)) return std::atol(v);
  return std::getenv("PMIX_RANK") || std::getenv("PMI_RANK") ? 2 : 1;
}
bool launched_root() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* v = std::getenv(name)) return std::atol(v) == 0;
  return true;
}

void print_error(const std::string& message) { std::cerr << "dpstats: error: " << message << "\n"; }

#ifdef DPSTATS_HAVE_MPI
struct Mpi {
  MPI_Comm data = MPI_COMM_NULL, control = MPI_COMM_NULL;
  std::unique_ptr<MpiCommunicator> comm;
};
Mpi& mpi() {
  static Mpi m;
  return m;
}

// Waits on a barrier of the control communicator: true when every rank reached it, false when
// `patience` ran out first (some rank is still inside a data collective).
bool every_rank_arrives(std::chrono::seconds patience, bool forever) {
  MPI_Request request;
  MPI_Ibarrier(mpi().control, &request);
  const auto until = std::chrono::steady_clock::now() + patience;
  int done = 0;
  while (true) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return true;
    if (!forever && std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}
#endif

}  // namespace

void start_ranks(int* argc, char*** argv) {
  const long size = launched_size();
#ifdef DPSTATS_HAVE_MPI
  if (size <= 1 && !std::getenv("OMPI_COMM_WORLD_SIZE")) return;
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_dup(MPI_COMM_WORLD, &mpi().data);
  MPI_Comm_dup(MPI_COMM_WORLD, &mpi().control);
  mpi().comm = std::make_unique<MpiCommunicator>(mpi().data);
#else
  (void)argc;
  (void)argv;
  if (size > 1)
    throw InvalidArgument(fmt::format(
        "launched as {} ranks, but this dpstats was built without MPI (rebuild with libopenmpi-dev "
        "installed, or -DDPSTATS_MPI=ON); every rank would release on its own, so none does",
        size));
#endif
}

Communicator* ranks() {
#ifdef DPSTATS_HAVE_MPI
  return mpi().comm.get();
#else
  return nullptr;
#endif
}

bool is_root() { return ranks() == nullptr || ranks()->rank() == 0; }

void require_distributed(const std::string& command) {
  if (ranks() == nullptr || ranks()->size() == 1) return;
  require(distributed_commands().count(command) > 0,
          "'dpstats {}' does not run on several ranks yet (launched as {}); run it in one process",
          command, ranks()->size());
}

int finish_ranks(int code, const std::string& message) {
#ifdef DPSTATS_HAVE_MPI
  if (mpi().comm) {
    const int rank = mpi().comm->rank();
    // Failed ranks wait a while for the others: a failure every rank shares arrives at once.
    if (!every_rank_arrives(std::chrono::seconds(5), code == 0)) {
      print_error(rank == 0 ? message : fmt::format("rank {}: {}", rank, message));
      std::cerr.flush();
      MPI_Abort(MPI_COMM_WORLD, code);
    }
    MpiCommunicator control(mpi().control);
    const auto codes = control.allgather(to_bytes(code));
    const auto texts = control.allgather(Bytes(message.begin(), message.end()));
    int first = 0, worst = 0;
    for (int r = static_cast<int>(codes.size()) - 1; r >= 0; --r) {
      const int c = from_bytes<int>(codes[static_cast<std::size_t>(r)]);
      if (c != 0) first = r, worst = c;
    }
    if (rank == 0 && worst != 0) {
      const auto& t = texts[static_cast<std::size_t>(first)];
      const std::string text(t.begin(), t.end());
      print_error(first == 0 ? text : fmt::format("rank {}: {}", first, text));
    }
    mpi().comm.reset();
    MPI_Comm_free(&mpi().data);
    MPI_Comm_free(&mpi().control);
    MPI_Finalize();
    return worst;
  }
#endif
  if (code != 0 && launched_root()) print_error(message);
  return code;
}

}  // namespace dpstats::cli
