// The robust means' front end (card §2.2-2.3, addendum correction 1): private range, private
// coordinate medians, clipping and quantisation; see prime_internal.hpp.
#include <numeric>

#include "dpstats/mechanisms/exponential.hpp"
#include "dpstats/mechanisms/histogram.hpp"
#include "prime_internal.hpp"
#include "prime_kernels.hpp"

namespace dpstats::prime_detail {

// q_range (card §2.2) with the same bins, budget, noise and output as mechanisms/range.hpp, but
// reading the row-major data in one pass per block of 64 coordinates instead of one
// strided pass per coordinate (the strided reads cost 2 s at n = 10^6, d = 50).
std::optional<RangeResult> q_range_rows(const ConstMatrixRef& X, const RangeOptions& o,
                                        const EpsilonDelta& per, const LedgerEntry& entry,
                                        Rng& rng, int threads) {
  const Eigen::Index n = X.rows(), d = X.cols();
  RangeResult result;
  result.centre.resize(d);
  constexpr Eigen::Index kBlock = 64;
  const Eigen::Index block_cols = std::min(kBlock, d);
  // Uninitialised: every cell is written before it is read (no page-zeroing pass).
  HugeArray<std::int64_t> bins(static_cast<std::size_t>(n * block_cols));
  for (Eigen::Index j0 = 0; j0 < d; j0 += kBlock) {
    const Eigen::Index width = std::min(kBlock, d - j0);
    // Bins of 1024 rows at a time into a small tile, then one contiguous copy per coordinate
    // (32 interleaved 8-byte write streams over n rows are several times slower).
    parallel_for(n, threads, [&](int, std::int64_t b, std::int64_t e) {
      constexpr std::int64_t kTile = 1024;
      std::vector<std::int64_t> tile(static_cast<std::size_t>(kBlock * kTile));
      for (std::int64_t i0 = b; i0 < e; i0 += kTile) {
        const std::int64_t rows = std::min(kTile, e - i0);
        for (std::int64_t r = 0; r < rows; ++r) {
          const double* row = X.row(i0 + r).data() + j0;
          for (Eigen::Index jj = 0; jj < width; ++jj) {
            // bin (2σl, 2σ(l+1)]: l = ⌈x/2σ⌉ − 1 = −⌊−x/2σ⌋ − 1
            const double u = std::clamp(-row[jj] / (2 * o.sigma), -0x1p61, 0x1p61);
            tile[static_cast<std::size_t>(jj * kTile + r)] =
                static_cast<std::int64_t>(-fast_floor(u) - 1);
          }
        }
        for (Eigen::Index jj = 0; jj < width; ++jj)
          std::copy_n(tile.data() + jj * kTile, rows, bins.get() + jj * n + i0);
      }
    });
    for (Eigen::Index jj = 0; jj < width; ++jj) {
      const std::span<const std::int64_t> col(bins.get() + jj * n, static_cast<std::size_t>(n));
      const StabilityHistogram h =
          stability_histogram(col, per.epsilon, per.delta, Neighbouring::replace_one, rng);
      if (h.noisy_counts.empty()) return std::nullopt;
      auto best = h.noisy_counts.begin();
      for (auto it = h.noisy_counts.begin(); it != h.noisy_counts.end(); ++it)
        if (it->second > best->second) best = it;
      result.centre[j0 + jj] = 2 * o.sigma * (static_cast<double>(best->first) + 0.5);
    }
  }
  result.side = 8 * o.sigma *
                std::sqrt(std::log(static_cast<double>(d) * static_cast<double>(n) / o.zeta));
  result.entry = entry;
  return result;
}


std::optional<Vector> front_end(const ConstMatrixRef& X, const ClipPlan& c, double sigma,
                                Rng& rng, int threads, FilterState& st, std::int64_t& clipped) {
  const std::int64_t n = X.rows(), d = X.cols();
  const double nd = static_cast<double>(n);
  Vector centre;
  if (c.range_ht) {
    const auto range = q_range_ht(X, *c.range_ht, rng);
    if (!range) return std::nullopt;
    centre = range->centre;
  } else {
    const auto range = q_range_rows(X, c.range, c.range_per, c.range_entry, rng, threads);
    if (!range) return std::nullopt;
    centre = range->centre;
  }
  if (c.median_eps > 0) {
    // Candidates c_k = x̄_j + σ(−4 + 0.1k), k = 0..K−1; quality −|#{x < c_k} − n/2| (sensitivity
    // 1). One row-major pass buckets every value: below[j][b] counts values whose smallest k
    // with x < c_k is b.
    ExponentialMechanismOptions med;
    med.epsilon = c.median_eps;
    med.sensitivity = 1;
    med.monotone = false;
    const int K = 2 * kMedianHalfSteps + 1;
    const double h = kMedianStep * sigma;
    const Vector lo = centre.array() - kMedianHalfSteps * h;
    const std::size_t cells = static_cast<std::size_t>(d * (K + 1));
    std::vector<std::int64_t> parts(cells * static_cast<std::size_t>(threads), 0);
    parallel_for(n, threads, [&](int t, std::int64_t b, std::int64_t e) {
      std::int64_t* mine = parts.data() + cells * static_cast<std::size_t>(t);
      for (Eigen::Index i = b; i < e; ++i) {
        const double* row = X.row(i).data();
        for (Eigen::Index j = 0; j < d; ++j) {
          const double u = std::clamp((row[j] - lo[j]) / h, -1.0, double(K - 1));
          ++mine[j * (K + 1) + static_cast<std::int64_t>(fast_floor(u)) + 1];
        }
      }
    });
    std::vector<std::int64_t> below(cells, 0);
    for (int t = 0; t < threads; ++t)
      for (std::size_t k = 0; k < cells; ++k) below[k] += parts[cells * t + k];
    std::vector<double> quality(static_cast<std::size_t>(K));
    for (Eigen::Index j = 0; j < d; ++j) {
      std::int64_t cum = 0;
      for (int k = 0; k < K; ++k) {
        cum += below[static_cast<std::size_t>(j * (K + 1) + k)];
        quality[static_cast<std::size_t>(k)] = -std::abs(static_cast<double>(cum) - nd / 2);
      }
      const std::size_t pick = permute_and_flip(quality, med, rng);
      centre[j] = lo[j] + static_cast<double>(pick) * h;
    }
  }

  // Clip (ball or box, σ units around the centre) and quantise onto the grid qZ.
  std::vector<std::int64_t> clipped_parts(static_cast<std::size_t>(threads), 0);
  const bool ball = c.shape == ClipShape::ball;
  parallel_for(n, threads, [&](int t, std::int64_t b, std::int64_t e) {
    for (Eigen::Index i = b; i < e; ++i) {
      auto z = st.Z.row(i);
      z = (X.row(i) - centre.transpose()) / sigma;
      if (ball) {
        const double norm = z.norm();
        if (norm > c.radius) {
          z *= c.radius / norm;
          ++clipped_parts[static_cast<std::size_t>(t)];
        }
      } else {
        const double before = z.cwiseAbs().maxCoeff();
        z = z.cwiseMax(-c.radius).cwiseMin(c.radius);
        clipped_parts[static_cast<std::size_t>(t)] += before > c.radius;
      }
      for (Eigen::Index j = 0; j < d; ++j) z[j] = fast_round(z[j] / c.q) * c.q;
    }
  });
  clipped = 0;
  for (auto k : clipped_parts) clipped += k;
  st.S.resize(static_cast<std::size_t>(n));
  std::iota(st.S.begin(), st.S.end(), 0u);
  st.G.assign(static_cast<std::size_t>(d * d), 0.0);
  st.s = Vector::Zero(d);
  gram_update(st.Z, {}, true, 1.0, st.G.data(), st.s.data(), threads);
  return centre;
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
  const double shift = normal_quantile(0.5 / (1 - alpha));
  const double z = normal_quantile(1 - zeta / (8 * dd));
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
  c.region = c.radius * (1 + 1e-12) + c.q * std::sqrt(dd) / 2;
  c.D = 2 * c.region;
  return e_med;
}

}  // namespace dpstats::prime_detail
