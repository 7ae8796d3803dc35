// Stability-based histogram (Bun, Nissim & Stemmer 2016; docs/proofs/substrate.md §7),
// with exact discrete Laplace noise on integer counts.
//
// Mechanism: count every non-empty bin; add Y ~ DLap(t), P(y) ∝ exp(-|y|/t), to each count; release
// (bin, count + Y) only when count + Y >= tau. Empty bins are never touched (they output nothing).
//
// Noise scale: t >= Δ1/ε with Δ1 the l1 change of the count vector on the bins non-empty in both
// neighbours: 2 under replace-one (a record leaves one bin and enters another), 1 under add/remove.
//
// Threshold: a bin with true count 1 is released with probability p = P[Y >= tau - 1] <= δ/2;
// tau = 1 + m with m the smallest integer such that P[Y >= m] = r^m / (1 + r) <= δ/2, r = e^{-1/t}.
//
// Proof sketch (neighbours D, D'; C = bins non-empty in both; B_D = bins non-empty only in D, each
// of count exactly 1; the outputs restricted to C are (ε, 0)-indistinguishable by the discrete
// Laplace mechanism, and bins outside C are independent of them):
//  * add/remove (|B_D| + |B_D'| <= 1, and C changes by <= 1 in l1):
//      P_D[S] <= P_D[S restricted to C, no B_D bin] + P_D[a B_D bin released] <= e^ε P_D'[S] + p.
//  * replace-one (|B_D|, |B_D'| <= 1). If C changes by 2 in l1, then B_D = B_D' = ∅: pure ε.
//    Otherwise C changes by at most 1 (cost ε/2). Write S0 for the outputs in S with bins in C only;
//    P_D[S] <= P_D[S0] + p·|B_D|, and
//      P_D[S0] = P_D[C ∈ S0]·(1 - p)^{|B_D|} <= e^{ε/2} P_D'[C ∈ S0] = e^{ε/2} P_D'[S0] / (1 - p)^{|B_D'|}.
//    |B_D| = |B_D'| = 1 leaves C unchanged: P_D[S0] = P_D'[S0]. |B_D| = 1, |B_D'| = 0 costs the
//    additive p. |B_D| = 0, |B_D'| = 1: the excess of P_D[S0] over e^ε P_D'[S0] is at most
//    max(0, e^{ε/2} − e^ε (1 − p)), which for p = δ/2 and δ < 1 is < δ/2 (with x = e^{ε/2} > 1 it
//    reduces to δ(x + 1)/2 < x). Hence P_D[S] <= e^ε P_D'[S] + δ/2 in every case.
// So the threshold is set from the exact discrete-Laplace tail at δ/2 per bin, as the header states.
#include "dpstats/mechanisms/histogram.hpp"

#include "dpstats/mechanisms/draw_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/random/discrete_laplace.hpp"

