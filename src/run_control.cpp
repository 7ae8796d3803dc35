#include "dpstats/run_control.hpp"

#include "dpstats/error.hpp"

namespace dpstats {

void validate(const RunControl& run) {
  require(run.threads >= 1 && run.threads <= kMaxThreads,
          "threads must be an integer in [1, {}], got {}", kMaxThreads, run.threads);
}

}  // namespace dpstats
