// q_range (PRIME Alg 5; docs/proofs/substrate.md §8): per coordinate, a stability histogram
// over the bins (2σℓ, 2σ(ℓ+1)] picks the most populated bin; its centre is the coordinate of x̄.
#include "dpstats/mechanisms/range.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/histogram.hpp"

namespace dpstats {
namespace {

// Lemma G.13 is proven for ε <= 0.9 only (docs/errata.md); the paper profile caps ε there.
constexpr double kPaperEpsilonCap = 0.9;
// Bin indices are clamped to ±2^62 (public) so that they fit an int64 whatever the data.
constexpr double kMaxBinIndex = 0x1p62;

void check_options(const RangeOptions& o) {
  check_epsilon(o.epsilon);
  check_delta_positive(o.delta);
  check_positive(o.sigma, "sigma");
  require(o.zeta > 0 && o.zeta < 1, fmt::format("zeta must be in (0, 1), got {}", o.zeta));
}

// ℓ with x in (2σℓ, 2σ(ℓ+1)] (PRIME Alg 5 step 2.1). A per-record function of x alone, so any
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

std::optional<std::string> range_beyond_reason(const Eigen::VectorXd& centre, double sigma) {
  constexpr double kResolvedBins = 0x1p52;
  for (Eigen::Index j = 0; j < centre.size(); ++j) {
    if (!(std::abs(centre[j]) < kResolvedBins * sigma))
      return fmt::format(
          "column {}: most rows lie about {:.3g} scales or more from zero, beyond what the range "
          "step can resolve (2^52 scales): the scale is far too small for the data's magnitude; "
          "supply scale in the data's units, or omit it to estimate it privately",
          j + 1, kResolvedBins);
  }
  return std::nullopt;
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

// Two row-major passes instead of d strided ones: the first finds each coordinate's smallest and
// largest bin (used only to enumerate the bins, PRIME Alg 5 step 2.1) and checks for NaN/Inf; the
// second counts, densely when a coordinate's bins span a short range and in a hash map otherwise.
std::optional<RangeResult> q_range(const ConstMatrixRef& X, const RangeOptions& o, Rng& rng) {
  check_options(o);
  const Eigen::Index n = X.rows(), d = X.cols();
  require(n > 0 && d > 0,
          fmt::format("X must have at least one row and one column, got {} x {}", n, d));
  const EpsilonDelta per = q_range_coordinate_budget(o, static_cast<std::size_t>(d));

  std::vector<std::int64_t> lo(d, std::numeric_limits<std::int64_t>::max());
  std::vector<std::int64_t> hi(d, std::numeric_limits<std::int64_t>::min());
  double poison = 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    const double* row = X.row(i).data();
    for (Eigen::Index j = 0; j < d; ++j) {
      poison += row[j] * 0.0;  // NaN once any cell is NaN or infinite
      const std::int64_t b = bin_of(row[j], o.sigma);
      lo[j] = std::min(lo[j], b);
      hi[j] = std::max(hi[j], b);
    }
  }
  if (!std::isfinite(poison)) check_data(X);  // throws, naming the first bad cell

  constexpr std::uint64_t kDenseSpan = 1 << 16;
  std::vector<std::vector<std::int64_t>> dense(d);
  std::vector<std::unordered_map<std::int64_t, std::int64_t>> sparse(d);
  for (Eigen::Index j = 0; j < d; ++j) {
    const auto span = static_cast<std::uint64_t>(hi[j]) - static_cast<std::uint64_t>(lo[j]);
    if (span < kDenseSpan) dense[j].assign(span + 1, 0);
  }
  for (Eigen::Index i = 0; i < n; ++i) {
    const double* row = X.row(i).data();
    for (Eigen::Index j = 0; j < d; ++j) {
      const std::int64_t b = bin_of(row[j], o.sigma);
      if (!dense[j].empty()) {
        ++dense[j][static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(lo[j])];
      } else {
        ++sparse[j][b];
      }
    }
  }

  RangeResult result;
  result.centre.resize(d);
  std::vector<std::pair<std::int64_t, std::int64_t>> occupied;
  for (Eigen::Index j = 0; j < d; ++j) {
    occupied.clear();
    if (!dense[j].empty()) {
      for (std::size_t k = 0; k < dense[j].size(); ++k) {
        if (dense[j][k] > 0) {
          occupied.emplace_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(lo[j]) + k),
                                dense[j][k]);
        }
      }
    } else {
      occupied.assign(sparse[j].begin(), sparse[j].end());
      std::sort(occupied.begin(), occupied.end());
    }
    const StabilityHistogram h =
        stability_histogram_counts(occupied, per.epsilon, per.delta, Neighbouring::replace_one, rng);
    if (h.noisy_counts.empty()) return std::nullopt;
    auto best = h.noisy_counts.begin();
    for (auto it = h.noisy_counts.begin(); it != h.noisy_counts.end(); ++it) {
      if (it->second > best->second) best = it;
    }
    result.centre(j) = 2 * o.sigma * (static_cast<double>(best->first) + 0.5);
  }
  result.side = 8 * o.sigma *
                std::sqrt(std::log(static_cast<double>(d) * static_cast<double>(n) / o.zeta));
  result.entry = q_range_entry(o, static_cast<std::size_t>(d));
  return result;
}

}  // namespace dpstats
