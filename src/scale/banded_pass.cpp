// The banded pass (banded_pass.hpp; docs/proofs/scale.md §1d).
#include "banded_pass.hpp"

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>

#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "exact_coins.hpp"

namespace dpstats::scale_detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMaxDouble = std::numeric_limits<double>::max();
constexpr std::int64_t kPilotRows = std::int64_t{1} << 13;
// Bands that would hold more of the values than this are not worth a pass of their own.
constexpr double kMostStored = 0.5;
// A band reaches this many cells of the log grid past the pilot's quantiles.
constexpr double kCells = 3;

// The sample quantiles of v (reordered) at `levels` (in [0, 1], increasing): each by
// nth_element within the stretch the ones before it left (about 2 |v| comparisons for a few).
std::vector<double> sample_quantiles(std::vector<double>& v, std::span<const double> levels) {
  std::vector<std::size_t> at;
  for (double p : levels)
    at.push_back(static_cast<std::size_t>(
        std::clamp(p * static_cast<double>(v.size()), 0.0, static_cast<double>(v.size() - 1))));
  std::vector<double> out(at.size());
  auto select = [&](auto& self, std::size_t lo, std::size_t hi, std::size_t a, std::size_t b) {
    if (a >= b) return;
    const std::size_t mid = (a + b) / 2, k = at[mid];
    std::nth_element(v.begin() + static_cast<std::ptrdiff_t>(lo),
                     v.begin() + static_cast<std::ptrdiff_t>(k),
                     v.begin() + static_cast<std::ptrdiff_t>(hi));
    out[mid] = v[k];
    self(self, lo, k, a, mid);
    self(self, k, hi, mid + 1, b);
  };
  select(select, 0, v.size(), 0, at.size());
  return out;
}

// x moved by about `cells` cells of a log grid of `per_octave` points an octave, down or up (and
// past the cells next to 0).
double moved(double x, double cells, int per_octave, bool up) {
  const double step = std::fabs(x) * (std::exp2(cells / per_octave) - 1) + 0x1p-1020;
  return up ? x + step : x - step;
}

}  // namespace

std::optional<Pilot> plan_pilot(const ConstMatrixRef& X, double epsilon, int per_octave) {
  const std::int64_t n = X.rows();
  const auto d = static_cast<std::size_t>(X.cols());
  if (n < 1 || d == 0 || !(epsilon > 0)) return std::nullopt;
  // A cell is far when its distance to the quantile, in rows, makes its coin's exponent at least
  // kFarGamma (select_runs); 2 rows more for the exponent's rounding. The pilot's quantile is
  // within 4.5 standard errors of its level.
  const double far_rows = 2 * kFarGamma / (epsilon * (1 - 0x1p-40)) + 2;
  const std::int64_t m = std::min(n, kPilotRows);
  Pilot out;
  out.rows = static_cast<std::size_t>(m);
  out.per_octave = per_octave;
  out.half = far_rows / static_cast<double>(n) + 4.5 * std::sqrt(0.25 / static_cast<double>(m)) +
             2 / static_cast<double>(m);
  if (out.half >= kMostStored / 2) return std::nullopt;
  out.sample.resize(out.rows * d);  // column j's pilot at j * rows, read row by row
  for (std::size_t i = 0; i < out.rows; ++i) {
    const double* row = X.row(static_cast<std::int64_t>(i) * n / m).data();
    for (std::size_t j = 0; j < d; ++j) {
      if (!std::isfinite(row[j])) return std::nullopt;  // the rows' check reports it
      out.sample[j * out.rows + i] = row[j];
    }
  }
  std::vector<double> v;
  for (std::size_t j = 0; j < d; ++j) {
    v.assign(out.column(j).begin(), out.column(j).end());
    const double at[] = {0.5 - out.half, 0.5 + out.half};
    const std::vector<double> x = sample_quantiles(v, at);
    out.lo.push_back(moved(x[0], kCells, per_octave, false));
    out.hi.push_back(moved(x[1], kCells, per_octave, true));
    const auto in_band = std::count_if(v.begin(), v.end(), [&](double y) {
      return y >= out.lo.back() && y < out.hi.back();
    });
    out.share.push_back(static_cast<double>(in_band) / static_cast<double>(out.rows));
  }
  return out;
}

