// Random bit sources (design.md §3). Every randomized function takes `Rng&`.
//  * SecureRng: the OS CSPRNG through OpenSSL's RAND_bytes (a NIST CTR-DRBG seeded from the
//    kernel), read in 4 KiB blocks into a per-thread buffer. Safe to share between threads and
//    across fork() (a child never replays the parent's buffer). The default everywhere.
//  * SeededRng: deterministic (xoshiro256**, seeded by splitmix64) for tests and experiments.
//    Not cryptographic: any release made with it reports `"seeded": true`.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <span>

namespace dpstats {

__extension__ typedef unsigned __int128 u128;

class Rng {
 public:
  virtual ~Rng() = default;
  // 64 independent uniform bits.
  virtual std::uint64_t next_u64() = 0;
  // True for deterministic generators; releases carry it.
  virtual bool seeded() const noexcept = 0;
  virtual void fill(std::span<std::uint64_t> out);
  // An independent generator for another thread, or nullptr when this kind cannot be split
  // (callers then stay sequential). SecureRng: a new SecureRng (the OS CSPRNG; every thread has
  // its own buffer). SeededRng: seeded from this stream's next word (reproducible, not secure).
  virtual std::unique_ptr<Rng> split() { return nullptr; }

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
  std::unique_ptr<Rng> split() override { return std::make_unique<SecureRng>(); }
};

class SeededRng final : public Rng {
 public:
  explicit SeededRng(std::uint64_t seed);
  std::uint64_t next_u64() override;
  bool seeded() const noexcept override { return true; }
  std::unique_ptr<Rng> split() override { return std::make_unique<SeededRng>(next_u64()); }

 private:
  std::uint64_t s_[4];
};

// A bit-granular reader over an Rng. The exact samplers decide most Bernoulli trials after two
// or three bits (the first bit where the uniform differs from p's binary expansion), so they read
// bits, not 64-bit words: one word then serves many trials, which is what makes the secure
// samplers fast. Bits come off the top of a 128-bit buffer and none is ever used twice; the
// unread bits left when the reader dies are discarded. Not thread-safe: one reader per call.
class RandomBits {
 public:
  explicit RandomBits(Rng& rng) : rng_(rng) {}
  RandomBits(const RandomBits&) = delete;
  RandomBits& operator=(const RandomBits&) = delete;

  // The next 64 bits, not consumed.
  std::uint64_t peek64() {
    if (count_ < 64) {
      // count_ < 64 bits are left, all in hi_ (lo_ = 0): the new word goes right after them.
      const std::uint64_t word = rng_.next_u64();
      if (count_ == 0) {
        hi_ = word;
      } else {
        hi_ |= word >> count_;
        lo_ = word << (64 - count_);
      }
      count_ += 64;
    }
    return hi_;
  }
  // Drops the next k bits (0 <= k <= 64); they must have been peeked.
  void consume(int k) {
    const std::uint64_t carry = k == 0 ? 0 : lo_ >> (64 - k);
    hi_ = k == 64 ? carry : (hi_ << k) | carry;
    lo_ = k == 64 ? 0 : lo_ << k;
    count_ -= k;
  }
  // The next k bits as an integer (1 <= k <= 64).
  std::uint64_t take(int k) {
    const std::uint64_t v = peek64() >> (64 - k);
    consume(k);
    return v;
  }
  bool bit() { return take(1) != 0; }

  // Exactly uniform on {0, ..., n-1}, n >= 1: Lemire's multiply-shift rejection on a w-bit
  // uniform x with w = bit_width(n - 1) + 8 (at most 64), so that the rejection probability
  // (2^w mod n) / 2^w stays below 2^-7 while only w bits are read.
  std::uint64_t uniform_below(std::uint64_t n) {
    if (n <= 1) return 0;
    const int w = std::min(64, static_cast<int>(std::bit_width(n - 1)) + 8);
    const std::uint64_t low_mask = w == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << w) - 1;
    u128 m = static_cast<u128>(take(w)) * n;
    if ((static_cast<std::uint64_t>(m) & low_mask) < n) {  // only then can x be rejected
      const std::uint64_t threshold =
          w == 64 ? (0 - n) % n : ((std::uint64_t{1} << w) - n) % n;  // 2^w mod n
      while ((static_cast<std::uint64_t>(m) & low_mask) < threshold) {
        m = static_cast<u128>(take(w)) * n;
      }
    }
    return static_cast<std::uint64_t>(m >> w);
  }

  Rng& rng() { return rng_; }

 private:
  Rng& rng_;
  // The unread bits, left-aligned in hi_:lo_. Two 64-bit words, not one u128: the samplers keep
  // this reader in memory across calls, and a 128-bit load of a value just written as two 64-bit
  // halves stalls on store forwarding (28% of the binned sampler's time).
  std::uint64_t hi_ = 0, lo_ = 0;
  int count_ = 0;  // number of unread bits
};

}  // namespace dpstats