namespace dpstats {
namespace {

// discrete_laplace requires scale_num < 2^56 (discrete_laplace.hpp).
constexpr double kMaxScaleNum = 0x1p55;

struct RationalScale {
  std::uint64_t num = 0, den = 1;  // t = num / den >= Δ1 / ε
  long double value() const { return static_cast<long double>(num) / static_cast<long double>(den); }
};

double count_sensitivity(Neighbouring neighbouring) {
  return neighbouring == Neighbouring::replace_one ? 2.0 : 1.0;
}

void check_arguments(double epsilon, double delta) {
  check_epsilon(epsilon);
  check_delta_positive(delta);
}

// The smallest dyadic rational num / 2^k >= Δ1/ε with about 53 significant bits.
RationalScale dlap_scale(double epsilon, Neighbouring neighbouring) {
  const double sensitivity = count_sensitivity(neighbouring);
  // fl(Δ1/ε) is within one rounding of the exact quotient; the next double up is above it.
  const double t_up = std::nextafter(sensitivity / epsilon, INFINITY);
  require(t_up < kMaxScaleNum,
          fmt::format("epsilon must be >= {} for the stability histogram (the discrete Laplace "
                      "scale {}/epsilon must stay below 2^55), got {}",
                      sensitivity / kMaxScaleNum, sensitivity, epsilon));
  const int k = std::clamp(52 - std::ilogb(t_up), 0, 62);
  RationalScale s;
  s.num = static_cast<std::uint64_t>(std::ceil(std::ldexp(t_up, k)));  // ldexp by 2^k is exact
  s.den = std::uint64_t{1} << k;
  if (s.num == 0) s.num = 1;
  return s;
}

// tau = 1 + m, m = min { m >= 1 : P[Y >= m] = r^m / (1 + r) <= δ/2 }, Y ~ DLap(t). (m = 0 never
// qualifies: P[Y >= 0] = 1/(1 + r) > 1/2 > δ/2.) Evaluated in long double on logs, with a margin
// of 1e-15 relative that dwarfs the rounding (~1e-18) so that the bound holds for the exact tail.
std::int64_t release_threshold(const RationalScale& scale, double delta) {
  const long double log_r = -1.0L / scale.value();
  const long double log1p_r = std::log1p(std::exp(log_r));
  const long double log_target = std::log(static_cast<long double>(delta) / 2);
  const long double margin = 1e-15L * (1 - log_target);
  auto tail_ok = [&](long double m) { return m * log_r - log1p_r <= log_target - margin; };
  // m >= (log(δ/2) + log(1 + r)) / log r; start just below and step up to the smallest valid m.
  long double m = std::max(1.0L, std::floor((log_target + log1p_r) / log_r) - 1);
  require(m < 0x1p62L, fmt::format("delta = {} gives a release threshold beyond 2^62 at the noise "
                                   "scale {}; increase epsilon",
                                   delta, static_cast<double>(scale.value())));
  while (!tail_ok(m)) m += 1;
  return static_cast<std::int64_t>(m) + 1;
}

// The non-empty bins and their counts, in increasing bin order. Dense counting when the bins span
// a short range (the usual case: a few bins of a concentrated coordinate), a hash map otherwise.
std::vector<std::pair<std::int64_t, std::int64_t>> occupied_bins(std::span<const std::int64_t> bins) {
  const auto [lo, hi] = std::minmax_element(bins.begin(), bins.end());
  std::vector<std::pair<std::int64_t, std::int64_t>> occupied;
  // hi - lo computed in unsigned arithmetic: the span of int64 values can exceed INT64_MAX.
  const std::uint64_t span = static_cast<std::uint64_t>(*hi) - static_cast<std::uint64_t>(*lo);
  if (span < 4 * static_cast<std::uint64_t>(bins.size()) + 1024) {
    std::vector<std::int64_t> dense(span + 1, 0);
    for (const std::int64_t b : bins)
      ++dense[static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(*lo)];
    for (std::uint64_t k = 0; k <= span; ++k) {
      if (dense[k] > 0)
        occupied.emplace_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(*lo) + k), dense[k]);
    }
    return occupied;
  }
  std::unordered_map<std::int64_t, std::int64_t> counts;
  for (const std::int64_t b : bins) ++counts[b];
  occupied.assign(counts.begin(), counts.end());
  std::sort(occupied.begin(), occupied.end());
  return occupied;
}

}  // namespace

StabilityHistogram stability_histogram(std::span<const std::int64_t> bins, double epsilon,
                                       double delta, Neighbouring neighbouring, Rng& rng) {
  check_arguments(epsilon, delta);
  require(!bins.empty(), "bins must hold at least one record's bin index, got 0 records");
  // Noise is drawn in increasing bin order so that seeded runs do not depend on the hash map.
  return stability_histogram_counts(occupied_bins(bins), epsilon, delta, neighbouring, rng);
}

StabilityHistogram stability_histogram_counts(
    std::span<const std::pair<std::int64_t, std::int64_t>> occupied, double epsilon, double delta,
    Neighbouring neighbouring, Rng& rng) {
  check_arguments(epsilon, delta);
  require(!occupied.empty(), "occupied must list at least one non-empty bin, got none");
  for (std::size_t i = 0; i < occupied.size(); ++i) {
    require(occupied[i].second >= 1 && (i == 0 || occupied[i - 1].first < occupied[i].first),
            "occupied must list distinct bins in increasing order with counts >= 1");
  }
  const RationalScale scale = dlap_scale(epsilon, neighbouring);
  const std::int64_t tau = release_threshold(scale, delta);
  DrawLog::note("stability_histogram", static_cast<double>(scale.value()));

  StabilityHistogram h;
  h.threshold = static_cast<double>(tau);
  h.laplace_scale = static_cast<double>(scale.value());
  for (const auto& [bin, count] : occupied) {
    const std::int64_t noisy = count + discrete_laplace(rng, scale.num, scale.den);
    if (noisy >= tau) h.noisy_counts.emplace_hint(h.noisy_counts.end(), bin, static_cast<double>(noisy));
  }
  return h;
}

LedgerEntry stability_histogram_entry(double epsilon, double delta, Neighbouring neighbouring,
                                      std::string purpose) {
  check_arguments(epsilon, delta);
  LedgerEntry e;
  e.mechanism = "stability_histogram";
  e.purpose = std::move(purpose);
  e.sensitivity = count_sensitivity(neighbouring);
  e.noise_scale = static_cast<double>(dlap_scale(epsilon, neighbouring).value());
  e.loss = PrivacyLoss::approximate(epsilon, delta);
  return e;
}

}  // namespace dpstats
