// Exact coins of the scale layer (exact_coins.hpp; docs/proofs/scale.md §1c).
#include "exact_coins.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/random/bernoulli.hpp"
#include "dpstats/random/exp_constant.hpp"

namespace dpstats::scale_detail {
namespace {

constexpr double kFar = 44;  // e^-44 < 2^-63: its window decides a trial from about two bits

// Bernoulli(e^-44), exactly: true iff a uniform u in [0, 1) is below e^-44 < 2^-63. When u's
// first 64 bits w exceed 1, u >= 2^-63 and the answer is false, read off the bits up to w's first
// one (a stopping time: the bits after it stay unread and independent); otherwise (probability
// 2^-63) the constant's exact comparison decides on the same bits.
bool exp_minus_44(RandomBits& bits) {
  const std::uint64_t w = bits.peek64();
  if (w > 1) {
    bits.consume(std::countl_zero(w) + 1);
    return false;
  }
  static const ExpConstant c{44, 1};
  static const ExpConstant::Window window = c.window();
  return bernoulli_exp_constant(bits, c, window);
}

}  // namespace

bool bernoulli_exp_fast(RandomBits& bits, double gamma) {
  require(std::isfinite(gamma) && gamma >= 0, "bernoulli_exp_fast: gamma must be finite and >= 0");
  // exp(-gamma) = e^-44 · exp(-(gamma - 44)), independent factors. gamma - 44 is exact for
  // 44 <= gamma < 2^55 (Sterbenz below 88; above, 44 is a multiple of ulp(gamma) <= 4 and so is
  // the difference, which has fewer significant bits than gamma); beyond 2^55 the probability is
  // below exp(-2^55) and the first factor ends the loop with probability 1 - e^-44 each time.
  while (gamma >= kFar) {
    if (!exp_minus_44(bits)) return false;
    gamma -= kFar;
  }
  return bernoulli_exp(bits, gamma);
}

bool bernoulli_exp_fast(RandomBits& bits, u128 num, u128 den) {
  require(den >= 1 && (den >> 64) == 0, "bernoulli_exp_fast: den must be in [1, 2^64)");
  const u128 step = static_cast<u128>(44) * den;  // < 2^70
  while (num >= step) {
    if (!exp_minus_44(bits)) return false;
    num -= step;
  }
  return bernoulli_exp(bits, num, den);
}

namespace {

// Whether w holds a run of k zeros (16 < k <= 32): r marks the bits of ~w that start runs of
// ones of 2, 4, 8, then 16, and two runs of 16 starting k - 16 <= 16 apart cover k (bits shifted
// in from above count as ones of w, so a run ends at the word's edge).
bool has_zeros(std::uint64_t w, int k) {
  std::uint64_t r = ~w;
  r &= r >> 1;
  r &= r >> 2;
  r &= r >> 4;
  r &= r >> 8;
  return (r & (r >> (k - 16))) != 0;
}

}  // namespace

// A coin Bernoulli(2^-k · c) (16 < k <= 32, c = the constant, <= 1) is "the first k bits of a
// fresh uniform are all 0, and then Bernoulli(c)": the index of the first true coin among `count`
// such coins, or `count`. The zero-runs are read 64 bits at a time: a coin whose run of zeros
// ends in a 1 within its first k bits is false and consumes those bits (about 2 per coin); a coin
// whose first k bits are all 0 (probability 2^-k) takes Bernoulli(c) on fresh bits, the rest of
// the word being dropped (dropping unread bits keeps every later bit fresh and independent).
std::size_t first_true(RandomBits& bits, std::size_t count, int k, const ExpConstant& c,
                       const ExpConstant::Window& window) {
  require(k > 16 && k <= 32, "first_true: k must be in (16, 32], got {}", k);
  std::size_t coin = 0;
  int run = 0;  // zeros the current coin has read
  while (coin < count) {
    std::uint64_t w = bits.take(64);
    // A word whose leading zeros do not complete the current coin's k, and that holds no run of
    // k zeros (inner, or trailing: a fresh coin's), settles one coin per 1 bit and leaves its
    // trailing zeros to the next coin: the loop below reads it to the same end, one coin at a
    // time.
    if (w != 0 && run + std::countl_zero(w) < k && !has_zeros(w, k)) {
      const auto settled = static_cast<std::size_t>(std::popcount(w));
      if (settled >= count - coin) return count;  // the rest of the word is dropped either way
      coin += settled;
      run = std::countr_zero(w);
      continue;
    }
    int left = 64;
    while (left > 0 && coin < count) {
      const int lz = w == 0 ? 64 : std::countl_zero(w);
      if (run + std::min(lz, left) >= k) {  // the coin's first k bits are all 0
        if (bernoulli_exp_constant(bits, c, window)) return coin;
        ++coin;
        run = 0;
        break;  // drop the rest of this word
      }
      if (lz >= left) {  // the rest of the word is zeros: the run goes on in the next word
        run += left;
        break;
      }
      ++coin;  // a 1 within the first k bits: false
      run = 0;
      left -= lz + 1;
      w = lz + 1 >= 64 ? 0 : w << (lz + 1);
    }
  }
  return count;
}

namespace {

// Bernoulli(e^-22 · 2^31) = the second factor of Bernoulli(e^-22) = Bernoulli(2^-31) AND it
// (e^-22 · 2^31 = 0.5997...).
constexpr int kFarBits = 31;

const ExpConstant& far_constant() {
  static const ExpConstant c{22, 1, static_cast<u128>(1) << kFarBits, 1};
  return c;
}

const ExpConstant::Window& far_window() {
  static const ExpConstant::Window w = far_constant().window();
  return w;
}

constexpr std::uint32_t kFarBit = std::uint32_t{1} << 31;

// The walk over candidates (index, with kFarBit when its e^-44 factor came true) in a uniformly
// random order; the first candidate whose coin is true.
template <class Gamma>
std::size_t walk_in_random_order(std::vector<std::uint32_t>& walk, Gamma gamma_of,
                                 RandomBits& bits) {
  for (std::size_t k = 0; k < walk.size(); ++k) {
    std::swap(walk[k], walk[k + bits.uniform_below(walk.size() - k)]);
    const std::uint32_t i = walk[k] & ~kFarBit;
    const bool far = (walk[k] & kFarBit) != 0;
    const double g = gamma_of(i);
    if (bernoulli_exp_fast(bits, far ? g - kFar : g)) return i;
  }
  throw std::logic_error("permute-and-flip: no candidate accepted (no gamma equal to 0)");
}

}  // namespace

std::size_t permute_and_flip_gaps(std::span<const double> gamma, RandomBits& bits) {
  require(!gamma.empty() && gamma.size() < (std::size_t{1} << 31),
          "permute_and_flip_gaps: between 1 and 2^31 - 1 candidates");
  std::vector<std::uint32_t> walk;  // candidate index, with kFarBit when its e^-44 came true
  for (std::size_t i = 0; i < gamma.size(); ++i) {
    require(std::isfinite(gamma[i]) && gamma[i] >= 0,
            "permute_and_flip_gaps: gamma[{}] must be finite and >= 0", i);
    if (gamma[i] < kFar) {
      walk.push_back(static_cast<std::uint32_t>(i));
    } else if (exp_minus_44(bits)) {
      walk.push_back(static_cast<std::uint32_t>(i) | kFarBit);
    }
  }
  // Coins are independent of the order, so the walk restricted to these candidates, in a
  // uniformly random order, is permute-and-flip over all of them.
  return walk_in_random_order(walk, [&](std::uint32_t i) { return gamma[i]; }, bits);
}

// The positions a Fisher-Yates walk over `entries` candidates has moved: position -> candidate,
// the position itself where never written. Up to 2^22 candidates a thread's arrays, kept between
// calls: a bit per position that says whether it was written (a few KiB, read first: most of a
// walk's reads find it unwritten) and the candidates written there; a walk clears the bits it
// set. Beyond 2^22 candidates, a hash map.
class Moved {
 public:
  explicit Moved(std::size_t entries) : dense_(entries <= (std::size_t{1} << 22)) {
    if (!dense_) return;
    if (slots().size() < entries) slots().resize(entries);
    if (marks().size() < entries / 64 + 1) marks().resize(entries / 64 + 1, 0);
    slot_ = slots().data();
    mark_ = marks().data();
  }
  ~Moved() {
    for (std::size_t p : written_) mark_[p >> 6] = 0;  // every bit set there was this walk's
  }
  Moved(const Moved&) = delete;
  Moved& operator=(const Moved&) = delete;
  std::size_t at(std::size_t position) const {
    if (dense_)
      return (mark_[position >> 6] >> (position & 63) & 1) != 0 ? slot_[position] : position;
    const auto it = sparse_.find(position);
    return it == sparse_.end() ? position : it->second;
  }
  void set(std::size_t position, std::size_t candidate) {
    if (!dense_) {
      sparse_[position] = candidate;
      return;
    }
    const std::uint64_t bit = std::uint64_t{1} << (position & 63);
    if ((mark_[position >> 6] & bit) == 0) {
      mark_[position >> 6] |= bit;
      written_.push_back(position);
    }
    slot_[position] = static_cast<std::uint32_t>(candidate);
  }