namespace {

constexpr std::uint64_t kExponent = 0x7ff0000000000000;

// One part's counts: column j's values with y below lo_j, and its band's values (kept), or their
// bins at bins + offset[j] (bin k of the grid at k - first[j]; y in [lo, hi) has a bin between
// bin(lo) and bin(hi), as bin is monotone).
struct PartOut {
  std::vector<std::int64_t> below;
  BinBuffer bins;
  std::vector<std::vector<double>> kept;  // with PassPlan::keep: each column's values in its band
  std::uint64_t flagged = 0;
};

struct PassPlan {
  std::size_t d;
  const double* lo;
  const double* hi;
  const double* centre;      // null: y = x
  const std::int64_t* base;  // offset - first: bin k is counted at bins[k + base]
  bool keep;                 // the values inside the bands are kept instead of binned
};

// Rows [begin, end) on one exact log grid for every column: y in SIMD registers, the counts
// below each band, then each value inside its band binned. The plan's fields are read into
// locals first (stores to the counts could otherwise alias them).
template <bool check, bool centred, class Lookup>
[[gnu::target("avx2")]] void band_rows_avx2(const ConstMatrixRef& X, std::int64_t begin,
                                            std::int64_t end, const PassPlan& p, Lookup lookup,
                                            PartOut& out) {
  const std::size_t d = p.d, vec = d / 4 * 4, words = (d + 63) / 64;
  const double* __restrict lo = p.lo;
  const double* __restrict hi = p.hi;
  const double* __restrict centre = p.centre;
  const std::int64_t* __restrict base = p.base;
  std::int64_t* __restrict below = out.below.data();
  std::uint32_t* __restrict bins = out.bins.get();
  const bool keep = p.keep;
  const __m256i exponent = _mm256_set1_epi64x(static_cast<std::int64_t>(kExponent));
  const __m256d sign = _mm256_set1_pd(-0.0), top = _mm256_set1_pd(kMaxDouble);
  __m256i flag = _mm256_setzero_si256();
  std::uint64_t scalar_flag = 0;
  auto y_of = [&](std::size_t j, double x) {
    return centred ? clamp_magnitude(std::fabs(x - centre[j])) : x;
  };
  std::uint64_t mask[16];  // d <= 1024
  for (std::int64_t r = begin; r < end; ++r) {
    const double* __restrict row = X.row(r).data();
    for (std::size_t w = 0; w < words; ++w) {
      std::uint64_t bits = 0;  // kept in a register: a word's 16 vectors set its bits
      for (std::size_t j = w * 64; j < std::min(vec, w * 64 + 64); j += 4) {
        __m256d y = _mm256_loadu_pd(row + j);
        if constexpr (check) {
          const __m256i v = _mm256_castpd_si256(y);
          flag = _mm256_or_si256(flag,
                                 _mm256_cmpeq_epi64(_mm256_and_si256(v, exponent), exponent));
        }
        if constexpr (centred)  // |x - c| clamped to DBL_MAX: clamp_magnitude(fabs(x - c))
          y = _mm256_min_pd(_mm256_andnot_pd(sign, _mm256_sub_pd(y, _mm256_loadu_pd(centre + j))),
                            top);
        const __m256d l = _mm256_cmp_pd(y, _mm256_loadu_pd(lo + j), _CMP_LT_OQ);
        const __m256d h = _mm256_cmp_pd(y, _mm256_loadu_pd(hi + j), _CMP_LT_OQ);
        auto* c = reinterpret_cast<__m256i*>(below + j);
        _mm256_storeu_si256(c, _mm256_sub_epi64(_mm256_loadu_si256(c), _mm256_castpd_si256(l)));
        bits |= static_cast<std::uint64_t>(
                    static_cast<unsigned>(_mm256_movemask_pd(_mm256_andnot_pd(l, h))))
                << (j & 63);
      }
      for (std::size_t j = std::max(vec, w * 64); j < std::min(d, w * 64 + 64); ++j) {
        if constexpr (check)
          scalar_flag |= (std::bit_cast<std::uint64_t>(row[j]) & kExponent) == kExponent;
        const double y = y_of(j, row[j]);
        below[j] += y < lo[j];
        bits |= static_cast<std::uint64_t>(y >= lo[j] && y < hi[j]) << (j & 63);
      }
      mask[w] = bits;
    }
    for (std::size_t w = 0; w < words; ++w)
      for (std::uint64_t m = mask[w]; m != 0; m &= m - 1) {
      {
        const std::size_t j = w * 64 + static_cast<std::size_t>(std::countr_zero(m));
        if (keep)
          out.kept[j].push_back(row[j]);
        else  // y in [lo, hi): its bin in [bin(lo), bin(hi)]
          ++bins[lookup(y_of(j, row[j])) + base[j]];
      }
      }
  }
  out.flagged = scalar_flag | (_mm256_testz_si256(flag, flag) ? 0 : 1);
}

// The same on any grid per column and any CPU.
template <bool check>
void band_rows(const ConstMatrixRef& X, std::int64_t begin, std::int64_t end, const PassPlan& p,
               std::span<const GridIndex* const> grids, PartOut& out) {
  std::uint64_t flagged = 0;
  for (std::int64_t r = begin; r < end; ++r) {
    const double* row = X.row(r).data();
    for (std::size_t j = 0; j < p.d; ++j) {
      if constexpr (check)
        flagged |= (std::bit_cast<std::uint64_t>(row[j]) & kExponent) == kExponent;
      const double y =
          p.centre != nullptr ? clamp_magnitude(std::fabs(row[j] - p.centre[j])) : row[j];
      out.below[j] += y < p.lo[j];
      if (!(y >= p.lo[j] && y < p.hi[j])) continue;
      if (p.keep) {
        out.kept[j].push_back(row[j]);
        continue;
      }
      ++out.bins[static_cast<std::size_t>(static_cast<std::int64_t>(grids[j]->bin(y)) + p.base[j])];
    }
  }
  out.flagged = flagged;
}

// Where each band's bins lie: bins bin(lo_j)..bin(hi_j) of column j's grid at offset[j] (a band
// that is empty or not finite is made empty at +inf: it holds nothing, and its column's
// selections count every value).
struct BinLayout {
  std::vector<std::int64_t> first, last, base;  // base = offset - first
  std::vector<std::size_t> offset;
};

BinLayout bin_layout(std::vector<double>& lo, std::vector<double>& hi,
                     std::span<const GridIndex* const> grids) {
  const std::size_t d = grids.size();
  BinLayout l{std::vector<std::int64_t>(d, 0), std::vector<std::int64_t>(d, 0),
              std::vector<std::int64_t>(d), std::vector<std::size_t>(d + 1, 0)};
  for (std::size_t j = 0; j < d; ++j) {
    if (!(lo[j] < hi[j]) || !std::isfinite(lo[j]) || !std::isfinite(hi[j])) lo[j] = hi[j] = kInf;
    if (std::isfinite(lo[j])) {
      l.first[j] = static_cast<std::int64_t>(grids[j]->bin(lo[j]));
      l.last[j] = static_cast<std::int64_t>(grids[j]->bin(hi[j]));
    }
    l.offset[j + 1] = l.offset[j] + static_cast<std::size_t>(l.last[j] - l.first[j] + 1);
    l.base[j] = static_cast<std::int64_t>(l.offset[j]) - l.first[j];
  }
  return l;
}

// One part's rows counted by the kernel that fits: AVX2 on one exact log grid for every column
// (the nonnegative grid's short lookup for distances), else the plain loop.
void count_part(const ConstMatrixRef& X, std::int64_t begin, std::int64_t end,
                const PassPlan& plan, std::span<const GridIndex* const> grids, bool check,
                PartOut& o) {
  const bool simd = avx2_rows() && plan.d <= 1024 && grids[0]->is_exact_log() &&
                    std::all_of(grids.begin(), grids.end(),
                                [&](const GridIndex* g) { return g == grids[0]; });
  if (!simd) {
    check ? band_rows<true>(X, begin, end, plan, grids, o)
          : band_rows<false>(X, begin, end, plan, grids, o);
  } else if (plan.centre == nullptr) {
    const auto lookup = grids[0]->exact_log();
    check ? band_rows_avx2<true, false>(X, begin, end, plan, lookup, o)
          : band_rows_avx2<false, false>(X, begin, end, plan, lookup, o);
  } else if (grids[0]->is_nonnegative()) {
    band_rows_avx2<false, true>(X, begin, end, plan, grids[0]->exact_log_nonnegative(), o);
  } else {
    band_rows_avx2<false, true>(X, begin, end, plan, grids[0]->exact_log(), o);
  }
}

}  // namespace

