// q_range (PRIME Alg 5; docs/proofs/substrate.md §8): per coordinate, a stability histogram
// over the bins (2σℓ, 2σ(ℓ+1)] picks the most populated bin; its centre is the coordinate of x̄.
#include "dpstats/mechanisms/range.hpp"

#include <fmt/format.h>

#include <immintrin.h>

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

// The window pass: most values of data in scale units around a location lie in a few bins near
// zero. Those of ℓ in [-kWindow, kWindow) (q = x / 2σ in (-kWindow, kWindow]) are counted by
// comparisons, above[k d + j] += [q_j > k - kWindow] for k = 0..2 kWindow, whence a bin's count
// is the difference of two neighbouring thresholds' (ceil(q) - 1 >= k exactly when q > k, for
// the same rounded quotient q the bins are computed from). No scattered increment, no extent;
// the values outside the window (and any NaN) are kept per column and counted after the pass. A
// part gives up on the window once more than one value in kOutsideShare lies outside it: the two
// passes above then count every bin.
constexpr int kWindow = 4;
constexpr int kThresholds = 2 * kWindow + 1;
constexpr std::int64_t kOutsideShare = 64;
constexpr int kBlockRows = 32;  // rows counted together, column by column (the counts in registers)

// q = x / 2σ; as x · (1 / 2σ) when 2σ is a power of two, which rounds to the same double.
template <bool kExact>
inline double quotient(double x, double two_sigma, double inverse) {
  return kExact ? x * inverse : x / two_sigma;
}

// Columns [j0, d) of m rows, one value at a time (portable; the AVX2 kernel's remainder).
template <bool kExact>
bool window_columns(const double* const* rows, int m, std::size_t j0, std::size_t d,
                    double two_sigma, double inverse, double* __restrict above) {
  bool outside = false;
  for (std::size_t j = j0; j < d; ++j)
    for (int i = 0; i < m; ++i) {
      const double q = quotient<kExact>(rows[i][j], two_sigma, inverse);
      outside |= !(q > -kWindow) || !(q <= kWindow);  // NaN: outside
      for (int k = 0; k < kThresholds; ++k) above[k * d + j] += q > k - kWindow ? 1.0 : 0.0;
    }
  return outside;
}

// The same for AVX2: four columns at a time, the m rows' threshold counts kept in registers.
template <bool kExact>
__attribute__((target("avx2")))
bool window_columns_avx2(const double* const* rows, int m, std::size_t d, double two_sigma,
                         double inverse, double* __restrict above) {
  const __m256d one = _mm256_set1_pd(1.0), div = _mm256_set1_pd(two_sigma),
                inv = _mm256_set1_pd(inverse);
  __m256d t[kThresholds];
  for (int k = 0; k < kThresholds; ++k) t[k] = _mm256_set1_pd(k - kWindow);
  __m256d out = _mm256_setzero_pd();
  std::size_t j = 0;
  for (; j + 4 <= d; j += 4) {
    __m256d c[kThresholds];
    for (auto& ck : c) ck = _mm256_setzero_pd();
    for (int i = 0; i < m; ++i) {
      const __m256d x = _mm256_loadu_pd(rows[i] + j);
      const __m256d q = kExact ? _mm256_mul_pd(x, inv) : _mm256_div_pd(x, div);
      out = _mm256_or_pd(out, _mm256_cmp_pd(q, t[0], _CMP_NGT_UQ));
      out = _mm256_or_pd(out, _mm256_cmp_pd(q, t[kThresholds - 1], _CMP_NLE_UQ));
      for (int k = 0; k < kThresholds; ++k)
        c[k] = _mm256_add_pd(c[k], _mm256_and_pd(_mm256_cmp_pd(q, t[k], _CMP_GT_OQ), one));
    }
    for (int k = 0; k < kThresholds; ++k) {
      double* a = above + k * d + j;
      _mm256_storeu_pd(a, _mm256_add_pd(_mm256_loadu_pd(a), c[k]));
    }
  }
  const bool rest = window_columns<kExact>(rows, m, j, d, two_sigma, inverse, above);
  return _mm256_movemask_pd(out) != 0 || rest;
}

struct WindowPart {
  std::vector<double> above;                      // kThresholds x d (exact integers)
  std::vector<std::vector<std::int64_t>> outside;  // per column, the bins outside the window
  bool bad = false;                               // a NaN or infinite value
  bool gave_up = false;
};

// The block's values outside the window into part.outside (NaN or infinite ones: part.bad);
// false once the part holds more than `cap` of them.
template <bool kExact>
bool keep_outside(const double* const* rows, int m, std::size_t d, double two_sigma,
                  double inverse, std::int64_t cap, std::int64_t& kept, WindowPart& part) {
  for (int i = 0; i < m; ++i)
    for (std::size_t j = 0; j < d; ++j) {
      const double x = rows[i][j], q = quotient<kExact>(x, two_sigma, inverse);
      if (q > -kWindow && q <= kWindow) continue;
      if (!std::isfinite(x)) {
        part.bad = true;  // X.check() throws, naming the cell
        continue;
      }
      part.outside[j].push_back(
          static_cast<std::int64_t>(std::clamp(std::ceil(q) - 1, -kMaxBinIndex, kMaxBinIndex)));
      if (++kept > cap) return false;
    }
  return true;
}

