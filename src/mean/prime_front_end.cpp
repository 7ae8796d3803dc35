// The robust means' front end (docs/proofs/mean.md, addendum correction 1): private range, private
// coordinate medians, clipping and quantisation; see robust_mean_core.hpp.
#include <immintrin.h>

#include <limits>
#include <numeric>
#include <unordered_map>

#include "dpstats/comm/json.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "dpstats/mechanisms/histogram.hpp"
#include "dpstats/mean/units.hpp"
#include "robust_mean_core.hpp"
#include "prime_kernels.hpp"
#include "ranks_internal.hpp"

namespace dpstats::mean_detail {

namespace {

// c[j] = f[j] + floor(clamp((row[j] - lo[j]) / h, -1, top)) for every column: a loop with no
// branch (the floor of a value in [-1, top] through a 32-bit conversion, as fast_floor) that the
// compiler keeps in SIMD registers, as its own function (inlined, it is not vectorised); cloned
// for AVX2: the same divisions, hence the same cells, on every CPU.
__attribute__((target_clones("avx2", "default"), noinline))
void median_cells(const double* __restrict row, const double* __restrict lo, double h, double top,
                  const std::int32_t* __restrict f, std::int32_t* __restrict c, std::size_t d) {
  for (std::size_t j = 0; j < d; ++j) {
    const double u = std::clamp((row[j] - lo[j]) / h, -1.0, top);
    const auto k = static_cast<std::int32_t>(u);  // toward 0; one less for a negative fraction
    c[j] = f[j] + k - static_cast<std::int32_t>(static_cast<double>(k) > u);
  }
}

// Rows [b, e): below[j (K + 1) + k + 1] += 1 for the bucket k of each mapped value (median_cells).
void median_rows(const AffineRows& X, std::int64_t b, std::int64_t e, const double* lo, double h,
                 int K, std::int64_t* below) {
  const auto d = static_cast<std::size_t>(X.cols());
  std::vector<double> buf(d);
  std::vector<std::int32_t> first(d), cell(d);  // first[j] = j (K + 1) + 1: column j's bucket 0
  for (std::size_t j = 0; j < d; ++j) first[j] = static_cast<std::int32_t>(j) * (K + 1) + 1;
  for (std::int64_t i = b; i < e; ++i) {
    median_cells(X.row(i, buf.data()), lo, h, K - 1, first.data(), cell.data(), d);
    for (std::size_t j = 0; j < d; ++j) ++below[cell[j]];
  }
}

// Private coordinate medians (docs/proofs/mean.md §2): candidates c_k = x̄_j + (−4 + 0.1k),
// k = 0..K−1 (scale units); quality −|#{x < c_k} − n/2| (sensitivity 1). One row-major pass
// buckets every value: below[j][b] counts values whose smallest k with x < c_k is b.
// Over ranks (comm.size() > 1) the buckets are added exactly and rank 0 draws; n is the global
// row count.
void private_medians(const AffineRows& X, std::int64_t n_all, const ClipPlan& c,
                     Vector& centre, Rng& rng, int threads, Communicator& comm) {
  const std::int64_t n = X.rows(), d = X.cols();
  const double nd = static_cast<double>(n_all);
  ExponentialMechanismOptions med;
  med.epsilon = c.median_eps;
  med.sensitivity = 1;
  med.monotone = false;
  const int K = 2 * kMedianHalfSteps + 1;
  const double h = kMedianStep;
  const Vector lo = centre.array() - kMedianHalfSteps * h;
  const std::size_t cells = static_cast<std::size_t>(d * (K + 1));
  std::vector<std::int64_t> parts(cells * static_cast<std::size_t>(threads), 0);
  parallel_ranges(n, threads, kRowGrain, [&](int t, std::int64_t b, std::int64_t e) {
    median_rows(X, b, e, lo.data(), h, K, parts.data() + cells * static_cast<std::size_t>(t));
  });
  std::vector<std::int64_t> below(cells, 0);
  for (int t = 0; t < threads; ++t)
    for (std::size_t k = 0; k < cells; ++k) below[k] += parts[cells * t + k];
  if (comm.size() > 1) comm.allreduce_sum(below);
  centre = on_root(comm, [&] {
    Vector out = centre;
    std::vector<double> quality(static_cast<std::size_t>(K));
    for (Eigen::Index j = 0; j < d; ++j) {
      std::int64_t cum = 0;
      for (int k = 0; k < K; ++k) {
        cum += below[static_cast<std::size_t>(j * (K + 1) + k)];
        quality[static_cast<std::size_t>(k)] = -std::abs(static_cast<double>(cum) - nd / 2);
      }
      const std::size_t pick = permute_and_flip(quality, med, rng);
      out[j] = lo[j] + static_cast<double>(pick) * h;
    }
    return out;
  });
}

struct ClipExtent {
  std::int64_t clipped = 0;
  int at_bound = 0;  // a mapped value clamped to the view's bound
};

// Four rows' sums of squares around cen and largest |value - cen| (each sum in its row's column
// order); returns whether a value reached the bound. Portable, and for AVX2 with lane k holding
// row k (the same operations lane by lane: the same sums).
int four_rows(const double* const x[4], const double* __restrict cen, std::size_t d, double bound,
              double ss[4], double amax[4]) {
  int big = 0;
  for (std::size_t j = 0; j < d; ++j) {
    for (int k = 0; k < 4; ++k) {
      const double v = x[k][j] - cen[j];
      ss[k] += v * v;
      amax[k] = std::max(amax[k], std::abs(v));
      big |= static_cast<int>(std::abs(x[k][j]) >= bound);
    }
  }
  return big;
}

__attribute__((target("avx2")))
int four_rows_avx2(const double* const x[4], const double* __restrict cen, std::size_t d,
                   double bound, double ss[4], double amax[4]) {
  const __m256d sign = _mm256_set1_pd(-0.0), limit = _mm256_set1_pd(bound);
  __m256d s = _mm256_setzero_pd(), a = _mm256_setzero_pd(), big = _mm256_setzero_pd();
  for (std::size_t j = 0; j < d; ++j) {
    const __m256d v0 = _mm256_set_pd(x[3][j], x[2][j], x[1][j], x[0][j]);
    const __m256d v = _mm256_sub_pd(v0, _mm256_set1_pd(cen[j]));
    s = _mm256_add_pd(s, _mm256_mul_pd(v, v));
    a = _mm256_max_pd(a, _mm256_andnot_pd(sign, v));  // max(a, |v|): |v| is never NaN
    big = _mm256_or_pd(big, _mm256_cmp_pd(_mm256_andnot_pd(sign, v0), limit, _CMP_GE_OQ));
  }
  _mm256_storeu_pd(ss, s);
  _mm256_storeu_pd(amax, a);
  return _mm256_movemask_pd(big) != 0 ? 1 : 0;
}

// Rows [b, e): whether each row is clipped (ball: its norm around cen beyond the radius, the
// factor radius / norm in factor[i]; box: a coordinate beyond it). Four rows at a time, their
// sums of squares side by side (each still in its row's column order, so the same sums as one
// row at a time), so that the additions do not wait on each other.
ClipExtent clip_extents(const AffineRows& X, std::int64_t b, std::int64_t e,
                        const double* __restrict cen, bool ball, double radius,
                        double* __restrict factor) {
  constexpr std::int64_t kRows = 4;
  static const auto rows4 =
      __builtin_cpu_supports("avx2") != 0 ? four_rows_avx2 : four_rows;
  const auto d = static_cast<std::size_t>(X.cols());
  std::vector<double> buf(kRows * d);
  ClipExtent out;
  for (std::int64_t i = b; i < e; i += kRows) {
    const std::int64_t m = std::min(kRows, e - i);
    const double* x[kRows];
    for (std::int64_t k = 0; k < kRows; ++k)  // a short group repeats its last row
      x[k] = X.row(i + std::min(k, m - 1), buf.data() + static_cast<std::size_t>(k) * d);
    double ss[kRows] = {}, amax[kRows] = {};
    out.at_bound |= rows4(x, cen, d, X.bound(), ss, amax);
    for (std::int64_t k = 0; k < m; ++k) {
      bool clipped = amax[k] > radius;  // the box clamps each coordinate (ClippedRows)
      if (ball) {
        const double norm = std::sqrt(ss[k]);
        clipped = norm > radius;
        factor[i + k] = clipped ? radius / norm : 1.0;
      }
      out.clipped += clipped;
    }
  }
  return out;
}

// Clip (ball or box, scale units around the centre) and quantise onto the grid qZ: sets st.Z
// to the rows of X so processed (clipped_rows.hpp: each ball row's clip factor is all it keeps);
// returns the number of clipped rows. (Accumulating the Gram matrix per block of freshly clipped
// rows, while they are in cache, measured no faster: the pass is compute-bound.)
std::int64_t clip_rows(const AffineRows& X, const ClipPlan& c, const Vector& centre, int threads,
                       FilterState& st) {
  const std::int64_t n = X.rows();
  const bool ball = c.shape == ClipShape::ball;
  std::vector<double> factor(ball ? static_cast<std::size_t>(n) : 0);
  std::vector<std::int64_t> clipped_parts(static_cast<std::size_t>(threads), 0);
  std::vector<char> at_bound(static_cast<std::size_t>(threads), 0);  // a mapped value clamped?
  const double* cen = centre.data();
  parallel_ranges(n, threads, kRowGrain, [&](int t, std::int64_t b, std::int64_t e) {
    const ClipExtent x = clip_extents(X, b, e, cen, ball, c.radius, factor.data());
    clipped_parts[static_cast<std::size_t>(t)] += x.clipped;
    at_bound[static_cast<std::size_t>(t)] |= static_cast<char>(x.at_bound);
  });
  const bool within = std::none_of(at_bound.begin(), at_bound.end(), [](char c) { return c; });
  st.Z = ClippedRows(X, centre, ball, c.radius, c.q, std::move(factor), within);
  std::int64_t clipped = 0;
  for (auto k : clipped_parts) clipped += k;
  return clipped;
}

}  // namespace

std::optional<Vector> front_end(const AffineRows& X, const ClipPlan& c, Rng& rng, int threads,
                                FilterState& st, std::int64_t& clipped,
                                std::optional<std::string>& abstained) {
  const std::int64_t n = X.rows(), d = X.cols();
  threads = used_parts(n, threads);
  Communicator& comm = comm_or_single(st.comm);
  const std::int64_t n_all = st.comm ? allreduce_count(comm, n) : n;
  Vector centre;
  if (comm.size() > 1 && c.range_ht) {
    const auto range = mean_detail::q_range_ht(X, n_all, *c.range_ht, comm, rng, threads);
    if (!range) return std::nullopt;
    centre = *range;
  } else if (comm.size() > 1) {
    const auto range = mean_detail::q_range(X, n_all, c.range, comm, rng, threads);
    if (!range) return std::nullopt;
    centre = range->centre;
  } else if (c.range_ht) {
    const auto range = q_range_ht(X, *c.range_ht, rng);
    if (!range) return std::nullopt;
    centre = range->centre;
  } else {
    const auto range = q_range(X, c.range, c.range_per, rng, threads);
    if (!range) return std::nullopt;
    centre = range->centre;
  }
  abstained = range_beyond_reason(centre, c.range_ht ? c.range_ht->sigma : c.range.sigma);
  if (abstained) return std::nullopt;
  if (c.median_eps > 0) private_medians(X, n_all, c, centre, rng, threads, comm);
  clipped = clip_rows(X, c, centre, threads, st);
  if (st.comm) clipped = allreduce_count(comm, clipped);
  st.S.resize(static_cast<std::size_t>(n));
  std::iota(st.S.begin(), st.S.end(), 0u);
  st.set_all = n_all;
  st.q = c.q;
  st.G.assign(static_cast<std::size_t>(d * d), 0.0);
  st.s = Vector::Zero(d);
  merge_gram(st, {}, true, 1.0, threads);
  return centre;
}

void merge_gram(FilterState& st, std::span<const std::uint32_t> rows, bool all_rows, double sign,
                int threads) {
  if (!st.comm) {
    gram_update(st.Z, rows, all_rows, sign, st.G.data(), st.s.data(), threads);
    return;
  }
  // This rank's part alone, in units of q² (G) and q (s): integers below 2^53 (quantum_for),
  // added exactly; the same exact values the one-process update reaches, in any order.
  const auto d = st.Z.cols();
  Vector part = Vector::Zero(d * d + d);
  gram_update(st.Z, rows, all_rows, 1.0, part.data(), part.data() + d * d, threads);
  const double inv_q = 1 / st.q, inv_q2 = inv_q * inv_q;  // exact: q is a power of two
  part.head(d * d) *= inv_q2;
  part.tail(d) *= inv_q;
  allreduce_exact(*st.comm, part);
  for (Eigen::Index a = 0; a < d * d; ++a) st.G[a] += sign * (part[a] * st.q * st.q);
  for (Eigen::Index a = 0; a < d; ++a) st.s[a] += sign * (part[d * d + a] * st.q);
}

// The practical ball (addendum correction 1; PRIME-ht's Markov radius when ht): sets c.shape,
// c.radius, c.q, c.region and c.D from public parameters (c.median_eps must be set); returns the
// public bound e_med on the private median's error (σ units).
double practical_ball(ClipPlan& c, std::int64_t n, std::int64_t d, double alpha, double zeta,
                      bool ht) {
  // The PRIME-ht clip fraction: Markov keeps all but α/2 of the clean rows in expectation.
  constexpr double kHtClipFraction = 0.5;
  // Public bound on the median's error (σ units): half a grid step, the shift α can cause,
  // the sampling error and the exponential mechanism's error, each at level ζ/(4d).
  const double dd = static_cast<double>(d), nd = static_cast<double>(n);
  const double shift = standard_normal_quantile(0.5 / (1 - alpha));
  const double z = standard_normal_quantile(1 - zeta / (8 * dd));
  const double sampling = z * 1.2533 / std::sqrt(nd * (1 - alpha));
  const double em_counts =
      (2 / c.median_eps) * std::log((2 * kMedianHalfSteps + 1) * 4 * dd / zeta);
  const double em = em_counts / (nd * (1 - alpha) * 0.24);
  double e_med = std::min(4.0, kMedianStep / 2 + shift + sampling + em);
  c.shape = ClipShape::ball;
  if (ht) {
    // Bounded covariance: a median is within σ of the mean, and α corruption moves it by at
    // most σ·sqrt(α/(1 − 2α))-ish more (Cantelli); public, it only affects accuracy.
    e_med = std::min(4.0, kMedianStep / 2 + 1 + std::sqrt(2 * alpha / (1 - 2 * alpha)) +
                                sampling + em);
    // r = sqrt(d / (α/2)) + √d·e_med: at most α/2 of the clean rows clipped in expectation.
    c.radius = std::sqrt(dd / (kHtClipFraction * alpha)) + std::sqrt(dd) * e_med;
  } else {
    // Ball radius (addendum): r = sqrt(χ²_d upper ζ/(2n) quantile) + √d·e_med.
    c.radius =
        std::sqrt(chi_square_upper_quantile(dd, zeta / (2 * nd))) + std::sqrt(dd) * e_med;
  }
  c.q = quantum_for(c.radius, n);
  c.region = ball_region(c.radius, c.q, dd);
  c.D = 2 * c.region;
  return e_med;
}

}  // namespace dpstats::mean_detail

