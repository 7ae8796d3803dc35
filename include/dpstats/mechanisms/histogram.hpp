// Stability-based histogram over an unbounded (countable) set of bins (Bun, Nissim & Stemmer 2016;
// docs/proofs/substrate.md §7). Only non-empty bins are touched: each gets exact
// discrete Laplace noise on its integer count and is released only if the noisy count reaches a
// threshold tau chosen from the exact discrete-Laplace tail so that a bin present in only one of
// two neighbouring datasets is released with probability <= delta / 2 (replace-one: at most two
// such bins; add/remove: at most one). (ε, δ)-DP.
#pragma once
#include <cstdint>
#include <map>
#include <span>

#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

struct StabilityHistogram {
  std::map<std::int64_t, double> noisy_counts;  // released bins only
  double threshold = 0;                         // tau, in counts
  double laplace_scale = 0;                     // discrete Laplace scale on counts
};

// `bins` holds each record's bin index. (ε, δ)-DP under the given neighbouring relation.
StabilityHistogram stability_histogram(std::span<const std::int64_t> bins, double epsilon,
                                       double delta, Neighbouring neighbouring, Rng& rng);

// The same mechanism from counts: `occupied` lists each non-empty bin once, in increasing bin
// order, with its record count (>= 1). Noise is drawn in that order.
StabilityHistogram stability_histogram_counts(
    std::span<const std::pair<std::int64_t, std::int64_t>> occupied, double epsilon, double delta,
    Neighbouring neighbouring, Rng& rng);

LedgerEntry stability_histogram_entry(double epsilon, double delta, Neighbouring neighbouring,
                                      std::string purpose);

}  // namespace dpstats
