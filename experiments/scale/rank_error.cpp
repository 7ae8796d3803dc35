// scale-rank-error: the scale layer's per-column bounds before and after issue 27 on the columns
// users have -- 3000 ratings 1..10, a zero-inflated money column, a heavy right tail, values near
// 1e9 -- at epsilon 0.1, 0.15, 0.3, 1, 3 (the bounds' own share). "Before": private_scale (median and
// MAD on the log grid, bounds = median -/+ 4 robust scales); "after": private_clip_bounds
// (coverage 2%: a private median anchor, then AboveThreshold scans outwards). Per setting, over
// seeded runs: the realised rank error (rows between a released value and its target quantile:
// the median for before, the 1% and 99% quantiles for after), the rows outside the bounds, and
// the error of a clipped Laplace mean at total epsilon 2x (half for the bounds, half for the mean,
// as the sketch: AboveThreshold at a quarter of epsilon per side, 0.014 median and 0.058
// worst on the ratings at total 0.3).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/random/float_normal.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/clip_bounds.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/seam.hpp"
#include "../repro.hpp"

namespace dpstats::repro::scale {
namespace {

struct Column {
  const char* name;
  std::vector<double> x;
};

std::vector<Column> columns(bool quick, Rng& g) {
  std::vector<Column> c;
  const auto make = [&](const char* name, std::int64_t n, auto draw) {
    Column col{name, {}};
    for (std::int64_t i = 0; i < n; ++i) col.x.push_back(draw());
    c.push_back(std::move(col));
  };
  make("ratings 1-10, sd 1.2, n=3000", 3000,
       [&] { return std::clamp(std::round(6.5 + 1.2 * standard_normal(g)), 1.0, 10.0); });
  make("zero-inflated money (98% zeros), n=10000", 10000, [&] {
    return g.uniform01() < 0.02 ? std::exp(9 + 2 * standard_normal(g)) : 0.0;
  });
  make(quick ? "log-normal tail, n=20000" : "log-normal tail, n=200000", quick ? 20000 : 200000,
       [&] { return std::exp(standard_normal(g)); });
  make("1e9 + N(0, 1000^2), n=3000", 3000, [&] { return 1e9 + 1000 * standard_normal(g); });
  return c;
}

double rank_of(const std::vector<double>& sorted, double v) {  // #{x < v}
  return static_cast<double>(std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin());
}
double above(const std::vector<double>& sorted, double v) {  // #{x > v}
  return static_cast<double>(sorted.end() - std::upper_bound(sorted.begin(), sorted.end(), v));
}
// The rank error of v for `target` rows below it: its distance to [#{x < v}, #{x <= v}] (a value
// on a mass point of a discrete column has every rank in between), as the cell score of §1.
double rank_error(const std::vector<double>& sorted, double v, double target) {
  const double lo = rank_of(sorted, v), hi = static_cast<double>(sorted.size()) - above(sorted, v);
  return std::max({lo - target, target - hi, 0.0});
}

struct Summary {
  std::vector<double> rank, outside, mean_error;
  int usable = 0;
};

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}
double worst(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

// The clipped Laplace mean at epsilon_mean of x clipped to [lo, hi], against the true mean.
double mean_error(const std::vector<double>& x, double lo, double hi, double epsilon, Rng& rng) {
  double s = 0, truth = 0;
  for (double v : x) s += std::clamp(v, lo, hi), truth += v;
  const double n = static_cast<double>(x.size()), width = hi - lo;
  if (!(width < 1e200)) return std::numeric_limits<double>::infinity();
  if (!(width > 1e-290)) return std::fabs(s / n - truth / n);  // no room for noise: all clipped
  const LaplaceMechanism noise(width / n, epsilon);
  return std::fabs(noise.apply(s / n, rng) - truth / n);
}

void one_setting(const Column& col, double epsilon, int runs, Rng& rng, Summary& before,
                 Summary& after) {
  std::vector<double> sorted = col.x;
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(sorted.size());
  const Eigen::Map<const RowMatrix> X(col.x.data(), static_cast<Eigen::Index>(col.x.size()), 1);
  for (int r = 0; r < runs; ++r) {
    ScaleOptions so;
    so.loss = PrivacyLoss::pure(epsilon);
    ReleaseBudget a(so.loss, Accountant::basic);
    const ColumnScale old = private_scale(X, so, a, rng).columns[0];
    before.rank.push_back(rank_error(sorted, old.location, n / 2));
    before.outside.push_back(rank_of(sorted, old.lo) + above(sorted, old.hi));
    before.usable += old.status == ScaleStatus::ok;
    before.mean_error.push_back(mean_error(col.x, old.lo, old.hi, epsilon, rng));
    ClipBoundsOptions co;
    co.loss = PrivacyLoss::pure(epsilon);
    co.coverage = 0.02;
    ReleaseBudget b(co.loss, Accountant::basic);
    const ClipBounds cb = private_clip_bounds(X, co, b, rng);
    const ColumnClipBounds& c = cb.columns[0];
    const double low = rank_of(sorted, c.lo), high = above(sorted, c.hi), target = 0.01 * n;
    after.rank.push_back(std::max(rank_error(sorted, c.lo, target),
                                  rank_error(sorted, c.hi, n - target)));
    after.outside.push_back(low + high);
    after.usable += reliability(cb, "").usable;
    after.mean_error.push_back(mean_error(col.x, c.lo, c.hi, epsilon, rng));
  }
}

void run(const ReproOptions& o) {
  SeededRng rng(o.seed.value_or(20270127));
  const int runs = o.quick ? 6 : 20;
  std::ofstream md(o.out / "summary.md");
  CsvTable csv({"column", "epsilon", "after", "rank_median", "rank_worst", "outside_median",
                "mean_error_median", "mean_error_worst", "usable"});
  md << fmt::format(
      "| column | epsilon (bounds) | estimator | rank error, median / worst (rows) | rows outside "
      "the bounds, median | usable | clipped mean error at total 2 epsilon, median / worst |\n"
      "|---|---|---|---|---|---|---|\n");
  const std::vector<Column> cols = columns(o.quick, rng);
  for (std::size_t c = 0; c < cols.size(); ++c) {
    for (double epsilon : {0.1, 0.15, 0.3, 1.0, 3.0}) {
      Summary before, after;
      one_setting(cols[c], epsilon, runs, rng, before, after);
      for (int k = 0; k < 2; ++k) {
        const Summary& s = k == 0 ? before : after;
        md << fmt::format("| {} | {} | {} | {:.0f} / {:.0f} | {:.0f} | {}/{} | {:.3g} / {:.3g} |\n",
                          cols[c].name, epsilon,
                          k == 0 ? "before: median -/+ 4 MAD scales" : "after: clip bounds 2%",
                          median(s.rank), worst(s.rank), median(s.outside), s.usable, runs,
                          median(s.mean_error), worst(s.mean_error));
        csv.add_row({static_cast<double>(c), epsilon, static_cast<double>(k), median(s.rank),
                     worst(s.rank), median(s.outside), median(s.mean_error), worst(s.mean_error),
                     static_cast<double>(s.usable)});
      }
    }
  }
  csv.write(o.out, "rank_error.csv");
}

}  // namespace

DPSTATS_EXPERIMENT("scale-rank-error",
                   "The scale layer's bounds before and after issue 27: rank error per epsilon, "
                   "rows outside, clipped-mean error (ratings, zero-inflated, heavy tail, 1e9)",
                   run);

}  // namespace dpstats::repro::scale
