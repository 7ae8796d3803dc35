// Poisson subsampling that does not depend on how the rows are split and costs the batch, not
// the table (issues 18 and 31; docs/proofs/training.md §4). Step t's sample is the set of global
// row ids {G_1, G_1 + 1 + G_2, ...} below N, where G_1, G_2, ... are exact Geometric(q) gaps
// (GeometricTrials) drawn from the keyed stream AES-128_key(t, 0), AES-128_key(t, 1), ...: every
// row is in the sample independently with probability exactly q, the rate the accountant counts.
// The key is drawn once (by rank 0, from the release's Rng) and shared; each rank walks the same
// gaps from id 0 and keeps the ids in its own range, so the sample of step t is the same set of
// global ids on one process or on any number of ranks, and a step draws about q·(offset + local)
// gaps: its batch, never a test per row.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/random/geometric.hpp"

namespace dpstats::optimize {

class KeyedPoissonSample {
 public:
  // key: two 64-bit words (128 bits); rate q in [2^-64, 1] (1: every row).
  KeyedPoissonSample(std::uint64_t key0, std::uint64_t key1, double rate);
  ~KeyedPoissonSample();
  KeyedPoissonSample(const KeyedPoissonSample&) = delete;
  KeyedPoissonSample& operator=(const KeyedPoissonSample&) = delete;
  // rows <- the local indices i in [0, local), in order, whose global id offset + i is in step
  // `step`'s sample.
  void sample(std::uint64_t step, std::int64_t offset, std::int64_t local,
              std::vector<Eigen::Index>& rows);

 private:
  class Stream;
  std::unique_ptr<Stream> stream_;
  GeometricTrials gaps_;
};

}  // namespace dpstats::optimize