 private:
  static std::vector<std::uint32_t>& slots() {
    thread_local std::vector<std::uint32_t> s;
    return s;
  }
  static std::vector<std::uint64_t>& marks() {
    thread_local std::vector<std::uint64_t> m;
    return m;
  }
  bool dense_;
  std::uint32_t* slot_ = nullptr;
  std::uint64_t* mark_ = nullptr;
  std::vector<std::size_t> written_;
  std::unordered_map<std::size_t, std::size_t> sparse_;
};

namespace {

// bernoulli_exp(bits, gamma) for a near segment's gamma (< 44), with gamma's exact fraction
// mantissa / 2^k, its whole part and its sampler made once: a walk flips many coins of one
// segment. The same steps on the same bits as bernoulli_exp (random/bernoulli.cpp): it converts
// gamma to mantissa / 2^k and runs BernoulliExp(2^k) on the mantissa -- Bernoulli(e^-1) alone
// when gamma is 1, else floor(gamma) trials of Bernoulli(e^-1) up to the first failure, then the
// sampler on the remainder (below the denominator: the fraction's step alone).
class SegmentCoin {
 public:
  explicit SegmentCoin(double gamma) : gamma_(gamma) {
    if (gamma == 0) return;
    int exponent = 0;
    const double fraction = std::frexp(gamma, &exponent);
    auto mantissa = static_cast<std::uint64_t>(std::ldexp(fraction, 53));
    const int shift = exponent - 53;
    if (shift >= 0) return;  // gamma >= 2^52: bernoulli_exp itself
    const int zeros = std::min(std::countr_zero(mantissa), -shift);
    mantissa >>= zeros;
    const int k = -(shift + zeros);
    if (k > 127) return;  // gamma < 2^-74: bernoulli_exp itself
    const u128 den = static_cast<u128>(1) << k;
    one_ = mantissa == den;
    whole_ = mantissa / den;
    rest_ = mantissa % den;
    sampler_.emplace(den);
  }
  bool operator()(RandomBits& bits) const {
    if (gamma_ == 0) return true;
    if (!sampler_) return bernoulli_exp(bits, gamma_);
    if (one_) return bernoulli_exp_minus_one(bits);
    for (u128 i = 0; i < whole_; ++i)
      if (!bernoulli_exp_minus_one(bits)) return false;
    return (*sampler_)(bits, rest_);
  }

