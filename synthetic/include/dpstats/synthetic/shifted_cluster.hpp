// Synthetic data sets used by the demo, the tests and the experiments. Generation is not a
// private computation: it uses floating-point samplers and is usually seeded.
#pragma once
#include <cstdint>

#include "dpstats/data/matrix.hpp"
#include "dpstats/random/float_normal.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {


// The PRIME experiments' oblivious corruption (the paper's §5):
// n − ⌊αn⌋ rows from N(0, I_d) and ⌊αn⌋ rows from N(shift·1, I_d), rows shuffled.
RowMatrix shifted_cluster(std::int64_t n, std::int64_t d, double alpha, double shift, Rng& rng);

}  // namespace dpstats
