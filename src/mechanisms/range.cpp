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
#include "dpstats/parallel.hpp"

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
  LedgerEntry histogram = stability_histogram_entry(per.epsilon, per.delta,
                                                    Neighbouring::replace_one,
                                                    "one coordinate's histogram");
  histogram.count = static_cast<int>(d);
  // One composite for the d histograms: Budget multiplies a loss by `count`, which would be basic
  // composition; the composite states the (advanced / optimal) composed loss of its part once.
  const EpsilonDelta total = composed_loss(o);
  LedgerEntry e;
  e.mechanism = "composition";
  e.purpose = fmt::format("{}: {} histogram{} (epsilon={}, delta={} each), composed by {}", purpose,
                          d, d == 1 ? "" : "s", per.epsilon, per.delta,
                          o.paper_cap ? "Lemma G.13" : "the best valid rule");
  e.loss = PrivacyLoss::approximate(total.epsilon, total.delta);
  e.blocks = {Ledger{histogram}};
  return e;
}

namespace {

// The passes' grain: ranges of at least 8192 rows.
constexpr std::int64_t kRowGrain = 8192;
// Coordinates whose bins span fewer than this are counted densely, the others in a hash map.
constexpr std::uint64_t kDenseSpan = 1 << 16;

// The passes read rows through one interface: a matrix's rows in place, or an AffineRows view's
// rows mapped into a per-part buffer (the same values a materialised copy would hold).
struct PlainRows {
  const ConstMatrixRef& X;
  Eigen::Index rows() const { return X.rows(); }
  Eigen::Index cols() const { return X.cols(); }
  const double* row(Eigen::Index i, double*) const { return X.row(i).data(); }
  void check() const { check_data(X); }  // throws, naming the first bad cell
};
struct ViewRows {
  const AffineRows& X;
  Eigen::Index rows() const { return X.rows(); }
  Eigen::Index cols() const { return X.cols(); }
  const double* row(Eigen::Index i, double* buf) const { return X.row(i, buf); }
  void check() const {
    check_data(X.source());  // a NaN in the view comes from the input: named there
    require(false, "X holds a value that is not finite in scale units");
  }
};

// Row `x`'s bins: ℓ with x_j in (2σℓ, 2σ(ℓ+1)] (PRIME Alg 5 step 2.1), clamped to ±2^62 (public)
// so that they fit an int64 whatever the data, as doubles (integral; NaN for a NaN cell), every
// column at once in SIMD registers. A per-record function of x alone, so any rounding in it is
// harmless to privacy. row_extent: the same bins' running minimum and maximum, and the NaN/Inf
// check (`bad` turns NaN), in the same loop.
__attribute__((target_clones("avx2", "default")))
void row_bins(const double* __restrict x, Eigen::Index d, double two_sigma,
              double* __restrict l) {
  for (Eigen::Index j = 0; j < d; ++j)
    l[j] = std::clamp(std::ceil(x[j] / two_sigma) - 1, -kMaxBinIndex, kMaxBinIndex);
}
__attribute__((target_clones("avx2", "default")))
void row_extent(const double* __restrict x, Eigen::Index d, double two_sigma,
                double* __restrict lo, double* __restrict hi, double* __restrict bad) {
  for (Eigen::Index j = 0; j < d; ++j) {
    const double l = std::clamp(std::ceil(x[j] / two_sigma) - 1, -kMaxBinIndex, kMaxBinIndex);
    bad[j] += x[j] * 0.0;  // NaN once any cell is NaN or infinite
    lo[j] = l < lo[j] ? l : lo[j];
    hi[j] = l > hi[j] ? l : hi[j];
  }
}

// Pass 1 (per part, merged): each coordinate's smallest and largest bin (used only to enumerate
// the bins, PRIME Alg 5 step 2.1), and the NaN/Inf check in the same pass.
template <class Rows>
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> bin_extent(const Rows& X,
                                                                           double sigma,
                                                                           int parts) {
  const Eigen::Index n = X.rows(), d = X.cols();
  const auto pd = static_cast<std::size_t>(parts * d);
  std::vector<double> lo_t(pd, kMaxBinIndex), hi_t(pd, -kMaxBinIndex), bad_t(pd, 0.0);
  parallel_ranges(n, parts, kRowGrain, [&](int t, std::int64_t b, std::int64_t e) {
    std::vector<double> buf(static_cast<std::size_t>(d));
    for (Eigen::Index i = b; i < e; ++i)
      row_extent(X.row(i, buf.data()), d, 2 * sigma, lo_t.data() + t * d, hi_t.data() + t * d,
                 bad_t.data() + t * d);
  });
  for (double p : bad_t)
    if (!std::isfinite(p)) X.check();
  // Integral doubles within ±2^62: the conversions are exact, the extents those of the bins.
  std::vector<std::int64_t> lo(static_cast<std::size_t>(d)), hi(static_cast<std::size_t>(d));
  for (Eigen::Index j = 0; j < d; ++j) {
    double a = lo_t[j], z = hi_t[j];
    for (int t = 1; t < parts; ++t) {
      a = std::min(a, lo_t[t * d + j]);
      z = std::max(z, hi_t[t * d + j]);
    }
    lo[j] = static_cast<std::int64_t>(a);
    hi[j] = static_cast<std::int64_t>(z);
  }
  return {lo, hi};
}

// Per-coordinate bin counts: dense over [lo, hi] when the span is short, hashed otherwise.
struct BinCounts {
  std::vector<std::vector<std::int64_t>> dense;
  std::vector<std::unordered_map<std::int64_t, std::int64_t>> sparse;
};

// Pass 2 (per part, merged by exact integer addition): a row's bins in SIMD, then the counts.
template <class Rows>
BinCounts bin_counts(const Rows& X, double sigma, const std::vector<std::int64_t>& lo,
                     const std::vector<std::int64_t>& hi, int parts) {
  const Eigen::Index n = X.rows(), d = X.cols();
  std::vector<BinCounts> part(static_cast<std::size_t>(parts));
  parallel_ranges(n, parts, kRowGrain, [&](int t, std::int64_t b, std::int64_t e) {
    auto& dense = part[static_cast<std::size_t>(t)].dense;
    auto& sparse = part[static_cast<std::size_t>(t)].sparse;
    dense.resize(d);
    sparse.resize(d);
    std::vector<std::int64_t*> cell(static_cast<std::size_t>(d), nullptr);
    for (Eigen::Index j = 0; j < d; ++j) {
      const auto span = static_cast<std::uint64_t>(hi[j]) - static_cast<std::uint64_t>(lo[j]);
      if (span < kDenseSpan) {
        dense[j].assign(span + 1, 0);
        cell[j] = dense[j].data();
      }
    }
    std::vector<double> buf(static_cast<std::size_t>(d)), l(static_cast<std::size_t>(d));
    for (Eigen::Index i = b; i < e; ++i) {
      row_bins(X.row(i, buf.data()), d, 2 * sigma, l.data());
      for (Eigen::Index j = 0; j < d; ++j) {
        const auto v = static_cast<std::int64_t>(l[j]);
        if (cell[j] != nullptr) {
          ++cell[j][static_cast<std::uint64_t>(v) - static_cast<std::uint64_t>(lo[j])];
        } else {
          ++sparse[j][v];
        }
      }
    }
  });
  BinCounts& all = part[0];
  for (int t = 1; t < parts; ++t)
    for (Eigen::Index j = 0; j < d; ++j) {
      for (std::size_t k = 0; k < all.dense[j].size(); ++k) all.dense[j][k] += part[t].dense[j][k];
      for (const auto& kv : part[t].sparse[j]) all.sparse[j][kv.first] += kv.second;
    }
  return std::move(all);
}

// Coordinate j's occupied bins (bin, count), in increasing bin order.
void occupied_bins(const BinCounts& c, Eigen::Index j, std::int64_t lo,
                   std::vector<std::pair<std::int64_t, std::int64_t>>& occupied) {
  occupied.clear();
  if (!c.dense[j].empty()) {
    for (std::size_t k = 0; k < c.dense[j].size(); ++k)
      if (c.dense[j][k] > 0)
        occupied.emplace_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + k),
                              c.dense[j][k]);
  } else {
    occupied.assign(c.sparse[j].begin(), c.sparse[j].end());
    std::sort(occupied.begin(), occupied.end());
  }
}

