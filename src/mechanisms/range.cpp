// q_range (card prime-robust-private-mean.md §2.2, Alg 5): per coordinate, a stability histogram
// over the bins (2σℓ, 2σ(ℓ+1)] picks the most populated bin; its centre is the coordinate of x̄.
#include "dpstats/mechanisms/range.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/histogram.hpp"

namespace dpstats {
namespace {

// Lemma G.13 is proven for ε <= 0.9 only (card §2.1 P3); the paper profile caps ε there.
constexpr double kPaperEpsilonCap = 0.9;
// Bin indices are clamped to ±2^62 (public) so that they fit an int64 whatever the data.
constexpr double kMaxBinIndex = 0x1p62;

void check_options(const RangeOptions& o) {
  check_epsilon(o.epsilon);
  check_delta_positive(o.delta);
  check_positive(o.sigma, "sigma");
  require(o.zeta > 0 && o.zeta < 1, fmt::format("zeta must be in (0, 1), got {}", o.zeta));
}

// ℓ with x in (2σℓ, 2σ(ℓ+1)] (card §2.2 step 2.1). A per-record function of x alone, so any
// rounding in it is harmless to privacy.
std::int64_t bin_of(double x, double sigma) {
  const double l = std::ceil(x / (2 * sigma)) - 1;
  return static_cast<std::int64_t>(std::clamp(l, -kMaxBinIndex, kMaxBinIndex));
}

// The composed guarantee of the d histograms (what the entry states).
EpsilonDelta composed_loss(const RangeOptions& o) {
  // Paper: Lemma G.13 gives (min(ε, 0.9), δ); otherwise per_step_epsilon meets (ε, δ).
  return {o.paper_cap ? std::min(o.epsilon, kPaperEpsilonCap) : o.epsilon, o.delta};
}

}  // namespace

EpsilonDelta q_range_coordinate_budget(const RangeOptions& o, std::size_t d) {
  check_options(o);
  require(d >= 1, fmt::format("d must be >= 1, got {}", d));
  const double dd = static_cast<double>(d);
  EpsilonDelta b;
  b.delta = o.delta / (2 * dd);
  if (o.paper_cap) {
    // Card §2.2 step 1: ε' = min(ε, 0.9) / (2 sqrt(2 d ln(2/δ))).
    b.epsilon = std::min(o.epsilon, kPaperEpsilonCap) / (2 * std::sqrt(2 * dd * std::log(2 / o.delta)));
  } else {
    b.epsilon = per_step_epsilon(o.epsilon, o.delta, static_cast<long>(d));
  }
  return b;
}

LedgerEntry q_range_entry(const RangeOptions& o, std::size_t d, std::string purpose) {
  const EpsilonDelta per = q_range_coordinate_budget(o, d);
  LedgerEntry e = stability_histogram_entry(
      per.epsilon, per.delta, Neighbouring::replace_one,
      fmt::format("{}: {} histogram{} (epsilon={}, delta={} each), composed by {}", purpose, d,
                  d == 1 ? "" : "s", per.epsilon, per.delta,
                  o.paper_cap ? "Lemma G.13" : "the best valid rule"));
  // One entry for the d histograms: Budget multiplies a loss by `count`, which would be basic
  // composition; the entry states the (advanced / optimal) composed loss once instead.
  const EpsilonDelta total = composed_loss(o);
  e.loss = PrivacyLoss::approximate(total.epsilon, total.delta);
  e.count = 1;
  return e;
}

std::optional<RangeResult> q_range(const ConstMatrixRef& X, const RangeOptions& o, Rng& rng) {
  check_options(o);
  check_data(X);
  const auto n = static_cast<std::size_t>(X.rows());
  const auto d = static_cast<std::size_t>(X.cols());
  const EpsilonDelta per = q_range_coordinate_budget(o, d);

  RangeResult result;
  result.centre.resize(static_cast<Eigen::Index>(d));
  std::vector<std::int64_t> bins(n);
  for (std::size_t j = 0; j < d; ++j) {
    for (std::size_t i = 0; i < n; ++i) {
      bins[i] = bin_of(X(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)), o.sigma);
    }
    // Replace-one with public n is the card's primary model (§0); its count sensitivity (2) is the
    // larger of the two relations, so the histogram is private under add/remove as well.
    const StabilityHistogram h =
        stability_histogram(bins, per.epsilon, per.delta, Neighbouring::replace_one, rng);
    // Every bin suppressed: abstain (card §2.2 step 2.4). The abstention is itself private.
    if (h.noisy_counts.empty()) return std::nullopt;
    // argmax of the released noisy counts; the map is ordered, so a strict '>' keeps the smaller ℓ.
    auto best = h.noisy_counts.begin();
    for (auto it = h.noisy_counts.begin(); it != h.noisy_counts.end(); ++it) {
      if (it->second > best->second) best = it;
    }
    // Bin centre 2σ(ℓ* + ½), the card's correction D13 of the paper's left edge 2σℓ*.
    result.centre(static_cast<Eigen::Index>(j)) =
        2 * o.sigma * (static_cast<double>(best->first) + 0.5);
  }
  // Card §2.2 step 3: B = 8σ sqrt(ln(d n / ζ)), public.
  result.side = 8 * o.sigma *
                std::sqrt(std::log(static_cast<double>(d) * static_cast<double>(n) / o.zeta));
  result.entry = q_range_entry(o, d);
  return result;
}

}  // namespace dpstats