std::optional<BandedPass> banded_pass(const ConstMatrixRef& X, std::vector<double> lo,
                                      std::vector<double> hi,
                                      std::span<const GridIndex* const> grids, BandTransform y,
                                      bool check, int threads, const std::vector<double>* keep) {
  const std::int64_t n = X.rows();
  const std::size_t d = grids.size();
  require(static_cast<std::size_t>(X.cols()) == d && n > 0 && lo.size() == d && hi.size() == d,
          "banded_pass: a band for every column");
  const BinLayout layout = bin_layout(lo, hi, grids);
  const PassPlan plan{d, lo.data(), hi.data(), y.centre ? y.centre->data() : nullptr,
                      layout.base.data(), keep != nullptr};
  const int parts = static_cast<int>(
      std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(1, n / 65536)));
  std::vector<PartOut> out(static_cast<std::size_t>(parts));
  parallel_ranges(n, parts, 1, [&](int part, std::int64_t begin, std::int64_t end) {
    PartOut& o = out[static_cast<std::size_t>(part)];
    o.below.assign(d, 0);
    if (keep == nullptr) {
      o.bins = bin_buffer(layout.offset[d]);
    } else {  // room for the pilot's share of the part's rows, and some more
      o.kept.resize(d);
      for (std::size_t j = 0; j < d; ++j)
        o.kept[j].reserve(static_cast<std::size_t>(((*keep)[j] * 1.2 + 0.01) *
                                                   static_cast<double>(end - begin)));
    }
    count_part(X, begin, end, plan, grids, check, o);
  });
  BandedPass pass;
  pass.rows = n;
  pass.below.assign(d, 0);
  pass.first.assign(layout.first.begin(), layout.first.end());
  pass.last.assign(layout.last.begin(), layout.last.end());
  if (keep != nullptr) pass.kept.resize(d);
  else pass.hist.resize(d);
  for (std::size_t j = 0; j < d; ++j) {
    for (const PartOut& o : out) {
      if (o.flagged != 0) return std::nullopt;
      pass.below[j] += o.below[j];
    }
    if (keep != nullptr) {  // the parts' values, in row order
      pass.kept[j] = std::move(out[0].kept[j]);
      for (std::size_t part = 1; part < out.size(); ++part)
        pass.kept[j].insert(pass.kept[j].end(), out[part].kept[j].begin(),
                            out[part].kept[j].end());
      continue;
    }
    pass.hist[j].assign(layout.offset[j + 1] - layout.offset[j], 0);
    for (const PartOut& o : out)
      for (std::size_t k = 0; k < pass.hist[j].size(); ++k)
        pass.hist[j][k] += o.bins.get()[layout.offset[j] + k];
  }
  pass.lo = std::move(lo);
  pass.hi = std::move(hi);
  return pass;
}

