#include "dpstats/random/rng.hpp"

#include <openssl/err.h>
#include <openssl/rand.h>
#include <pthread.h>

#include <atomic>
#include <cstring>
#include <stdexcept>

namespace dpstats {

void Rng::fill(std::span<std::uint64_t> out) {
  for (auto& x : out) x = next_u64();
}

std::uint64_t Rng::uniform_below(std::uint64_t n) {
  // Lemire (2019): multiply-shift with rejection of the biased low zone; exact.
  std::uint64_t x = next_u64();
  u128 m = static_cast<u128>(x) * n;
  auto low = static_cast<std::uint64_t>(m);
  if (low < n) {
    const std::uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      x = next_u64();
      m = static_cast<u128>(x) * n;
      low = static_cast<std::uint64_t>(m);
    }
  }
  return static_cast<std::uint64_t>(m >> 64);
}

// ---- SecureRng -------------------------------------------------------------------------------
namespace {

// Incremented in every forked child, so that a buffer inherited from the parent is discarded.
std::atomic<std::uint64_t> g_fork_generation{0};

void on_fork_child() { g_fork_generation.fetch_add(1, std::memory_order_relaxed); }

void os_random_bytes(void* out, std::size_t bytes) {
  if (RAND_bytes(static_cast<unsigned char*>(out), static_cast<int>(bytes)) != 1) {
    // Never fall back to a weaker source: failing loudly is the only safe answer.
    throw std::runtime_error("SecureRng: OpenSSL RAND_bytes failed (error " +
                             std::to_string(ERR_get_error()) + ")");
  }
}

struct SecureBuffer {
  static constexpr std::size_t kWords = 512;  // 4 KiB per refill
  std::uint64_t words[kWords];
  std::size_t pos = kWords;
  std::uint64_t generation = 0;

  void refill() {
    os_random_bytes(words, sizeof(words));
    pos = 0;
    generation = g_fork_generation.load(std::memory_order_relaxed);
  }
  ~SecureBuffer() { std::memset(words, 0, sizeof(words)); }
};

SecureBuffer& thread_buffer() {
  // Registered once per process before any buffer is filled (a function-local static: the check
  // on later calls is one load, where std::call_once was a library call per word).
  static const bool registered = pthread_atfork(nullptr, nullptr, on_fork_child) == 0;
  if (!registered) throw std::runtime_error("SecureRng: pthread_atfork failed");
  thread_local SecureBuffer buffer;
  return buffer;
}

}  // namespace

std::uint64_t SecureRng::next_u64() {
  SecureBuffer& b = thread_buffer();
  if (b.pos == SecureBuffer::kWords ||
      b.generation != g_fork_generation.load(std::memory_order_relaxed)) {
    b.refill();
  }
  const std::uint64_t x = b.words[b.pos];
  b.words[b.pos++] = 0;  // a consumed word never stays in memory
  return x;
}

void SecureRng::fill(std::span<std::uint64_t> out) {
  if (out.size() >= SecureBuffer::kWords) {
    os_random_bytes(out.data(), out.size_bytes());
    return;
  }
  for (auto& x : out) x = next_u64();
}

// ---- SeededRng: xoshiro256** (Blackman & Vigna), seeded through splitmix64 ------------------
namespace {
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
inline std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

SeededRng::SeededRng(std::uint64_t seed) {
  std::uint64_t state = seed;
  for (auto& s : s_) s = splitmix64(state);
}

std::uint64_t SeededRng::next_u64() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

}  // namespace dpstats
