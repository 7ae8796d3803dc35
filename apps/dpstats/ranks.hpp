// The tool under mpirun/srun (issue 18; docs/guide.md "Running on a cluster").
//  * start_ranks: when the environment says this process is one of several ranks launched by
//    mpirun, srun (PMIx/PMI) or the MPI Operator, MPI is initialised and ranks() is the world's
//    communicator; otherwise nothing happens and the tool runs exactly as in one process.
//  * Only rank 0 prints a release and reads/writes --budget (is_root()).
//  * finish_ranks: the exit. When every rank failed together (the library's guards fail on every
//    rank at once) rank 0 prints the one message and every rank exits with the code. A rank that
//    failed alone (the others are waiting in a collective) prints its message, naming its rank,
//    and aborts the job (MPI_Abort): nothing is released, and a rerun is a new release.
#pragma once
#include <string>

#include "dpstats/comm/communicator.hpp"

namespace dpstats::cli {

// InvalidArgument when launched as several ranks by a tool built without MPI.
void start_ranks(int* argc, char*** argv);
Communicator* ranks();  // null: one process
bool is_root();         // rank 0, or one process
// Refuses a command that does not distribute its rows when there are several ranks.
void require_distributed(const std::string& command);
// Ends MPI (when started) and returns the exit code; prints `message` (code != 0) as above.
int finish_ranks(int code, const std::string& message);

}  // namespace dpstats::cli
