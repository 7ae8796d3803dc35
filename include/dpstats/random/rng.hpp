// Random bit sources (design.md §3). Every randomized function takes `Rng&`.
//  * SecureRng: the OS CSPRNG through OpenSSL's RAND_bytes (a NIST CTR-DRBG seeded from the
//    kernel), read in 4 KiB blocks into a per-thread buffer. Safe to share between threads and
//    across fork() (a child never replays the parent's buffer). The default everywhere.
//  * SeededRng: deterministic (xoshiro256**, seeded by splitmix64) for tests and experiments.
//    Not cryptographic: any release made with it reports `"seeded": true`.
#pragma once
#include <cstdint>
#include <span>

namespace dpstats {

class Rng {
 public:
  virtual ~Rng() = default;
  // 64 independent uniform bits.
  virtual std::uint64_t next_u64() = 0;
  // True for deterministic generators; releases carry it.
  virtual bool seeded() const noexcept = 0;
  virtual void fill(std::span<std::uint64_t> out);

  // Exactly uniform on {0, ..., n-1} (Lemire's nearly-divisionless rejection); n >= 1.
  std::uint64_t uniform_below(std::uint64_t n);
  // One fair bit.
  bool bit() { return next_u64() >> 63; }
  // Uniform on [0, 1) with 53 random bits. For the floating-point research path only: the
  // secure samplers never use it.
  double uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
};

class SecureRng final : public Rng {
 public:
  SecureRng() = default;
  std::uint64_t next_u64() override;
  void fill(std::span<std::uint64_t> out) override;
  bool seeded() const noexcept override { return false; }
};

class SeededRng final : public Rng {
 public:
  explicit SeededRng(std::uint64_t seed);
  std::uint64_t next_u64() override;
  bool seeded() const noexcept override { return true; }

 private:
  std::uint64_t s_[4];
};

}  // namespace dpstats
