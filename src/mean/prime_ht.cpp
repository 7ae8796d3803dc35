// PRIME-ht (docs/proofs/mean.md): PRIME's driver with the heavy-tail switches (see mean/prime_ht.hpp).
#include "dpstats/mean/prime_ht.hpp"

namespace dpstats {

Release<Vector> prime_ht(const RowsView& X, PrimeOptions o, Rng& rng, Budget* budget,
                         PrimeTrace* trace) {
  o.heavy_tailed = true;
  Release<Vector> r = prime(X, o, rng, budget, trace);
  r.diagnostics["heavy_tailed"] = true;
  return r;
}

}  // namespace dpstats
