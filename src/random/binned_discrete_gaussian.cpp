#include "dpstats/random/binned_discrete_gaussian.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "dpstats/error.hpp"
#include "exp_interval.hpp"
#include "lazy_compare.hpp"

namespace dpstats {
namespace {

using random_detail::Big;
using random_detail::Interval;

constexpr unsigned kScale = 192;  // working precision of the bin bounds (2^-192)
constexpr std::uint64_t kMaxMagnitude = std::uint64_t{1} << 62;

// The invariants the exactness proof rests on are checked, not assumed: a failure here is a bug.
void ensure(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("BinnedDiscreteGaussian: ") + what);
}

// Vose's alias method on integer weights summing to cells · capacity exactly: cell i keeps its
// own outcome i below threshold[i] (of `capacity`) and gives the rest to alias[i]. Every outcome's
// total share is then its weight exactly (no rounding: integer bookkeeping only).
void build_alias(std::vector<u128> weight, u128 capacity, std::vector<std::uint64_t>& threshold,
                 std::vector<std::uint16_t>& alias) {
  const std::size_t cells = weight.size();
  threshold.assign(cells, 0);
  alias.assign(cells, 0);
  std::vector<std::size_t> small, large;
  for (std::size_t i = 0; i < cells; ++i) (weight[i] < capacity ? small : large).push_back(i);
  while (!small.empty() && !large.empty()) {
    const std::size_t s = small.back(), l = large.back();
    small.pop_back();
    threshold[s] = static_cast<std::uint64_t>(weight[s]);
    alias[s] = static_cast<std::uint16_t>(l);
    weight[l] -= capacity - weight[s];
    if (weight[l] < capacity) {
      large.pop_back();
      small.push_back(l);
    }
  }
  for (const std::size_t l : large) {
    ensure(weight[l] == capacity, "alias table weights do not sum to the cells");
    threshold[l] = static_cast<std::uint64_t>(capacity);
    alias[l] = static_cast<std::uint16_t>(l);
  }
  ensure(small.empty(), "alias table weights do not sum to the cells");
}

// E_j = x^(j^2) for j = 0..K, x = exp(-B^2/(2 sigma^2)), bracketed at 2^-192:
// E_{j+1} = E_j · x^(2j+1).
std::vector<Interval> envelopes(std::size_t bins, u128 width2_den, std::uint64_t num) {
  const Big q = random_detail::to_big(2 * static_cast<u128>(num));
  const Interval x = random_detail::exp_minus(random_detail::to_big(width2_den), q, kScale);
  const Interval x2 = random_detail::multiply(x, x, kScale);
  std::vector<Interval> envelope(bins + 1);
  envelope[0] = {Big(1) << kScale, Big(1) << kScale};
  Interval odd_power = x;  // x^(2j+1)
  for (std::size_t j = 0; j < bins; ++j) {
    envelope[j + 1] = random_detail::multiply(envelope[j], odd_power, kScale);
    odd_power = random_detail::multiply(odd_power, x2, kScale);
  }
  return envelope;
}

// e_j = ceil(2^64 upper(E_j)) >= 1.
std::vector<Big> upper_units(const std::vector<Interval>& envelope) {
  const Big down = Big(1) << (kScale - 64);
  std::vector<Big> e(envelope.size());
  for (std::size_t j = 0; j < envelope.size(); ++j) e[j] = random_detail::ceil_div(envelope[j].hi, down);
  return e;
}

// The scale D with sum_{j<K} ceil(D e_j / 2^64) + ceil(2 D e_K / 2^64) <= 2^64 (the K core bins
// and the tail, each rounded up by at most one unit, leave room for the rounding).
Big proposal_scale(const std::vector<Big>& e) {
  const std::size_t bins = e.size() - 1;
  Big total = 2 * e[bins];
  for (std::size_t j = 0; j < bins; ++j) total += e[j];
  return (((Big(1) << 64) - bins - 2) << 64) / total;
}

}  // namespace

bool BinnedDiscreteGaussian::eligible(std::uint64_t sigma2_num, std::uint64_t sigma2_den) {
  return sigma2_den >= 1 && sigma2_den <= (std::uint64_t{1} << 32) &&
         sigma2_num / sigma2_den >= (std::uint64_t{1} << 20) &&
         static_cast<u128>(sigma2_num) <= (static_cast<u128>(sigma2_den) << 62);
}