namespace dpstats::mean_detail {

AuxPlan plan_aux(const AuxShare& a, bool zcdp, double total, std::int64_t d, double alpha,
                 NoiseMode mode) {
  AuxPlan p;
  p.share = a;
  p.remaining = total;
  if (a.share <= 0) return p;
  // zcdp: the method's shares are fractions of (1 − share)·total and the auxiliary part is
  // shrunk by 1e-9 against rounding; basic: epsilons add, so the method gets exactly the rest.
  const double part = zcdp ? a.share * total * (1 - 1e-9) : a.share * total;
  p.remaining = zcdp ? total * (1 - a.share) : remainder_after(total, part);
  p.loss = zcdp ? PrivacyLoss::zcdp(part) : PrivacyLoss::pure(part);
  if (a.estimate_units) {
    p.entries = units_entries(p.loss, d, alpha);
  } else {
    // One count (sensitivity 1 under replace-one) of the rows the front end clips.
    p.clip_count = zcdp ? gaussian_rho(1.0, part, 1, mode) : laplace(1.0, part, mode);
    p.entries = {p.clip_count->entry("rows clipped by the supplied scale (count)", 1)};
  }
  return p;
}

std::optional<ColumnUnits> units_step(const RowsView& X, const AuxPlan& aux,
                                      const std::optional<std::vector<double>>& scale,
                                      double alpha, double widen, int threads,
                                      ReleaseBudget& account, Rng& rng, nlohmann::json& diag,
                                      std::optional<std::string>& abstained, Communicator* comm) {
  if (scale) {
    const ColumnUnits u = supplied_units(*scale, X.matrix().cols());
    diag["units"] = {{"scale", "supplied"},
                     {"values", to_std(u.scale)}};
    return u;
  }
  UnitsEstimate est = estimate_units(X, aux.loss, alpha, widen, threads, account, rng, comm);
  diag["units"] = est.diagnostics;
  diag["units"]["scale"] = "estimated";
  if (est.abstained) {
    abstained = est.abstained;
    return std::nullopt;
  }
  return est.units;
}

std::size_t drop_rows(FilterState& st, const std::vector<char>& drop, int threads) {
  std::vector<std::uint32_t> kept, removed;
  kept.reserve(st.S.size());
  for (std::size_t q = 0; q < st.S.size(); ++q) (drop[q] ? removed : kept).push_back(st.S[q]);
  merge_gram(st, removed, false, -1.0, threads);
  st.S = std::move(kept);
  if (st.comm) st.set_all -= allreduce_count(*st.comm, std::ssize(removed));
  return removed.size();
}

// Branch-free per row (an OR of comparisons, which vectorises over the columns); cloned for
// AVX-512 and AVX2, chosen at run time.
__attribute__((target_clones("avx512f", "avx2", "default")))
std::int64_t rows_outside(const ConstMatrixRef& X, const Vector& lower, const Vector& upper) {
  const Eigen::Index n = X.rows(), d = X.cols(), stride = X.outerStride();
  const double* __restrict__ lo = lower.data();
  const double* __restrict__ hi = upper.data();
  std::int64_t count = 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    const double* __restrict__ row = X.data() + i * stride;
    int out = 0;
    for (Eigen::Index j = 0; j < d; ++j)
      out |= static_cast<int>(row[j] < lo[j]) | static_cast<int>(row[j] > hi[j]);
    count += out;
  }
  return count;
}

