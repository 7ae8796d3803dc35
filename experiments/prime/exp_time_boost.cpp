// prime-tukey-boost (issue 19): the private Tukey median's feasibility frontier (PRIME Alg. 14, d = 1
// and the d = 2 grid; CPU seconds of one release against n) and boosting (Remark 1): PRIME and
// PRIME boosted to 1 − ζ on the same data, the error distribution over seeds.
//  * Tukey: N(0, I_d) with 5% of the rows shifted by +6 in every coordinate, box [−4, 4]^d, ε = 2.
//  * Boosting: N(0, I_5) with 5% shifted by +4 (the A1 shift), α = 0.05, (ε, δ) = (10, 0.01),
//    scale 1 given; prime on all n rows vs prime-boosted (ζ = 0.05: 9 parts of n/9 rows).
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <fstream>

#include "../repro.hpp"
#include "dpstats/mean/methods.hpp"
#include "dpstats/mean/tukey_median.hpp"
#include "dpstats/random/float_normal.hpp"

namespace dpstats::repro::prime_boost {
namespace {

double cpu_now() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

RowMatrix shifted_gaussian(std::int64_t n, std::int64_t d, double shift, Rng& rng) {
  RowMatrix X(n, d);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < d; ++j)
      X(i, j) = standard_normal(rng) + (i < n / 20 ? shift : 0.0);
  return X;
}

void tukey_frontier(const ReproOptions& o, std::ofstream& md, CsvTable& csv, Rng& rng) {
  md << "## Private Tukey median: CPU seconds of one release (single thread)\n\n"
        "| d | grid | n | seconds | error |\n|---|---|---|---|---|\n";
  struct Cell { int d, grid; std::int64_t n; };
  std::vector<Cell> cells = {{1, 4097, 1000}, {1, 4097, 100000}, {2, 65, 1000}, {2, 65, 10000},
                             {2, 129, 1000}, {2, 129, 3000}};
  if (!o.quick) cells.insert(cells.end(), {{1, 4097, 1000000}, {2, 65, 30000}, {2, 129, 10000}});
  for (const Cell& c : cells) {
    const RowMatrix X = shifted_gaussian(c.n, c.d, 6, rng);
    TukeyMedianOptions to;
    to.privacy = {2, 0};
    to.bounds = {-4, 4};
    to.grid = c.grid;
    const double t0 = cpu_now();
    const auto r = tukey_median(X, to, rng);
    const double s = cpu_now() - t0;
    csv.add_row({static_cast<double>(c.d), static_cast<double>(c.grid), static_cast<double>(c.n),
                 s, r.estimate.norm()});
    md << fmt::format("| {} | {} | {} | {:.2f} | {:.3f} |\n", c.d, c.grid, c.n, s, r.estimate.norm());
  }
}

void boosting(const ReproOptions& o, std::ofstream& md, Rng& rng) {
  const std::int64_t n = o.quick ? 36000 : 90000, d = 5;
  const int seeds = o.quick ? 10 : 30;
  CsvTable csv({"method", "seed", "error", "seconds"});
  std::vector<double> err[2];
  for (int s = 0; s < seeds; ++s) {
    const RowMatrix X = shifted_gaussian(n, d, 4, rng);
    for (int m = 0; m < 2; ++m) {
      MeanRequest r;
      r.method = m == 0 ? "prime" : "prime-boosted";
      r.privacy = {10, 0.01};
      r.alpha = 0.05;
      r.scale = std::vector<double>{1};
      const double t0 = cpu_now();
      const auto out = run_mean(X, r, rng);
      const double e = out.status == Status::ok ? out.estimate.norm() : INFINITY;
      csv.add_row({static_cast<double>(m), static_cast<double>(s), e, cpu_now() - t0});
      err[m].push_back(e);
    }
  }
  md << fmt::format("\n## Boosting: PRIME vs prime-boosted (zeta = 0.05, 9 parts), n = {}, d = 5, "
                    "{} seeds\n\n| method | median error | 90% quantile | max |\n|---|---|---|---|\n",
                    n, seeds);
  for (int m = 0; m < 2; ++m) {
    auto v = err[m];
    std::sort(v.begin(), v.end());
    md << fmt::format("| {} | {:.4f} | {:.4f} | {:.4f} |\n", m == 0 ? "prime" : "prime-boosted",
                      v[v.size() / 2], v[v.size() * 9 / 10], v.back());
  }
  csv.write(o.out, "boosting.csv");
}

void run(const ReproOptions& o) {
  SeededRng rng(o.seed.value_or(20261128));
  std::ofstream md(o.out / "summary.md");
  md << "# prime-tukey-boost: the private Tukey median's frontier and boosting\n\n";
  CsvTable csv({"d", "grid", "n", "seconds", "error"});
  tukey_frontier(o, md, csv, rng);
  csv.write(o.out, "tukey.csv");
  boosting(o, md, rng);
}

}  // namespace

DPSTATS_EXPERIMENT("prime-tukey-boost",
                   "PRIME's exponential-time Tukey median (d = 1, 2) frontier and boosting to "
                   "1 - zeta (Remark 1) against plain PRIME",
                   run);

}  // namespace dpstats::repro::prime_boost
