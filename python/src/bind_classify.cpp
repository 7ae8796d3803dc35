// Bindings for fit(task="classify"): being built (see issues).
#include "common.hpp"

void bind_classify(pybind11::module_&) {}