void report_clipped(const Mech& count, std::int64_t clipped, std::int64_t n, double tolerated,
                    const char* what, bool off, Rng& rng, nlohmann::json& diag) {
  const double noisy = count.apply(static_cast<double>(clipped), rng, off);
  const double fraction = std::clamp(noisy / static_cast<double>(n), 0.0, 1.0);
  diag["clipped"] = {{"rows_noisy", noisy}, {"fraction", fraction}, {"noise_scale", count.noise_scale()}};
  // Warn only beyond 5 noise scales of margin, so that noise alone rarely raises it (Laplace:
  // probability e^-5 / 2 = 0.3%; Gaussian: below 1e-6).
  if (noisy - 5 * count.noise_scale() > tolerated * static_cast<double>(n))
    diag["clipped"]["warning"] = fmt::format(
        "the supplied {} clips about {:.1f}% of the rows (more than {:.1f}%): it is probably too "
        "small for these data, and the estimate is biased towards the clipping region",
        what, 100 * fraction, 100 * tolerated);
}

FrontResult run_front(const RowsView& rows, const ClipPlan& c, const AuxPlan& aux,
                      const std::optional<std::vector<double>>& scale, double alpha,
                      double tolerated, int threads, bool off, ReleaseBudget& account, Rng& rng,
                      nlohmann::json& diag,
                      Communicator* comm, const ColumnUnits* given_units) {
  const ConstMatrixRef& X = rows.matrix();
  FrontResult out;
  Communicator* ranks = comm && comm->size() > 1 ? comm : nullptr;
  if (given_units) {
    out.units = *given_units;
  } else {
    const auto units =
        units_step(rows, aux, scale, alpha, 4, threads, account, rng, diag, out.abstained, ranks);
    if (!units) return out;
    out.units = *units;
    const CleanModel model = c.bounded_covariance ? CleanModel::bounded_covariance : CleanModel::sub_gaussian;
    if (auto why = tail_check(out.units, model, alpha)) {
      out.abstained = std::move(why);
      return out;
    }
  }
  // The front end reads the data in scale units through a view, and the filter state recomputes
  // each clipped, quantised row from it: no n x d working copy besides the caller's data.
  out.state = std::make_unique<FilterState>(X.rows(), X.cols());
  out.state->threads = threads;
  out.state->comm = ranks;
  const auto centre = front_end(units_view(X, out.units), c, rng, threads, *out.state,
                                out.clipped, out.abstained);
  if (!centre) {
    if (!out.abstained)
      out.abstained = c.range_ht ? "q_range-ht: every part abstained"
                                 : "q_range found no populated bin in some coordinate";
    return out;
  }
  out.centre = *centre;
  if (aux.clip_count) {
    Communicator& c_or_1 = comm_or_single(out.state->comm);
    const std::int64_t n = out.state->comm ? allreduce_count(c_or_1, X.rows()) : X.rows();
    diag["clipped"] = on_root_json(c_or_1, [&] {
      nlohmann::json j;
      report_clipped(*aux.clip_count, out.clipped, n, tolerated, "scale", off, rng, j);
      return j["clipped"];
    });
  }
  return out;
}

