#include <pybind11/pybind11.h>

PYBIND11_MODULE(_dpstats, m) { m.attr("__version__") = DPSTATS_VERSION; }
