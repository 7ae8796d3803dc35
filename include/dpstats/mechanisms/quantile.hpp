// Private quantile over a public range [lower, upper]: exponential mechanism (exact
// permute-and-flip) over a public grid of `candidates` evenly spaced points, with quality
// -|#{x_i < c} - q n| (sensitivity 1 under replace-one and add/remove). ε-DP. Data outside the
// range are clamped.
#pragma once
#include <span>

#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

class Communicator;  // dpstats/comm/communicator.hpp

struct QuantileOptions {
  double q = 0.5;  // in [0, 1]
  double lower = 0, upper = 1;
  std::size_t candidates = 1024;  // grid size (>= 2)
  double epsilon = 1;
};

double private_quantile(std::span<const double> values, const QuantileOptions& o, Rng& rng);

// The same over ranks (issue 18): each rank passes its own values (possibly none); the counts
// below every candidate are added exactly over the ranks (allreduce_sum), rank 0 selects and
// every rank returns its choice -- the one-process release on the union of the values.
double private_quantile(std::span<const double> values, const QuantileOptions& o, Rng& rng,
                        Communicator& comm);

LedgerEntry private_quantile_entry(const QuantileOptions& o, std::string purpose);
// The same entry from what it depends on (epsilon; not the grid): a plan made before the grid's
// bounds are known (estimated by an earlier stage) charges it.
LedgerEntry private_quantile_entry(double epsilon, std::string purpose);

}  // namespace dpstats
