// dpstats fit --task classify: being built (see issues); until then it refuses with a clear message.
#include "dpstats/error.hpp"
#include "fit.hpp"

namespace dpstats::cli {

FitRunner add_fit_classify(CLI::App*) {
  return [](const FitArgs&) { throw InvalidArgument("--task classify is not built yet"); };
}

}  // namespace dpstats::cli