std::optional<BandedPass> median_pass(const ConstMatrixRef& X, const Pilot& pilot,
                                      const GridIndex& grid, bool check, int threads) {
  const std::vector<const GridIndex*> grids(pilot.lo.size(), &grid);
  return banded_pass(X, pilot.lo, pilot.hi, grids, {}, check, threads, &pilot.share);
}

BandedPass mad_pass(const ConstMatrixRef& X, const Pilot& pilot,
                    const std::vector<double>& centre, const GridIndex& grid, int threads) {
  const std::size_t d = centre.size();
  std::vector<double> near(d), far(d), v;
  for (std::size_t j = 0; j < d; ++j) {  // the pilot's distances to the location itself
    v.clear();
    for (double x : pilot.column(j)) v.push_back(clamp_magnitude(std::fabs(x - centre[j])));
    const double at[] = {0.5 - pilot.half, 0.5 + pilot.half};
    const std::vector<double> y = sample_quantiles(v, at);
    near[j] = std::max(0.0, moved(y[0], kCells, pilot.per_octave, false));
    far[j] = moved(y[1], kCells, pilot.per_octave, true);
  }
  const std::vector<const GridIndex*> grids(d, &grid);
  return *banded_pass(X, std::move(near), std::move(far), grids, {&centre}, false, threads,
                      nullptr);
}

