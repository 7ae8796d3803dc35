// RunControl: how a release is computed, never what it releases. Every capability takes it as
// `options.run`; no field changes the privacy guarantee of a secure run, and a seeded run
// gives the same release for any thread count.
#pragma once
#include "dpstats/parallel.hpp"  // kMaxThreads, default_threads
#include "dpstats/release.hpp"

namespace dpstats {

class Communicator;  // dpstats/comm/communicator.hpp

struct RunControl {
  // Worker threads for the data passes, [1, kMaxThreads]; default: the machine's cores.
  int threads = default_threads();
  NoiseMode noise = NoiseMode::secure;  // fast_float: research only, certified = false
  // The ranks that hold the rows (the data passed in is this rank's shard); null: this process
  // holds all of them. Not owned. A seeded release is the same for any number of ranks.
  Communicator* comm = nullptr;
};

// InvalidArgument naming `threads` when it is outside [1, kMaxThreads].
void validate(const RunControl& run);

}  // namespace dpstats