std::shared_ptr<const BinnedDiscreteGaussian> BinnedDiscreteGaussian::shared(
    std::uint64_t sigma2_num, std::uint64_t sigma2_den) {
  static std::mutex mutex;
  static std::map<std::pair<std::uint64_t, std::uint64_t>,
                  std::shared_ptr<const BinnedDiscreteGaussian>>
      cache;
  const std::lock_guard lock(mutex);
  const auto key = std::make_pair(sigma2_num, sigma2_den);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= 64) cache.clear();  // bounded: a process with many sigmas rebuilds
  auto built = std::make_shared<const BinnedDiscreteGaussian>(sigma2_num, sigma2_den);
  cache.emplace(key, built);
  return built;
}

BinnedDiscreteGaussian::BinnedDiscreteGaussian(std::uint64_t sigma2_num, std::uint64_t sigma2_den)
    : num_(sigma2_num),
      den_(sigma2_den),
      accept_(2 * static_cast<u128>(sigma2_num)),
      inverse_two_num_(1.0 / (2.0 * static_cast<double>(sigma2_num))) {
  if (!eligible(sigma2_num, sigma2_den)) {
    throw InvalidArgument(fmt::format(
        "BinnedDiscreteGaussian: needs sigma^2 = num/den in [2^20, 2^62] with den <= 2^32, got "
        "{} / {}",
        sigma2_num, sigma2_den));
  }
  // floor(log2 sigma) = floor(floor(log2 floor(sigma^2)) / 2); B = 2^b in (sigma/32, sigma/16].
  const int log2_sigma = (static_cast<int>(std::bit_width(num_ / den_)) - 1) / 2;
  bin_bits_ = log2_sigma - 4;
  const u128 width = static_cast<u128>(1) << bin_bits_;
  const u128 width2_den = width * width * den_;  // B^2 den < 2^(52 + 32)
  // K = ceil(sigma^2 / B^2) in [256, 1024]: K B^2 >= sigma^2 makes the tail exponent >= i.
  const auto bins = static_cast<std::size_t>((num_ + width2_den - 1) / width2_den);
  ensure(bins >= 2 && bins + 2 <= (std::size_t{1} << kCellBits), "bin count out of range");
  ensure(static_cast<u128>(bins) * width2_den >= num_, "K B^2 < sigma^2");

  const std::vector<Interval> envelope = envelopes(bins, width2_den, num_);
  const std::vector<Big> e = upper_units(envelope);
  const Big down = Big(1) << (kScale - 64), two64 = Big(1) << 64;
  const Big scale_d = proposal_scale(e);  // D < 2^64
  scale_d_ = random_detail::to_u128(scale_d);
  Big used = 0;
  bins_.resize(bins);
  floors_.resize(bins);
  for (std::size_t j = 0; j < bins; ++j) {
    const Big weight = random_detail::ceil_div(scale_d * e[j], two64);  // P_j >= D E_j: C_j <= 1
    used += weight;
    Bin& bin = bins_[j];
    bin.weight = static_cast<std::uint64_t>(weight);
    // C_j = E_j D / P_j at 2^-64 from E_j's bracket.
    const Big lo = (envelope[j].lo * scale_d) / (weight * down);
    const Big hi = random_detail::ceil_div(envelope[j].hi * scale_d, weight * down);
    ensure(lo <= two64, "a bin constant exceeds 1");  // C_0 = 1 exactly
    // A lower bound of exactly 2^64 (C_0 = 1) is kept as 2^64 - 1, still a lower bound.
    bin.window = {lo == two64 ? random_detail::kMax64 : static_cast<std::uint64_t>(lo),
                  random_detail::to_u128(hi)};
    // Every m in the bin has f(m) >= E_{j+1}, so its acceptance is at least E_{j+1} D / P_j.
    floors_[j] = static_cast<std::uint64_t>(
        std::min<Big>((envelope[j + 1].lo * scale_d) / (weight * down), two64 - 1));
    // Doubles bracketing C_j: 53-bit truncations of the bounds, exact conversions.
    bin.c_lo = std::ldexp(static_cast<double>(static_cast<std::uint64_t>(lo >> 11)), -53);
    bin.c_hi = std::ldexp(static_cast<double>(static_cast<std::uint64_t>((hi + 2047) >> 11)), -53);
  }
  // P_tail >= 2 D E_K >= D E_K / (1 - e^-1): C_tail <= 1.
  const Big tail = random_detail::ceil_div(2 * scale_d * e[bins], two64);
  used += tail;
  ensure(used <= two64, "proposal weights exceed 2^64");
  tail_weight_ = static_cast<std::uint64_t>(tail);
  reject_weight_ = static_cast<std::uint64_t>(two64 - used);  // < 2^64 since every P_j >= 1
  const Big kk = bins;
  tail_constant_ = ExpConstant{random_detail::to_u128(kk * kk * random_detail::to_big(width2_den)),
                               2 * static_cast<u128>(num_), random_detail::to_u128(scale_d),
                               random_detail::to_u128(tail), true};
  tail_window_ = tail_constant_.window();

  // The proposal over outcomes 0..K-1 (core bins), K (tail), K+1 (reject) as an alias table of
  // 2^11 cells holding 2^53 units of 2^-64 each.
  std::vector<u128> weight(std::size_t{1} << kCellBits, 0);
  for (std::size_t j = 0; j < bins; ++j) weight[j] = bins_[j].weight;
  weight[bins] = tail_weight_;
  weight[bins + 1] = reject_weight_;
  build_alias(std::move(weight), static_cast<u128>(1) << (64 - kCellBits), cell_threshold_,
              cell_alias_);
}