double model_error_units(CleanModel m, double alpha) {
  if (alpha <= 0) return 0;
  switch (m) {
    case CleanModel::sub_gaussian: return 3 * alpha * std::sqrt(2 * std::log(1 / alpha));
    case CleanModel::bounded_covariance: return 3 * std::sqrt(alpha);
    case CleanModel::none: return 0;
  }
  return 0;
}

double tail_allowance(CleanModel m, double alpha, double tail_noise) {
  // Gaussian: P(|Z| > 3) = 0.0027; bounded covariance (Chebyshev): 1/9.
  const double model = m == CleanModel::bounded_covariance
                           ? 1 / (kTailRadius * kTailRadius)
                           : 2 * (1 - normal_cdf(kTailRadius));
  return alpha + model + 0.01 + 3 * tail_noise;
}

std::optional<std::string> tail_check(const ColumnUnits& u, CleanModel m, double alpha) {
  if (!u.estimated || m == CleanModel::none || u.tail_fraction.size() == 0) return std::nullopt;
  const double allowed = tail_allowance(m, alpha, u.tail_noise);
  // The advice stays robust (alpha > 0 was declared): never a method that is not.
  const char* advice =
      m == CleanModel::sub_gaussian
          ? "use --method prime-ht, which assumes only a bounded covariance (or --method robust, "
            "which chooses between the two by this test), raise alpha if more rows are corrupted, "
            "or supply scale"
          : "no method of the family tolerates a tail this heavy with this alpha: raise alpha if "
            "more rows are corrupted, or supply scale (the clean rows' spread per column) if you "
            "know it";
  for (Eigen::Index j = 0; j < u.tail_fraction.size(); ++j) {
    if (u.tail_fraction[j] > allowed)
      return fmt::format(
          "column {}: about {:.1f}% of the rows lie beyond {} estimated scales ({}), more than "
          "the {:.1f}% the {} model with alpha = {} allows: the clean tail is too heavy for this "
          "method (its filter would remove it as corruption and bias the mean); {}",
          j, 100 * u.tail_fraction[j], kTailRadius, format_number(u.scale[j]), 100 * allowed,
          m == CleanModel::sub_gaussian ? "sub-Gaussian" : "bounded-covariance",
          format_number(alpha), advice);
  }
  return std::nullopt;
}