template <class Rows>
RangeBins bins_of(const Rows& X, double sigma, int threads) {
  check_positive(sigma, "sigma");
  const Eigen::Index n = X.rows(), d = X.cols();
  RangeBins out(static_cast<std::size_t>(d));
  if (n == 0) return out;
  const int parts = static_cast<int>(
      std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(1, n / kRowGrain)));
  const auto [lo, hi] = bin_extent(X, sigma, parts);
  const BinCounts counts = bin_counts(X, sigma, lo, hi, parts);
  for (Eigen::Index j = 0; j < d; ++j) occupied_bins(counts, j, lo[j], out[static_cast<std::size_t>(j)]);
  return out;
}

}  // namespace

RangeBins q_range_bins(const ConstMatrixRef& X, double sigma, int threads) {
  return bins_of(PlainRows{X}, sigma, threads);
}

RangeBins q_range_bins(const AffineRows& X, double sigma, int threads) {
  return bins_of(ViewRows{X}, sigma, threads);
}

std::optional<RangeResult> q_range_release(const RangeBins& bins, std::int64_t n,
                                           const RangeOptions& o, const EpsilonDelta& per,
                                           Rng& rng) {
  const auto d = static_cast<Eigen::Index>(bins.size());
  RangeResult result;
  result.centre.resize(d);
  for (Eigen::Index j = 0; j < d; ++j) {
    const StabilityHistogram h = stability_histogram_counts(
        bins[static_cast<std::size_t>(j)], per.epsilon, per.delta, Neighbouring::replace_one, rng);
    if (h.noisy_counts.empty()) return std::nullopt;
    auto best = h.noisy_counts.begin();
    for (auto it = h.noisy_counts.begin(); it != h.noisy_counts.end(); ++it) {
      if (it->second > best->second) best = it;
    }
    result.centre(j) = 2 * o.sigma * (static_cast<double>(best->first) + 0.5);
  }
  result.side = 8 * o.sigma *
                std::sqrt(std::log(static_cast<double>(d) * static_cast<double>(n) / o.zeta));
  return result;
}