// The tail bin K + i, i ~ Geometric(1 - e^-1) (i successes of Bernoulli(e^-1)), m = (K + i)B + r:
// accepted with probability C_tail · exp(-((m^2 - K^2 B^2) den - 2 i num) / (2 num)). Returns 0
// on rejection (m > 0 always). Rare (P_tail is a few units of 2^-64), so it runs on big integers.
std::int64_t BinnedDiscreteGaussian::tail(RandomBits& bits, std::uint64_t r) const {
  std::uint64_t i = 0;
  while (bernoulli_exp_minus_one(bits)) ++i;
  const Big width = Big(1) << bin_bits_;
  const Big m = (Big(bins_.size()) + i) * width + r;
  if (m >= kMaxMagnitude) return 0;  // acceptance below exp(-2^60): see the header
  const Big k_width = Big(bins_.size()) * width;
  const Big exponent = (m * m - k_width * k_width) * den_ - 2 * Big(i) * num_;
  ensure(exponent >= 0, "negative tail exponent");
  const Big q = 2 * Big(num_);
  for (Big whole = exponent / q; whole != 0; --whole) {
    if (!bernoulli_exp_minus_one(bits)) return 0;
  }
  if (!accept_(bits, random_detail::to_u128(exponent % q))) return 0;
  if (!bernoulli_exp_constant(bits, tail_constant_, tail_window_)) return 0;
  return static_cast<std::int64_t>(m);
}

