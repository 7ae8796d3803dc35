// Geometric variables as floor(t·E), E ~ Exp(1), with E drawn exactly by von Neumann's (1951)
// method on lazily expanded uniforms:
//   draw uniforms x1, x2, ... while they decrease; the run x1 > x2 > ... > xN <= x(N+1) has
//   P(N >= m | x1) = x1^(m-1)/(m-1)!, so P(N odd | x1) = exp(-x1). An odd N accepts F = x1
//   (density ∝ exp(-F) on [0, 1)); an even N rejects, and the number V of rejections before the
//   acceptance is Geometric(1 - 1/e), independent of F. Then E = V + F ~ Exp(1), and
//   floor(t_num E / t_den) = floor((t_num V + floor(t_num F)) / t_den).
// Only comparisons of uniforms and the first digits of F are ever needed, so no Bernoulli(exp)
// trial is drawn at all: about five 8-bit comparisons and a few more digits of F per sample.
#include "dpstats/random/geometric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <utility>
#include <vector>

#include "dpstats/error.hpp"

namespace dpstats {
namespace {

// A uniform on [0, 1) whose binary digits are drawn only when needed: the first (up to 64) in
// `head`, left-aligned, `length` of them known; later ones in whole words in `tail`, drawn only
// after 64 equal digits in a comparison (probability 2^-64).
struct LazyUniform {
  std::uint64_t head = 0;
  int length = 0;
  std::vector<std::uint64_t> tail;

