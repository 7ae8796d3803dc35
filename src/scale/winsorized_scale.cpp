// Private winsorised scale per column (winsorized_scale.hpp; docs/proofs/scale.md §3).
#include "dpstats/scale/winsorized_scale.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/exact/exact_sum.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/release.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "dpstats/scale/share.hpp"
#include "column_stages.hpp"

namespace dpstats {
namespace {

using namespace scale_detail;

constexpr std::size_t kCallsPerColumn = 3;
constexpr double kPi = 3.14159265358979323846;
constexpr double kMax = std::numeric_limits<double>::max();

void check_options(const WinsorizedScaleOptions& o) {
  check_share(o.loss);
  require(o.q >= 0.5 && o.q <= 0.99, "q must be in [0.5, 0.99], got {}", format_number(o.q));
  require(o.tail_radius >= 1 && o.tail_radius <= 100, "tail_radius must be in [1, 100], got {}",
          format_number(o.tail_radius));
  require(o.per_octave >= 1 && o.per_octave <= 1024,
          "per_octave must be an integer in [1, 1024], got {}", o.per_octave);
  require(o.octaves >= 1 && o.octaves <= 64, "octaves must be an integer in [1, 64], got {}",
          o.octaves);
  require(o.beta > 0 && o.beta < 1, "beta must be in (0, 1), got {}", format_number(o.beta));
  require(o.threads >= 1 && o.threads <= 256, "threads must be in [1, 256], got {}", o.threads);
}

// reference·2^(i/m), i = 0..octaves·m (strictly increasing, finite).
std::vector<double> reference_grid(double reference, const WinsorizedScaleOptions& o) {
  std::vector<double> g;
  const int points = o.octaves * o.per_octave;
  for (int i = 0; i <= points; ++i) {
    const double p = reference * std::exp2(static_cast<double>(i) / o.per_octave);
    if (!std::isfinite(p)) break;
    if (g.empty() || p > g.back()) g.push_back(p);
  }
  if (g.size() < 2) g = {reference / 2, reference};  // reference near DBL_MAX
  return g;
}

double normal_quantile(double p) {  // public constants only: bisection on normal_cdf
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// min(a, b) for a, b >= 0 (+inf allowed, not NaN): their bits order as they do, and an integer
// minimum keeps the columns' loop in SIMD registers (a double min is a branch to the compiler).
inline double min_nonnegative(double a, double b) {
  const auto x = std::bit_cast<std::int64_t>(a), y = std::bit_cast<std::int64_t>(b);
  return std::bit_cast<double>(x < y ? x : y);
}

// Rows [begin, end) of the sums of min(a^2/T_j^2, 1)·Q, a = |x - m_j| (clamped to DBL_MAX),
// added to w[j] (exact::add). Plain arrays and no branch, so that the columns' loop is kept in
// SIMD registers (cloned for AVX2, which has no fused multiply-add: the same terms on every CPU).
__attribute__((target_clones("avx2", "default")))
void clipped_square_rows(const ConstMatrixRef& X, std::int64_t begin, std::int64_t end,
                         const double* __restrict m, const double* __restrict t, double q,
                         std::uint64_t* __restrict w) {
  const auto d = static_cast<std::size_t>(X.cols());
  for (std::int64_t r = begin; r < end; ++r) {
    const double* __restrict row = X.row(r).data();
    for (std::size_t j = 0; j < d; ++j) {
      const double a = clamp_magnitude(std::fabs(row[j] - m[j]));
      exact::add(w[j], min_nonnegative((a / t[j]) * (a / t[j]), 1.0) * q);
    }
  }
}

// For every column j, the sum over every rank's rows of min(a^2/T_j^2, 1), a = |x - m_j|, as an
// exact lattice sum: each term in [0, 1] is mapped to [0, Q] (Q = box_quantum(n), n the rows over
// all ranks), rounded to the nearest integer and added exactly (one pass for every column, threads
// across rows), then the ranks' integer sums are added exactly; returns the integer totals / Q. A
// rounded term stays in [0, Q], so one replaced row moves a result by at most 1, the sensitivity
// of the real sum (docs/proofs/scale.md §3b). The same values for any order of the rows, any
// thread count and any number of ranks.
Vector clipped_square_sums(const ConstMatrixRef& X, const Vector& location,
                           const std::vector<double>& clip, std::int64_t n, int threads,
                           Communicator& comm) {
  const double Q = exact::box_quantum(n);
  Vector s = exact::row_sums(X.rows(), X.cols(), Q, threads,
                             [&](int, std::int64_t begin, std::int64_t end, std::uint64_t* w) {
                               clipped_square_rows(X, begin, end, location.data(), clip.data(),
                                                   Q, w);
                             });
  allreduce_exact(comm, s);
  return s / Q;
}

// Rows [begin, end): c[j] += #{rows with |x - m_j| > radius_j} (plain arrays, as above).
__attribute__((target_clones("avx2", "default")))
void beyond_rows(const ConstMatrixRef& X, std::int64_t begin, std::int64_t end,
                 const double* __restrict m, const double* __restrict radius,
                 std::int64_t* __restrict c) {
  const auto d = static_cast<std::size_t>(X.cols());
  for (std::int64_t r = begin; r < end; ++r) {
    const double* __restrict row = X.row(r).data();
    for (std::size_t j = 0; j < d; ++j) c[j] += clamp_magnitude(std::fabs(row[j] - m[j])) > radius[j];
  }
}

// For every column j, the rows of every rank with |x - m_j| > radius_j (exact counts).
std::vector<std::int64_t> counts_beyond(const ConstMatrixRef& X, const Vector& location,
                                        const std::vector<double>& radius, int threads,
                                        Communicator& comm) {
  const auto d = static_cast<std::size_t>(X.cols());
  std::vector<std::vector<std::int64_t>> parts(static_cast<std::size_t>(std::max(threads, 1)));
  parallel_ranges(X.rows(), threads, 65536, [&](int part, std::int64_t begin, std::int64_t end) {
    std::vector<std::int64_t>& c = parts[static_cast<std::size_t>(part)];
    c.assign(d, 0);
    beyond_rows(X, begin, end, location.data(), radius.data(), c.data());
  });
  std::vector<std::int64_t> total(d, 0);
  for (const auto& c : parts)
    for (std::size_t j = 0; j < c.size(); ++j) total[j] += c[j];
  comm.allreduce_sum(total);
  return total;
}

// The clip T_j of every column: the upper end of the cell released for the q-quantile of
// |x - m_j| on the column's reference grid (one pass, d selections).
void select_clips(const ConstMatrixRef& X, const Vector& location, const Vector& reference,
                  const WinsorizedScaleOptions& o, double epsilon, ColumnGenerators& gens,
                  Communicator& comm, std::vector<WinsorizedColumn>& columns) {
  const auto d = static_cast<std::size_t>(X.cols());
  std::vector<GridIndex> grids;
  for (std::size_t j = 0; j < d; ++j) {
    const double r = reference[static_cast<Eigen::Index>(j)];
    grids.push_back(GridIndex::geometric(reference_grid(r, o)));
  }
  std::vector<const GridIndex*> g;
  for (const GridIndex& grid : grids) g.push_back(&grid);
  const std::vector<double> m(location.data(), location.data() + location.size());
  const auto cells = column_quantile_cells(X, g, distance_to(m), o.q, epsilon, gens, o.threads,
                                           comm);
  columns.resize(d);
  for (std::size_t j = 0; j < d; ++j) {
    const std::span<const double> p = grids[j].grid();
    columns[j].clip = p[cells[j] + 1];  // the cell's upper end (never 0)
    columns[j].clip_at_end = cells[j] + 2 == p.size();
  }
}

}  // namespace

double gaussian_winsorized_factor(double q) {
  require(q > 0 && q < 1, "q must be in (0, 1), got {}", format_number(q));
  const double t = normal_quantile((1 + q) / 2);
  const double phi = std::exp(-t * t / 2) / std::sqrt(2 * kPi);
  // E min(Z^2, t^2): E[Z^2 1{|Z| <= t}] = (2 Phi(t) - 1) - 2 t phi(t) = q - 2 t phi(t); beyond
  // t: t^2 (1 - q). For N(mu, sigma^2) with T = t sigma, E min(a^2/T^2, 1) = c / t^2, so
  // T sqrt(m / c) = sigma.
  return q - 2 * t * phi + t * t * (1 - q);
}

Vector WinsorizedScale::scale() const {
  Vector s(static_cast<Eigen::Index>(columns.size()));
  for (std::size_t j = 0; j < columns.size(); ++j) s[static_cast<Eigen::Index>(j)] = columns[j].scale;
  return s;
}

nlohmann::json WinsorizedScale::diagnostics() const {
  nlohmann::json cols = nlohmann::json::array();
  for (const WinsorizedColumn& c : columns)
    cols.push_back({{"clip", c.clip},
                    {"clip_at_end", c.clip_at_end},
                    {"second_moment", c.second_moment},
                    {"scale", c.scale},
                    {"tail_fraction", c.tail_fraction}});
  return {{"columns", cols},
          {"rank_error", rank_error},
          {"reliable", reliable},
          {"epsilon_per_call", epsilon_per_call},
          {"noise_scale", noise_scale},
          {"entries", ledger_json(entries)}};
}

Ledger winsorized_scale_entries(const WinsorizedScaleOptions& o, std::size_t d) {
  check_options(o);
  require(d >= 1, "d must be >= 1, got {}", d);
  const double e = per_call_epsilon(o.loss, kCallsPerColumn * d);
  const LaplaceMechanism lap(1.0, e);
  Ledger entries = {
      grid_quantile_entry(e, "scale: winsorising clip (quantile of |x - location|)"),
      lap.ledger_entry("scale: winsorised second moment (sum of min(a^2/T^2, 1))"),
      lap.ledger_entry("scale: rows beyond the tail radius (count)")};
  for (LedgerEntry& entry : entries) {
    entry.purpose += fmt::format(" ({} columns)", d);
    entry.count = static_cast<int>(d);
  }
  return entries;
}

WinsorizedScale winsorized_scale(const RowsView& view, const Vector& location,
                                 const Vector& reference, const WinsorizedScaleOptions& o, ReleaseBudget& account,
                                 Rng& rng,
                                 const std::function<double(std::size_t, double, bool)>& final_scale) {
  check_options(o);
  const ConstMatrixRef& X = view.matrix();
  Communicator& comm = comm_or_single(o.comm);
  if (comm.size() == 1) {
    if (!view.checked()) check_data(X);
  } else {
    all_or_none(comm, [&] {
      if (X.rows() > 0) check_data(X);
    });
  }
  require(location.size() == X.cols() && reference.size() == X.cols(),
          "location and reference must hold {} values each, got {} and {}", X.cols(),
          location.size(), reference.size());
  for (Eigen::Index j = 0; j < reference.size(); ++j)
    require(std::isfinite(reference[j]) && reference[j] > 0,
            "reference[{}] must be > 0 and finite, got {}", j, format_number(reference[j]));
  const std::int64_t rows = comm.size() == 1
                                ? static_cast<std::int64_t>(X.rows())
                                : allreduce_count(comm, static_cast<std::int64_t>(X.rows()));
  const auto d = static_cast<std::size_t>(X.cols());
  WinsorizedScale out;
  out.entries = winsorized_scale_entries(o, d);
  all_or_none(comm, [&] { account.claim(out.entries); });
  out.epsilon_per_call = per_call_epsilon(o.loss, kCallsPerColumn * d);
  const LaplaceMechanism lap(1.0, out.epsilon_per_call);
  out.noise_scale = lap.noise_scale();
  const std::size_t grid_points = static_cast<std::size_t>(o.octaves * o.per_octave) + 1;
  out.rank_error = grid_quantile_rank_error(out.epsilon_per_call, grid_points,
                                            o.beta / static_cast<double>(d));
  const double n = static_cast<double>(rows);
  out.facts = {.rank_error = out.rank_error, .n = n, .tolerance = (1 - o.q) / 2,
               .epsilon = out.epsilon_per_call};
  out.reliable = assess(out.facts, "the winsorised scale", "").usable;
  // Three passes over the rows, each for every column: the clips, the clipped second moments,
  // the rows beyond the tail radius. The noise is drawn on rank 0, column by column.
  ColumnGenerators gens(rng, d);
  select_clips(X, location, reference, o, out.epsilon_per_call, gens, comm, out.columns);
  std::vector<double> clip(d), radius(d);
  for (std::size_t j = 0; j < d; ++j) clip[j] = out.columns[j].clip;
  const Vector sums = clipped_square_sums(X, location, clip, rows, o.threads, comm);
  const double c = gaussian_winsorized_factor(o.q);
  for (std::size_t j = 0; j < d; ++j) {
    WinsorizedColumn& w = out.columns[j];
    const double sum = sums[static_cast<Eigen::Index>(j)];
    w.second_moment =
        std::clamp(on_root(comm, [&] { return lap.apply(sum, gens[j]); }) / n, 0.0, 1.0);
    w.scale = std::min(w.clip * std::sqrt(w.second_moment / c), kMax);
    radius[j] = o.tail_radius * final_scale(j, w.scale, out.reliable);
  }
  const std::vector<std::int64_t> beyond = counts_beyond(X, location, radius, o.threads, comm);
  for (std::size_t j = 0; j < d; ++j) {
    const auto b = static_cast<double>(beyond[j]);
    out.columns[j].tail_fraction =
        std::clamp(on_root(comm, [&] { return lap.apply(b, gens[j]); }) / n, 0.0, 1.0);
  }
  return out;
}

}  // namespace dpstats