// Accepts m = jB + r in core bin j with probability a = C_j · exp(-delta), delta =
// r (2jB + r) den / (2 num), exactly. For delta <= 1/2, a is bracketed in doubles:
//  * delta_hat = fl(fl(n) · fl(1 / fl(2 num))) is within (1 ± 4.01u) of delta (u = 2^-53), so
//    delta- = delta_hat (1 - 2^-50) <= delta <= delta+ = delta_hat (1 + 2^-50);
//  * for 0 <= x <= 1 the alternating Taylor sums give 1 - x + x^2/2 - x^3/6 <= exp(-x) <=
//    1 - x + x^2/2, so P_lo(delta+) <= exp(-delta) <= P_hi(delta-);
//  * each bracket, evaluated in doubles with every intermediate in [0, 1], is off by less than
//    8u, and its product with c_lo <= C_j <= c_hi by less than 10u < 2^-49.6 in all; the integer
//    bounds below subtract / add 2^-47 (2^17 units of 2^-64) beyond the truncation.
// The caller has checked the bin's floor (u below it accepts). Past it, a uniform u below the
// lower bound accepts, one at or above the upper bound rejects (reading only the bits that
// certify it); otherwise (probability about delta^3/6, or delta > 1/2 beyond ~8 sigma) the exact
// comparison of u with a = exp(-m^2 den / (2 num)) · D / P_j decides from the same bits.
bool BinnedDiscreteGaussian::accept_above_floor(RandomBits& bits, std::size_t j, std::uint64_t r,
                                                std::uint64_t w) const {
  const Bin& bin = bins_[j];
  const std::uint64_t low = static_cast<std::uint64_t>(j) << bin_bits_;
  // Past the floor, every decision below also consumes the bits that certified u >= floor: the
  // count read must depend on the bits read only (a stopping time), or the bits left for the
  // next draw would be conditioned on u >= floor.
  const int above_floor = random_detail::bits_above(w, floors_[j]);
  const auto exact = [&] {
    bits.consume(64);
    const u128 m = low + r;
    return exp_constant_less(bits, w,
                             ExpConstant{m * m * den_, 2 * static_cast<u128>(num_),
                                         scale_d_, bin.weight, false});
  };
  const u128 n = static_cast<u128>(r) * (2 * low + r) * den_;  // < 2^96
  const double delta = static_cast<double>(n) * inverse_two_num_;
  if (delta > 0.5) return exact();  // beyond ~8 sigma
  const double up = delta * (1 + 0x1p-50), down = delta * (1 - 0x1p-50);
  const double lower = bin.c_lo * (1 - up * (1 - up * (0.5 - up / 6)));
  const double upper = bin.c_hi * (1 - down * (1 - down * 0.5));
  constexpr std::uint64_t kMargin = std::uint64_t{1} << 17;
  // x 2^63 < 2^63 converts with the signed instruction (truncating); doubling loses one unit.
  std::uint64_t lo =
      lower >= 1.0 ? random_detail::kMax64
                   : static_cast<std::uint64_t>(static_cast<std::int64_t>(lower * 0x1p63)) << 1;
  lo = lo > kMargin ? lo - kMargin : 0;
  if (w < lo) {
    bits.consume(std::max(above_floor, random_detail::bits_below(w, lo)));
    return true;
  }
  if (upper < 1.0) {
    const std::uint64_t hi =
        (static_cast<std::uint64_t>(static_cast<std::int64_t>(upper * 0x1p63)) << 1) + 2 * kMargin;
    if (w >= hi) {
      bits.consume(std::max(above_floor, random_detail::bits_above(w, hi)));
      return false;
    }
  }
  return exact();
}

std::int64_t BinnedDiscreteGaussian::operator()(RandomBits& bits) const {
  const std::size_t bins = bins_.size();
  constexpr std::uint64_t kCellMask = (std::uint64_t{1} << (64 - kCellBits)) - 1;
  for (;;) {
    // The alias lookup reads the cell's 11 bits and then only the bits that settle v < threshold
    // (up to the first bit where they differ, or none when the cell has no alias).
    const std::uint64_t w = bits.peek64();
    const std::size_t cell = w >> (64 - kCellBits);
    const std::uint64_t threshold = cell_threshold_[cell];
    std::size_t outcome = cell;
    if (threshold == kCellMask + 1) {
      bits.consume(kCellBits);
    } else {
      const std::uint64_t difference = (w & kCellMask) ^ threshold;
      bits.consume(difference == 0 ? 64 : std::countl_zero(difference) + 1);
      if ((w & kCellMask) >= threshold) outcome = cell_alias_[cell];
    }
    if (outcome > bins) continue;  // "reject"
    const std::uint64_t draw = bits.take(bin_bits_ + 1);
    const std::uint64_t r = draw >> 1;
    const bool negative = (draw & 1) != 0;
    std::int64_t m;
    if (outcome == bins) {
      m = tail(bits, r);
      if (m == 0) continue;
    } else {
      const std::uint64_t low = static_cast<std::uint64_t>(outcome) << bin_bits_;  // jB
      if (negative && low + r == 0) continue;
      // Most uniforms fall below the bin's floor, a lower bound on the acceptance for every m in
      // the bin (about 95% at m ~ sigma): accepted from their leading bits, with no arithmetic.
      const std::uint64_t w = bits.peek64();
      if (w < floors_[outcome]) {
        bits.consume(random_detail::bits_below(w, floors_[outcome]));
      } else if (!accept_above_floor(bits, outcome, r, w)) {
        continue;
      }
      m = static_cast<std::int64_t>(low + r);
    }
    return negative ? -m : m;
  }
}

}  // namespace dpstats