  void reset() {
    head = 0;
    length = 0;
    tail.clear();
  }
  void extend(RandomBits& bits, int n) {  // 1 <= n <= 64 - length
    head |= bits.take(n) << (64 - length - n);
    length += n;
  }
};

constexpr int kChunk = 8;  // digits drawn at a time during comparisons

// y < x for independent lazy uniforms, drawing digits of either as needed.
bool less(RandomBits& bits, LazyUniform& y, LazyUniform& x) {
  for (;;) {
    if (x.length == y.length) {
      if (x.length == 64) break;
      x.extend(bits, std::min(kChunk, 64 - x.length));
    }
    if (y.length < x.length) y.extend(bits, x.length - y.length);
    if (x.length < y.length) x.extend(bits, y.length - x.length);
    if (y.head != x.head) return y.head < x.head;  // same length: unknown digits are 0 in both
  }
  for (std::size_t i = 0;; ++i) {
    if (x.tail.size() <= i) x.tail.push_back(bits.take(64));
    if (y.tail.size() <= i) y.tail.push_back(bits.take(64));
    if (x.tail[i] != y.tail[i]) return y.tail[i] < x.tail[i];
  }
}

// The uniform formed by x's digits after the 64th (its stored tail, then fresh words) is
// >= r/t, for 0 < r < t: digit-by-digit comparison with the long division of r by t.
bool tail_at_least(RandomBits& bits, const LazyUniform& x, std::uint64_t r, std::uint64_t t) {
  u128 remainder = r;
  for (std::size_t i = 0;; ++i) {
    const u128 shifted = remainder << 64;
    const auto digits = static_cast<std::uint64_t>(shifted / t);
    remainder = shifted - static_cast<u128>(digits) * t;
    const std::uint64_t word = i < x.tail.size() ? x.tail[i] : bits.take(64);
    if (word != digits) return word > digits;
    if (remainder == 0) return true;  // r/t's expansion ended and the tail equals it so far
  }
}

// floor(t·x) for a lazy uniform x, drawing digits until the floor is settled.
std::uint64_t floor_scaled(RandomBits& bits, LazyUniform& x, std::uint64_t t) {
  const int wanted = std::min(64, static_cast<int>(std::bit_width(t)) + 8);
  if (x.length < wanted) x.extend(bits, wanted - x.length);
  for (;;) {
    // x in [h, h + 1)·2^-L, so t·x·2^L lies in [t h, t h + t).
    const int length = x.length;
    const u128 low = static_cast<u128>(t) * (x.head >> (64 - length));
    const u128 high = low + t - 1;
    if ((low >> length) == (high >> length)) return static_cast<std::uint64_t>(low >> length);
    if (length < 64) {
      x.extend(bits, 64 - length);
      continue;
    }
    // The integer boundary B·2^64 lies in (low, low + t): floor is one more iff the digits after
    // the 64th, as a uniform, reach (B·2^64 - low)/t.
    const u128 boundary = ((low >> 64) + 1) << 64;
    const auto r = static_cast<std::uint64_t>(boundary - low);
    return static_cast<std::uint64_t>(low >> 64) + (tail_at_least(bits, x, r, t) ? 1 : 0);
  }
}

// von Neumann's trials, each adding one to v on rejection; on acceptance `first` holds F.
void exponential_trials(RandomBits& bits, std::uint64_t& v, LazyUniform& first) {
  LazyUniform a, b;
  for (;; ++v) {
    first.reset();
    LazyUniform* previous = &first;
    LazyUniform* current = &a;
    LazyUniform* spare = &b;
    bool odd = true;
    for (;;) {
      current->reset();
      if (!less(bits, *current, *previous)) break;
      odd = !odd;
      previous = current;
      std::swap(current, spare);
    }
    if (odd) return;
  }
}

// The same trials read off one peeked word: while no two compared uniforms share their first
// kChunk digits, exponential_trials reads exactly one kChunk-digit chunk per uniform, in order,
// and decides on it; those chunks are the word's bytes. Returns false (having consumed only the
// completed rejected trials) at the first tie or when the word runs out, so that
// exponential_trials can take over from the same bits.
bool exponential_trials_in_word(RandomBits& bits, std::uint64_t& v, LazyUniform& first) {
  static_assert(kChunk == 8);
  const std::uint64_t w = bits.peek64();
  const auto chunk = [w](int i) { return (w >> (56 - 8 * i)) & 0xFF; };
  int start = 0;  // the current trial's first chunk
  while (start < 8) {
    std::uint64_t previous = chunk(start);
    bool odd = true;
    int i = start + 1;
    for (;; ++i) {
      if (i == 8) break;
      const std::uint64_t current = chunk(i);
      if (current == previous) break;
      if (current > previous) {
        if (!odd) break;
        bits.consume(8 * (i + 1));
        first.head = chunk(start) << 56;
        first.length = 8;
        return true;
      }
      odd = !odd;
      previous = current;
    }
    if (i == 8 || chunk(i) == previous) break;
    ++v;  // an even run: rejected
    start = i + 1;
  }
  bits.consume(8 * start);
  return false;
}

}  // namespace

std::uint64_t exponential_floor(RandomBits& bits, std::uint64_t t_num, std::uint64_t t_den) {
  if (t_num < 1) throw InvalidArgument("exponential_floor: t_num must be >= 1, got 0");
  if (t_den < 1) throw InvalidArgument("exponential_floor: t_den must be >= 1, got 0");
  std::uint64_t v = 0;  // 2^64 rejections would take centuries of draws
  LazyUniform first;
  if (!exponential_trials_in_word(bits, v, first)) exponential_trials(bits, v, first);
  const u128 x = floor_scaled(bits, first, t_num) + static_cast<u128>(t_num) * v;
  const u128 y = (t_den & (t_den - 1)) == 0 ? x >> std::countr_zero(t_den) : x / t_den;
  return y > ~std::uint64_t{0} ? ~std::uint64_t{0} : static_cast<std::uint64_t>(y);
}

std::uint64_t geometric_exp(RandomBits& bits, std::uint64_t num, std::uint64_t den) {
  if (num < 1) throw InvalidArgument("geometric_exp: num must be >= 1, got 0");
  if (den < 1) throw InvalidArgument("geometric_exp: den must be >= 1, got 0");
  // q = exp(-num/den) = exp(-1/t) with t = den/num.
  return exponential_floor(bits, den, num);
}

std::uint64_t geometric_exp(Rng& rng, std::uint64_t num, std::uint64_t den) {
  RandomBits bits(rng);
  return geometric_exp(bits, num, den);
}

}  // namespace dpstats