std::optional<PartialCounts> band_counts(const ConstMatrixRef& X, const BandedPass& pass,
                                         std::size_t j, const GridIndex& grid, BandTransform y,
                                         double q) {
  // The points in (lo, hi]: A_k = #{y < lo} + the band's values with bin <= k (y < p_k iff
  // bin(y) <= k), the values at or above hi counting in none.
  const double lo = pass.lo[j], hi = pass.hi[j];
  if (!std::isfinite(lo)) return std::nullopt;
  const std::size_t k1 = grid.bin(lo), top = grid.bin(hi);
  if (top < 2 || k1 + 2 > top) return std::nullopt;  // fewer than two points
  const std::size_t k2 = std::min(top - 1, grid.size() - 1);
  std::vector<std::int64_t> binned;  // a pass that kept its values: their bins, made here
  if (pass.hist.empty()) {
    binned.assign(pass.last[j] - pass.first[j] + 1, 0);
    for (double x : pass.kept[j]) ++binned[grid.bin(y(j, x)) - pass.first[j]];
  }
  const std::vector<std::int64_t>& h = pass.hist.empty() ? binned : pass.hist[j];
  std::int64_t inside = 0;
  for (std::int64_t c : h) inside += c;
  const i128 target = static_cast<i128>(quantile_units(q)) * pass.rows;
  const i128 unit = static_cast<i128>(1) << 60;
  if (static_cast<i128>(pass.below[j]) * unit > target ||
      static_cast<i128>(pass.below[j] + inside) * unit < target)
    return std::nullopt;
  PartialCounts c;
  c.first = k1;
  c.known.resize(k2 - k1 + 1);
  std::int64_t sum = pass.below[j];
  const std::size_t first = pass.first[j];
  std::size_t next = first;  // the next bin to add
  for (std::size_t i = 0; i < c.known.size(); ++i) {
    for (; next <= k1 + i && next - first < h.size(); ++next) sum += h[next - first];
    c.known[i] = sum;
  }
  c.exact = [&X, &grid, y, j](std::size_t k) {
    const double p = grid.point(k);
    std::int64_t below = 0;
    for (Eigen::Index r = 0; r < X.rows(); ++r)
      below += y(j, X(r, static_cast<Eigen::Index>(j))) < p;
    return below;
  };
  return c;
}

std::optional<PartialCounts> kept_counts(const BandedPass& pass, std::size_t j,
                                         const GridIndex& grid) {
  // Every point in [lo, hi]: A_k = #{x < lo} + the kept values with bin <= k.
  if (pass.kept.empty() || !(pass.lo[j] <= grid.front() && grid.back() <= pass.hi[j]))
    return std::nullopt;
  PartialCounts c;
  c.known.assign(grid.size(), 0);
  const double front = grid.front(), back = grid.back();
  // x in [front, back) iff key(x) - key(front) < key(back) - key(front) as unsigned integers
  // (key orders the doubles as they compare, -0 made +0): one comparison, rarely true (most
  // values lie outside the narrow grid, on either side), so its branch is foreseen.
  auto key = [](double v) {
    const auto b = std::bit_cast<std::uint64_t>(v + 0.0);
    return b ^ (static_cast<std::uint64_t>(static_cast<std::int64_t>(b) >> 63) |
                (std::uint64_t{1} << 63));
  };
  const std::uint64_t first = key(front), span = key(back) - first;
  std::int64_t below = pass.below[j];
  for (double x : pass.kept[j]) {
    below += x < front;
    if (key(x) - first < span) ++c.known[grid.bin(x)];  // bin(x) in [1, size - 1]
  }
  for (std::int64_t& a : c.known) a = below += a;
  return c;
}

std::vector<std::size_t> banded_cells(
    const ConstMatrixRef& X, std::span<const GridIndex* const> grids, BandTransform y,
    const std::function<std::optional<PartialCounts>(std::size_t)>& counts, double q,
    double epsilon, ColumnGenerators& gens, int threads) {
  const std::size_t d = grids.size();
  std::vector<std::size_t> cells(d);
  std::vector<char> decided(d, 0);
  std::optional<ColumnBins> full;  // every column's full pass, made when a column needs it
  auto from_full = [&](std::size_t j) {
    if (!full) full = column_bins(X, grids, y, threads);
    std::vector<const std::uint32_t*> parts;
    for (const BinBuffer& b : full->parts)
      if (b) parts.push_back(b.get() + full->offset[j]);
    return select_cell_bins(parts, grids[j]->size(), X.rows(), q, epsilon, gens[j]);
  };
  auto from_bands = [&](std::size_t j) {
    const auto c = counts(j);
    if (!c) return false;
    const auto cell = select_cell_partial(*c, grids[j]->size(), X.rows(), q, epsilon, gens[j]);
    if (cell) cells[j] = *cell;
    return cell.has_value();
  };
  if (gens.split()) {  // independent generators: the columns in parallel, then the rest
    parallel_tasks(d, threads, [&](std::size_t j) { decided[j] = from_bands(j); });
    for (std::size_t j = 0; j < d; ++j)
      if (!decided[j]) cells[j] = from_full(j);
  } else {  // one generator: the columns in order
    for (std::size_t j = 0; j < d; ++j)
      if (!from_bands(j)) cells[j] = from_full(j);
  }
  return cells;
}

}  // namespace dpstats::scale_detail
