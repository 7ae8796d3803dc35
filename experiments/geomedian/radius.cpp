// geomedian-radius: KLTY Fig. 1a/1b and Table 1 (docs/results/geometric-median.md):
// FastRadius (Alg. 2), its permutation design, and HSU24 RadiusFinder (β = 0.05) on
// GaussianCluster(R, 1000, 10, 0.1, 0.9) for R in {0.5, ..., 10} and HeavyTailed(ν, 1000, 10)
// with R = 100, ε = 1, δ = 1e-5, r_min ~ U[0.005, 0.02] per trial; plus the time ratio against n.
#include <fmt/format.h>

#include <fstream>
#include <functional>

#include "dpstats/data/gaussian_cluster.hpp"
#include "dpstats/median/radius.hpp"
#include "dpstats/median/weiszfeld.hpp"
#include "common.hpp"
#include "../repro.hpp"

namespace dpstats::repro::geomedian {
namespace {

using Search = std::function<double(const RowMatrix&, double, double, Rng&)>;

struct Method {
  const char* name;
  Search run;
};

std::vector<Method> methods() {
  return {{"fast_radius",
           [](const RowMatrix& X, double r, double R, Rng& g) {
             return fast_radius(X, r, R, 1, 1e-5, g).r_hat;
           }},
          {"fast_radius_permuted",
           [](const RowMatrix& X, double r, double R, Rng& g) {
             return fast_radius_permuted(X, r, R, 1, g).r_hat;
           }},
          {"radius_finder", [](const RowMatrix& X, double r, double R, Rng& g) {
             return radius_finder(X, r, R, 1, 0.05, g).r_hat;
           }}};
}

struct Cell {
  Stats ratio, time;
  int in_1_4 = 0;       // r_hat / r_true in [1, 4] (the paper's r_true)
  int in_1_4_q = 0;     // r_hat / r^(0.75)(D; x*) in [1, 4] (the issue's target: the dataset's
                        // own 0.75-quantile radius around its Weiszfeld median)
};

// One setting: `trials` fresh datasets from `make`, every method on each.
std::vector<Cell> run_setting(const std::function<RowMatrix(Rng&)>& make, double R, double r_true,
                              int trials, Rng& rng, Progress& progress) {
  const auto ms = methods();
  std::vector<std::vector<double>> ratio(ms.size()), time(ms.size());
  std::vector<Cell> cells(ms.size());
  for (int t = 0; t < trials; ++t) {
    const RowMatrix X = make(rng);
    const double r_q = quantile_radius(X, weiszfeld(X).x, 0.75);
    const double r_min = 0.005 + 0.015 * rng.uniform01();
    for (std::size_t m = 0; m < ms.size(); ++m) {
      const auto t0 = std::chrono::steady_clock::now();
      const double r_hat = ms[m].run(X, r_min, R, rng);
      time[m].push_back(seconds_since(t0));
      ratio[m].push_back(r_hat / r_true);
      cells[m].in_1_4 += r_hat / r_true >= 1 && r_hat / r_true <= 4;
      cells[m].in_1_4_q += r_hat / r_q >= 1 && r_hat / r_q <= 4;
    }
    progress.step();
  }
  for (std::size_t m = 0; m < ms.size(); ++m) {
    cells[m].ratio = stats(ratio[m]);
    cells[m].time = stats(time[m]);
  }
  return cells;
}

std::vector<std::string> ratio_columns(const char* x) {
  std::vector<std::string> c{x};
  for (const auto& m : methods()) {
    c.push_back(m.name);
    c.push_back(std::string(m.name) + "_se");
  }
  for (const auto& m : methods()) c.push_back(std::string(m.name) + "_sd");
  for (const auto& m : methods()) c.push_back(std::string(m.name) + "_in_1_4");
  for (const auto& m : methods()) c.push_back(std::string(m.name) + "_in_1_4_q75");
  for (const auto& m : methods()) c.push_back(std::string(m.name) + "_seconds");
  return c;
}

std::vector<double> ratio_row(double x, const std::vector<Cell>& cells, int trials) {
  std::vector<double> row{x};
  for (const auto& c : cells) {
    row.push_back(c.ratio.mean);
    row.push_back(c.ratio.se);
  }
  for (const auto& c : cells) row.push_back(c.ratio.sd);
  for (const auto& c : cells) row.push_back(static_cast<double>(c.in_1_4) / trials);
  for (const auto& c : cells) row.push_back(static_cast<double>(c.in_1_4_q) / trials);
  for (const auto& c : cells) row.push_back(c.time.mean);
  return row;
}

void run(const ReproOptions& o) {
  const int trials = o.quick ? 20 : 100;
  SeededRng rng(o.seed.value_or(20240601));
  std::ofstream md(o.out / "summary.md");
  md << "# geomedian-radius: KLTY Fig. 1 and Table 1\n\n"
     << fmt::format("{} trials per setting (paper: 100), n = 1000, d = 10, eps = 1, delta = 1e-5, "
                    "r_min ~ U[0.005, 0.02]; single thread; seeded.\n\n",
                    trials);
  const std::vector<double> Rs{0.5, 1, 2, 4, 8, 10};
  const std::vector<double> nus{2, 4, 6, 8, 10, 12, 14, 16, 18, 20};
  std::vector<std::vector<double>> time_a(3), time_b(3);
  auto table_line = [&](double x, const std::vector<Cell>& cells) {
    md << fmt::format("| {} |", x);
    for (const auto& c : cells)
      md << fmt::format(" {:.2f} ± {:.2f} ({}, {}) |", c.ratio.mean, c.ratio.sd, c.in_1_4,
                        c.in_1_4_q);
    md << "\n";
  };
  {
    Progress p("Fig. 1a (R)", Rs.size() * trials);
    CsvTable csv(ratio_columns("R"));
    md << fmt::format("## Fig. 1a: GaussianCluster, ratio r_hat / r_true (r_true = sigma sqrt(d)), mean ± sd "
          "(in parentheses: trials of {} with r_hat / r_true in [1, 4], and with r_hat / r^(0.75)(D; x*) in "
          "[1, 4])\n\n| R | FastRadius | FastRadius (perm.) | RadiusFinder |\n|---|---|---|---|\n", trials);
    for (double R : Rs) {
      const auto cells = run_setting(
          [R](Rng& g) { return gaussian_cluster(R, 1000, 10, 0.1, 0.9, g); }, R,
          0.1 * std::sqrt(10.0), trials, rng, p);
      csv.add_row(ratio_row(R, cells, trials));
      table_line(R, cells);
      for (int m = 0; m < 3; ++m) time_a[m].push_back(cells[m].time.mean);
    }
    const auto path = csv.write(o.out, "fig1a.csv");
    plot({path, o.out / "fig1a.png", "Fig. 1a: radius ratio, GaussianCluster", "R", "R",
          "r_hat / r_true", {"fast_radius", "fast_radius_permuted", "radius_finder"}, "", true});
  }
  {
    Progress p("Fig. 1b (nu)", nus.size() * trials);
    CsvTable csv(ratio_columns("nu"));
    md << "\n## Fig. 1b: HeavyTailed (R = 100), ratio r_hat / r_true (r_true = sqrt(d F^-1(0.75)))\n\n"
          "| nu | FastRadius | FastRadius (perm.) | RadiusFinder |\n|---|---|---|---|\n";
    for (double nu : nus) {
      const double r_true = std::sqrt(10 * fisher_f_quantile(0.75, 10, nu));
      const auto cells = run_setting([nu](Rng& g) { return heavy_tailed(nu, 1000, 10, g); }, 100,
                                     r_true, trials, rng, p);
      csv.add_row(ratio_row(nu, cells, trials));
      table_line(nu, cells);
      for (int m = 0; m < 3; ++m) time_b[m].push_back(cells[m].time.mean);
    }
    const auto path = csv.write(o.out, "fig1b.csv");
    plot({path, o.out / "fig1b.png", "Fig. 1b: radius ratio, HeavyTailed", "nu", "nu",
          "r_hat / r_true", {"fast_radius", "fast_radius_permuted", "radius_finder"}});
  }
  {
    CsvTable csv({"experiment", "radius_finder_s", "fast_radius_s", "fast_radius_permuted_s"});
    md << "\n## Table 1: mean wall-clock per call (s)\n\n| experiment | RadiusFinder | FastRadius | "
          "FastRadius (perm.) | paper RadiusFinder | paper FastRadius |\n|---|---|---|---|---|---|\n";
    const auto a = std::vector<double>{stats(time_a[2]).mean, stats(time_a[0]).mean, stats(time_a[1]).mean};
    const auto b = std::vector<double>{stats(time_b[2]).mean, stats(time_b[0]).mean, stats(time_b[1]).mean};
    csv.add_row({1, a[0], a[1], a[2]});
    csv.add_row({2, b[0], b[1], b[2]});
    csv.write(o.out, "table1.csv");
    md << fmt::format("| varying R (Fig. 1a) | {:.4g} | {:.4g} | {:.4g} | 1.192 ± 0.047 | 0.0411 ± 0.002 |\n", a[0], a[1], a[2]);
    md << fmt::format("| varying nu (Fig. 1b) | {:.4g} | {:.4g} | {:.4g} | 1.204 ± 0.171 | 0.0413 ± 0.007 |\n", b[0], b[1], b[2]);
  }
  {
    // Time against n (GaussianCluster R = 4, d = 10), all three in the same run.
    const std::vector<std::int64_t> ns = o.quick ? std::vector<std::int64_t>{1000, 2000, 4000, 10000}
                                                 : std::vector<std::int64_t>{1000, 2000, 4000, 10000, 20000};
    Progress p("time vs n", ns.size());
    CsvTable csv({"n", "radius_finder_s", "fast_radius_s", "fast_radius_permuted_s",
                  "speedup_fast_radius", "speedup_permuted"});
    md << "\n## Time against n (GaussianCluster R = 4, d = 10, one call each, same run)\n\n"
          "| n | RadiusFinder (s) | FastRadius (s) | perm. (s) | RF / FastRadius | RF / perm. |\n"
          "|---|---|---|---|---|---|\n";
    for (auto n : ns) {
      const RowMatrix X = gaussian_cluster(4, n, 10, 0.1, 0.9, rng);
      const int reps = n <= 4000 ? 5 : 1;
      double t[3] = {0, 0, 0};
      for (int rep = 0; rep < reps; ++rep) {
        const auto ms = methods();
        for (int m = 0; m < 3; ++m) {
          const auto t0 = std::chrono::steady_clock::now();
          ms[m].run(X, 0.01, 4, rng);
          t[m] += seconds_since(t0) / reps;
        }
      }
      csv.add_row({static_cast<double>(n), t[2], t[0], t[1], t[2] / t[0], t[2] / t[1]});
      md << fmt::format("| {} | {:.4g} | {:.4g} | {:.4g} | {:.1f}x | {:.0f}x |\n", n, t[2], t[0],
                        t[1], t[2] / t[0], t[2] / t[1]);
      p.step();
    }
    const auto path = csv.write(o.out, "time_vs_n.csv");
    plot({path, o.out / "time_vs_n.png", "radius search time", "n", "n", "seconds",
          {"radius_finder_s", "fast_radius_s", "fast_radius_permuted_s"}, "", true, true});
  }
}

}  // namespace

DPSTATS_EXPERIMENT("geomedian-radius",
                   "KLTY Fig. 1a/1b and Table 1: FastRadius vs RadiusFinder (ratio and time)", run);

}  // namespace dpstats::repro::geomedian