// Rows [b, e) into `part`, kBlockRows at a time; stops (gave_up) once more than
// (e - b) d / kOutsideShare values lie outside the window.
template <bool kExact, class Rows>
void window_part(const Rows& X, std::int64_t b, std::int64_t e, double two_sigma,
                 WindowPart& part) {
  static const auto columns = __builtin_cpu_supports("avx2") != 0
                                  ? window_columns_avx2<kExact>
                                  : +[](const double* const* r, int m, std::size_t d, double s,
                                       double inv, double* a) {
                                      return window_columns<kExact>(r, m, 0, d, s, inv, a);
                                    };
  const auto d = static_cast<std::size_t>(X.cols());
  const double inverse = 1 / two_sigma;
  part.above.assign(kThresholds * d, 0.0);
  part.outside.resize(d);
  const std::int64_t cap = std::max<std::int64_t>(1024, (e - b) * X.cols() / kOutsideShare);
  std::int64_t kept = 0;
  std::vector<double> buf(kBlockRows * d);
  const double* rows[kBlockRows];
  for (std::int64_t i = b; i < e; i += kBlockRows) {
    const int m = static_cast<int>(std::min<std::int64_t>(kBlockRows, e - i));
    for (int k = 0; k < m; ++k) rows[k] = X.row(i + k, buf.data() + k * d);
    if (columns(rows, m, d, two_sigma, inverse, part.above.data()) &&
        !keep_outside<kExact>(rows, m, d, two_sigma, inverse, cap, kept, part)) {
      part.gave_up = true;
      return;
    }
  }
}

// Bins (bin, count) of `bins` (any order), in increasing bin order: dense over a short span,
// sorted otherwise.
void count_bins(std::vector<std::int64_t>& bins,
                std::vector<std::pair<std::int64_t, std::int64_t>>& out) {
  out.clear();
  if (bins.empty()) return;
  const auto [lo, hi] = std::minmax_element(bins.begin(), bins.end());
  const auto base = static_cast<std::uint64_t>(*lo);
  const auto span = static_cast<std::uint64_t>(*hi) - base;
  if (span < kDenseSpan) {
    std::vector<std::int64_t> dense(span + 1, 0);
    for (std::int64_t v : bins) ++dense[static_cast<std::uint64_t>(v) - base];
    for (std::size_t k = 0; k < dense.size(); ++k)
      if (dense[k] > 0) out.emplace_back(static_cast<std::int64_t>(base + k), dense[k]);
    return;
  }
  std::sort(bins.begin(), bins.end());
  for (std::int64_t v : bins) {
    if (out.empty() || out.back().first != v) out.emplace_back(v, 0);
    ++out.back().second;
  }
}

// Coordinate j's occupied bins from the parts' window counts and values outside the window.
void window_bins(std::vector<WindowPart>& parts, Eigen::Index d, Eigen::Index j,
                 std::vector<std::pair<std::int64_t, std::int64_t>>& out) {
  std::vector<std::int64_t> outside;
  double above[kThresholds] = {};
  for (WindowPart& p : parts) {
    outside.insert(outside.end(), p.outside[j].begin(), p.outside[j].end());
    for (int k = 0; k < kThresholds; ++k) above[k] += p.above[k * d + j];
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> beyond;
  count_bins(outside, beyond);
  out.clear();
  auto at = beyond.begin();
  for (; at != beyond.end() && at->first < -kWindow; ++at) out.push_back(*at);
  for (int k = 0; k + 1 < kThresholds; ++k) {  // bin k - kWindow
    const auto c = static_cast<std::int64_t>(above[k] - above[k + 1]);
    if (c > 0) out.emplace_back(k - kWindow, c);
  }
  out.insert(out.end(), at, beyond.end());
}

template <class Rows>
RangeBins bins_of(const Rows& X, double sigma, int threads) {
  check_positive(sigma, "sigma");
  const Eigen::Index n = X.rows(), d = X.cols();
  RangeBins out(static_cast<std::size_t>(d));
  if (n == 0) return out;
  const int parts = static_cast<int>(
      std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(1, n / kRowGrain)));
  std::vector<WindowPart> window(static_cast<std::size_t>(parts));
  int exponent = 0;  // 2σ a power of two: q = x · (1 / 2σ) exactly
  const bool exact_inverse =
      std::frexp(2 * sigma, &exponent) == 0.5 && std::isnormal(1 / (2 * sigma));
  parallel_ranges(n, parts, kRowGrain, [&](int t, std::int64_t b, std::int64_t e) {
    WindowPart& part = window[static_cast<std::size_t>(t)];
    if (exact_inverse)
      window_part<true>(X, b, e, 2 * sigma, part);
    else
      window_part<false>(X, b, e, 2 * sigma, part);
  });
  const auto gave_up = [](const WindowPart& p) { return p.gave_up; };
  if (std::none_of(window.begin(), window.end(), gave_up)) {
    for (const WindowPart& p : window)
      if (p.bad) X.check();
    for (Eigen::Index j = 0; j < d; ++j)
      window_bins(window, d, j, out[static_cast<std::size_t>(j)]);
    return out;
  }
  window.clear();
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
// One row-major pass (the window's; the two others after it when more than one value in 64 lies
// outside the window) instead of d strided ones, no bin array; the counts do not depend on the thread count, so neither do the draws.
// Rows: a matrix or an AffineRows view (the same bins).
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