void state_error(nlohmann::json& diag, const ColumnUnits& u, double model_units,
                 double noise_sd_units, std::int64_t n, double beta, const char* model,
                 bool laplace) {
  const double d = static_cast<double>(u.scale.size());
  const double z = standard_normal_quantile(1 - beta / (4 * d));
  // Noise and sampling each at level β/(2d): P(|Laplace(b)| > b ln(2d/β)) = β/(2d).
  const double noise = (laplace ? std::log(2 * d / beta) : z) * noise_sd_units;
  const double units = model_units + noise + z / std::sqrt(static_cast<double>(n));
  diag["stated_error"] = {
      {"radius", to_std(units * u.scale)},
      {"confidence", 1 - beta},
      {"model", model},
      {"model_term_scale_units", model_units},
      {"noise_term_scale_units", noise},
      {"meaning", "per column, |estimate - clean mean| <= radius with probability >= confidence "
                  "when the clean rows follow the model in the stated units"}};
}

void check_units_options(const std::optional<std::vector<double>>& scale,
                         const std::optional<double>& scale_share, double clip_check_share,
                         Eigen::Index d) {
  if (scale) check_supplied_scale(*scale, d);
  if (scale_share) check_scale_share(*scale_share);
  require(clip_check_share >= 0 && clip_check_share <= 0.1,
          fmt::format("clip_check_share must be in [0, 0.1], got {}", clip_check_share));
}

void check_scale_share(double scale_share) {
  require(scale_share > 0 && scale_share <= 0.5,
          fmt::format("scale_share must be in (0, 0.5], got {}", scale_share));
}

Release<Vector> abstain_before_charging(const PrivacyTarget& target, Accountant accountant,
                                        NoiseMode noise, Budget* budget, Rng& rng,
                                        std::string reason, nlohmann::json diag) {
  ReleaseBudget account(target.loss(), accountant, budget);  // never charged
  SealFacts facts(true);
  facts.noise = noise;
  facts.abstained = std::move(reason);
  return seal(Vector{}, account, facts, rng, std::move(diag));
}

}  // namespace dpstats::mean_detail
