// Poisson subsampling that does not depend on how the rows are split (issue 18; docs/proofs/
// training.md §4): row `id` (its global row id) is in step t's sample when the first 64 bits of
// AES-128_key(t, id) are below floor(2^64 m / N). The key is drawn once (by rank 0, from the
// release's Rng) and shared, so every rank decides its own rows, and the sample of step t is the
// same set of global ids on one process or on any number of ranks. Under the PRF assumption on
// AES the inclusions are independent with probability q' = floor(2^64 m / N) / 2^64 <= q = m/N
// (exactly 1 when m = N); the subsampled Gaussian's loss grows with q, so the ledger's q covers q'.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "dpstats/data/matrix.hpp"

namespace dpstats::optimize {

class KeyedPoissonSample {
 public:
  // key: two 64-bit words (128 bits); expected m in [1, total]; total N >= 1.
  KeyedPoissonSample(std::uint64_t key0, std::uint64_t key1, std::int64_t expected,
                     std::int64_t total);
  ~KeyedPoissonSample();
  KeyedPoissonSample(const KeyedPoissonSample&) = delete;
  KeyedPoissonSample& operator=(const KeyedPoissonSample&) = delete;
  // rows <- the local indices i in [0, local), in order, whose global id offset + i is in step
  // `step`'s sample.
  void sample(std::uint64_t step, std::int64_t offset, std::int64_t local,
              std::vector<Eigen::Index>& rows);

 private:
  struct Cipher;
  std::unique_ptr<Cipher> cipher_;
  bool all_ = false;               // m = N: every row
  std::uint64_t threshold_ = 0;    // floor(2^64 m / N)
  std::vector<std::uint64_t> buf_;  // blocks (step, id), encrypted in place
};

}  // namespace dpstats::optimize
