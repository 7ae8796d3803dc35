// Bindings for fit(task="heavy-tailed"): being built (see issues).
#include "common.hpp"

void bind_heavy_tailed(pybind11::module_&) {}