namespace {
// Two row-major passes instead of d strided ones (the bins' extent, then dense or hashed counts),
// no bin array; the counts do not depend on the thread count, so neither do the draws. Rows: a
// matrix or an AffineRows view (the same bins).
template <class Rows>
std::optional<RangeResult> q_range_of(const Rows& X, const RangeOptions& o,
                                      const EpsilonDelta& per, Rng& rng, int threads) {
  check_options(o);
  const Eigen::Index n = X.rows(), d = X.cols();
  require(n > 0 && d > 0,
          fmt::format("X must have at least one row and one column, got {} x {}", n, d));
  return q_range_release(q_range_bins(X, o.sigma, threads), n, o, per, rng);
}
}  // namespace

std::optional<RangeResult> q_range(const ConstMatrixRef& X, const RangeOptions& o,
                                   const EpsilonDelta& per, Rng& rng, int threads) {
  return q_range_of(X, o, per, rng, threads);
}

std::optional<RangeResult> q_range(const AffineRows& X, const RangeOptions& o,
                                   const EpsilonDelta& per, Rng& rng, int threads) {
  return q_range_of(X, o, per, rng, threads);
}

std::optional<RangeResult> q_range(const ConstMatrixRef& X, const RangeOptions& o, Rng& rng) {
  check_options(o);
  require(X.rows() > 0 && X.cols() > 0,
          fmt::format("X must have at least one row and one column, got {} column(s){}",
                      X.cols(), X.rows() == 0 ? " and no row" : ""));  // the row count: not shown
  const EpsilonDelta per = q_range_coordinate_budget(o, static_cast<std::size_t>(X.cols()));
  auto result = q_range(X, o, per, rng, 1);
  if (result) result->entry = q_range_entry(o, static_cast<std::size_t>(X.cols()));
  return result;
}

}  // namespace dpstats