 private:
  double gamma_;
  bool one_ = false;
  u128 whole_ = 0, rest_ = 0;
  std::optional<BernoulliExp> sampler_;
};

// A walk's candidates, in order: every cell of a run near the data (a refine grid puts ~10^5 of
// them in the walk of every column), then a far stretch's cells whose e^-22 factor came true,
// kept as segments of consecutive cells (`entries` candidates in all).
struct Segment {
  std::size_t entry, first;  // the segment's first candidate, and its cell
  double gamma;
  bool far;
};

// Appends to `segments` the cells of the far stretch that starts at runs[r] (this run and the far
// runs that follow it cell after cell) whose first factor e^-22 = 2^-31 · (e^-22 2^31) came true,
// decided in bulk over the stretch; returns the run after the stretch.
std::size_t far_stretch(std::span<const CellRun> runs, std::size_t r, RandomBits& bits,
                        const std::function<double(std::size_t)>& exact_gamma,
                        std::vector<Segment>& segments, std::size_t& entries) {
  std::size_t end = r + 1, length = runs[r].length;
  while (end < runs.size() && runs[end].gamma >= kFarGamma &&
         runs[end].first == runs[end - 1].first + runs[end - 1].length) {
    length += runs[end].length;
    ++end;
  }
  std::size_t at = r, before = 0;  // the run that holds stretch cell k, and its first k
  for (std::size_t k = 0; k < length; ++k) {
    k += first_true(bits, length - k, kFarBits, far_constant(), far_window());
    if (k == length) break;
    while (k >= before + runs[at].length) before += runs[at++].length;
    const std::size_t cell = runs[at].first + (k - before);
    double gamma = runs[at].gamma;
    if (!runs[at].exact) {
      require(static_cast<bool>(exact_gamma), "permute_and_flip_runs: no exact gamma given");
      gamma = exact_gamma(cell);
      require(std::isfinite(gamma) && gamma >= runs[at].gamma,
              "permute_and_flip_runs: an exact gamma below its run's bound");
    }
    segments.push_back({entries, cell, gamma, true});
    entries += 1;
  }
  return end;
}

}  // namespace

std::size_t permute_and_flip_runs(std::span<const CellRun> runs, RandomBits& bits,
                                  const std::function<double(std::size_t)>& exact_gamma) {
  // The walk's random order (Fisher-Yates, one uniform per step) is kept as the positions it has
  // moved: a walk visits a few hundred candidates at most, and the others cost nothing. The same
  // draws, hence the same cell, as the walk over the expanded candidates.
  std::vector<Segment> segments;
  segments.reserve(runs.size());
  std::size_t entries = 0;
  for (std::size_t r = 0; r < runs.size();) {
    const CellRun& run = runs[r];
    require(std::isfinite(run.gamma) && run.gamma >= 0 &&
                run.first + run.length < (std::size_t{1} << 31) &&
                (run.exact || run.gamma >= kFarGamma),
            "permute_and_flip_runs: gamma must be finite and >= 0 (>= kFarGamma where not "
            "exact), cells below 2^31");
    if (run.gamma >= kFarGamma) {
      r = far_stretch(runs, r, bits, exact_gamma, segments, entries);
      continue;
    }
    if (run.length > 0) segments.push_back({entries, run.first, run.gamma, false});
    entries += run.length;
    ++r;
  }
  // The segment of a candidate: from the segment that holds the first candidate of its block of
  // 2^kBlockBits, past the few segments that start inside the block.
  constexpr std::size_t kBlockBits = 8;
  std::vector<std::uint32_t> block_start((entries >> kBlockBits) + 1);
  for (std::size_t b = 0, s = 0; b < block_start.size(); ++b) {
    while (s + 1 < segments.size() && segments[s + 1].entry <= (b << kBlockBits)) ++s;
    block_start[b] = static_cast<std::uint32_t>(s);
  }
  std::vector<std::optional<SegmentCoin>> coins(segments.size());
  Moved moved(entries);
  for (std::size_t k = 0; k < entries; ++k) {
    const std::size_t j = k + bits.uniform_below(entries - k);
    const std::size_t e = moved.at(j);
    if (j != k) moved.set(j, moved.at(k));
    std::size_t s = block_start[e >> kBlockBits];
    while (s + 1 < segments.size() && segments[s + 1].entry <= e) ++s;
    const Segment& seg = segments[s];
    bool accepted = false;
    if (seg.far) {
      accepted = bernoulli_exp_fast(bits, seg.gamma - kFarGamma);
    } else {
      if (!coins[s]) coins[s].emplace(seg.gamma);
      accepted = (*coins[s])(bits);
    }
    if (accepted) return seg.first + (e - seg.entry);
  }
  throw std::logic_error("permute-and-flip: no candidate accepted (no gamma equal to 0)");
}

bool discrete_laplace_at_least(RandomBits& bits, i128 g, u128 num, u128 den) {
  require(num >= 1 && den >= 1 && (num >> 64) == 0 && (den >> 64) == 0,
          "discrete_laplace_at_least: num and den must be in [1, 2^64)");
  // exp(-y / t) = exp(-y·den / num). Each loop is one draw of (sign, magnitude) in the law of
  // discrete_laplace.hpp; only the events the answer needs are decided.
  if (g >= 1) {
    const auto y = static_cast<u128>(g);
    for (;;) {
      if (!bits.bit()) return bernoulli_exp_fast(bits, y * den, num);  // nu = Y >= g
      if (bernoulli_exp_fast(bits, den, num)) return false;           // nu = -Y <= -1 < g
      // (negative, Y = 0): rejected, draw again
    }
  }
  const auto j = static_cast<u128>(1 - g);  // nu >= g <=> not (nu <= -j), j >= 1
  for (;;) {
    if (!bits.bit()) return true;                          // nu = Y >= 0 >= g
    if (!bernoulli_exp_fast(bits, den, num)) continue;     // (negative, Y = 0): rejected
    return !bernoulli_exp_fast(bits, (j - 1) * den, num);  // Y >= 1: nu <= -j iff Y >= j
  }
}

}  // namespace dpstats::scale_detail
