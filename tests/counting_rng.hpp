// A seeded generator that counts the 64-bit words drawn from it (split() is not offered, so every
// draw goes through next_u64): the distributed tests check that rank 0 draws exactly what one
// process draws and the other ranks draw nothing.
#pragma once
#include <cstdint>

#include "dpstats/random/rng.hpp"

namespace dpstats {

class CountingRng final : public Rng {
 public:
  explicit CountingRng(std::uint64_t seed) : inner_(seed) {}
  std::uint64_t next_u64() override {
    ++draws;
    return inner_.next_u64();
  }
  bool seeded() const noexcept override { return true; }
  long draws = 0;

 private:
  SeededRng inner_;
};

}  // namespace dpstats
