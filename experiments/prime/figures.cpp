// PRIME Fig. 1 (three panels) and Fig. 2 (docs/proofs/mean.md). Data: (1 − α)N(0, I) + αN(1.5·1, I)
// (oblivious, exactly ⌊αn⌋ shifted rows); metric ‖μ̂‖₂. Methods: PRIME practical (k = 2αn and
// 1.25αn), PRIME paper profile, DP Mean, the non-private filter (Alg 4) and the empirical mean.
// The practical profile runs without its DP-Mean fallback here so that its own curve shows.
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "common.hpp"

namespace dpstats::prime_repro {
namespace {

const char* kMethods[] = {"prime", "prime_k125", "prime_paper", "dp_mean", "filter", "empirical"};
constexpr int kM = 6;

struct Point {
  std::vector<double> err[kM];
};

Point run_point(std::int64_t n, std::int64_t d, double alpha, double eps, int runs,
                std::uint64_t seed, int threads) {
  Point pt;
  const Methods m{eps, 0.01, alpha, threads};
  for (int r = 0; r < runs; ++r) {
    SeededRng g(seed * 1000003 + r);
    const RowMatrix X = shifted_cluster(n, d, alpha, 1.5, g);
    pt.err[0].push_back(m.prime(X, g, Profile::practical, 2.0));
    pt.err[1].push_back(m.prime(X, g, Profile::practical, 1.25));
    pt.err[2].push_back(m.prime(X, g, Profile::paper, 2.0));
    pt.err[3].push_back(m.dp_mean(X, g));
    pt.err[4].push_back(m.filter(X, g));
    pt.err[5].push_back(Methods::empirical(X));
  }
  return pt;
}

std::vector<std::string> columns(const std::string& x) {
  std::vector<std::string> c = {x};
  for (auto* m : kMethods) {
    c.push_back(m);
    c.push_back(std::string(m) + "_se");
  }
  c.push_back("paper_abstained");
  return c;
}

void add(repro::CsvTable& t, std::ostringstream& md, double x, const Point& pt) {
  std::vector<double> row = {x};
  md << "| " << x;
  int abst = 0;
  for (int k = 0; k < kM; ++k) {
    int a = 0;
    const MeanSe s = finite_mean_se(pt.err[k], &a);
    if (k == 2) abst = a;
    row.push_back(s.mean);
    row.push_back(s.se);
    md << fmt::format(" | {:.4f} ± {:.4f}", s.mean, s.se);
  }
  row.push_back(abst);
  md << " | " << abst << " |\n";
  t.add_row(row);
}

std::string header(const std::string& x) {
  std::string h = "| " + x;
  for (auto* m : kMethods) h += std::string(" | ") + m;
  h += " | paper abstained |\n|---";
  for (int k = 0; k <= kM; ++k) h += "|---";
  return h + "|\n";
}

void panel_plot(const repro::ReproOptions& o, const std::filesystem::path& csv,
                const std::string& png, const std::string& title, const std::string& x,
                const std::string& xlabel, bool logx) {
  repro::plot({.csv = csv, .png = o.out / png, .title = title, .x = x, .xlabel = xlabel,
               .ylabel = "l2 error", .y = {"prime", "prime_k125", "prime_paper", "dp_mean",
                                           "filter", "empirical"},
               .logx = logx, .logy = true});
}

void run_fig1(const repro::ReproOptions& o) {
  // Quick: n = 5·10⁴ keeps the three panels near 20 s of CPU (under 2 minutes on a loaded
  // 2-core machine); paper size n = 10⁶, 50 runs.
  const std::int64_t n = o.quick ? 50000 : 1000000;
  const int runs = o.quick ? 2 : 50;
  const std::vector<std::int64_t> ds =
      o.quick ? std::vector<std::int64_t>{1, 10, 20, 50}
              : std::vector<std::int64_t>{1, 10, 20, 30, 40, 50, 75, 100};
  const std::vector<double> epss =
      o.quick ? std::vector<double>{0.01, 0.1, 1, 10, 100}
              : std::vector<double>{0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30, 100};
  const std::uint64_t seed = o.seed.value_or(1);
  std::ostringstream md;
  md << "# PRIME Fig. 1 (" << (o.quick ? "quick" : "paper size") << ")\n\n"
     << fmt::format("n = {}, δ = 0.01, {} runs per point (mean ± s.e. of the l2 error; the paper "
                    "used 50). Seeded: data and noise from seed {}. PRIME practical runs without "
                    "its DP-Mean fallback. 'paper abstained' counts runs of the paper profile that "
                    "returned no estimate (excluded from its mean).\n\n",
                    n, runs, seed);
  repro::Progress progress("prime-fig1", ds.size() * 2 + epss.size());
  struct Panel {
    const char* file;
    double alpha;
  };
  for (auto [file, alpha] : {Panel{"fig1_left.csv", 0.05}, Panel{"fig1_middle.csv", 0.001}}) {
    repro::CsvTable t(columns("d"));
    md << fmt::format("## {} — α = {}, ε = 20, against d\n\n", file, alpha) << header("d");
    for (auto d : ds) {
      add(t, md, static_cast<double>(d), run_point(n, d, alpha, 20, runs, seed + d, o.threads));
      progress.step();
    }
    md << "\n";
    const auto csv = t.write(o.out, file);
    panel_plot(o, csv, std::string(file).substr(0, std::string(file).size() - 4) + ".png",
               fmt::format("PRIME Fig 1: alpha = {}, eps = 20, n = {}", alpha, n), "d", "d",
               false);
  }
  repro::CsvTable t(columns("epsilon"));
  md << "## fig1_right.csv — α = 0.1, d = 10, against ε\n\n" << header("ε");
  for (double e : epss) {
    add(t, md, e, run_point(n, 10, 0.1, e, runs, seed + 777, o.threads));
    progress.step();
  }
  const auto csv = t.write(o.out, "fig1_right.csv");
  panel_plot(o, csv, "fig1_right.png", fmt::format("PRIME Fig 1: alpha = 0.1, d = 10, n = {}", n),
             "epsilon", "epsilon", true);
  // Feasibility prediction next to the ε curve (public parameters only).
  md << "\nFeasibility check (practical, public parameters only) at d = 10, α = 0.1:\n\n"
     << "| ε | Σ-noise norm | stop threshold | feasible |\n|---|---|---|---|\n";
  for (double e : epss) {
    PrimeOptions po;
    po.scale = std::vector<double>{1.0};
    po.clip_check_share = 0;
    po.privacy.epsilon = e;
    po.privacy.delta = 0.01;
    po.alpha = 0.1;
    const auto f = prime_feasibility(n, 10, po);
    md << fmt::format("| {} | {:.3g} | {:.3g} | {} |\n", e, f.sigma_noise_norm, f.stop_threshold,
                      f.feasible ? "yes" : "no");
  }
  std::ofstream(o.out / "summary.md") << md.str();
}

void run_fig2(const repro::ReproOptions& o) {
  const std::int64_t d = 50;
  const int runs = o.quick ? 3 : 50;
  const std::vector<std::int64_t> ns =
      o.quick ? std::vector<std::int64_t>{2000, 5000, 10000, 20000, 50000}
              : std::vector<std::int64_t>{1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000,
                                          500000, 1000000};
  const std::uint64_t seed = o.seed.value_or(2);
  std::ostringstream md;
  md << "# PRIME Fig. 2 (" << (o.quick ? "quick" : "paper size") << ")\n\n"
     << fmt::format("α = 0.1, ε = 100, δ = 0.01, d = 50; {} runs per point (mean ± s.e.; the "
                    "paper used 50). Seed {}. PRIME practical without fallback; "
                    "'prime_fallback' is the default (falls back to DP Mean when the public "
                    "feasibility check predicts a noise-dominated filter).\n\n",
                    runs, seed)
     << "| n | prime | prime (default, with fallback) | fallback used | dp_mean | filter | "
        "empirical |\n|---|---|---|---|---|---|---|\n";
  repro::CsvTable t({"n", "prime", "prime_se", "prime_fallback", "prime_fallback_se", "dp_mean",
                     "dp_mean_se", "filter", "filter_se", "empirical", "empirical_se"});
  repro::Progress progress("prime-fig2", ns.size());
  const Methods m{100, 0.01, 0.1, o.threads};
  for (auto n : ns) {
    std::vector<double> e[5];
    int fallbacks = 0;
    for (int r = 0; r < runs; ++r) {
      SeededRng g(seed * 1000003 + n * 31 + r);
      const RowMatrix X = shifted_cluster(n, d, 0.1, 1.5, g);
      e[0].push_back(m.prime(X, g, Profile::practical, 2.0, false));
      std::string note;
      e[1].push_back(m.prime(X, g, Profile::practical, 2.0, true, false, &note));
      fallbacks += note == "dp-mean";
      e[2].push_back(m.dp_mean(X, g));
      e[3].push_back(m.filter(X, g));
      e[4].push_back(Methods::empirical(X));
    }
    std::vector<double> row = {static_cast<double>(n)};
    md << "| " << n;
    for (int k = 0; k < 5; ++k) {
      const MeanSe s = finite_mean_se(e[k]);
      row.push_back(s.mean);
      row.push_back(s.se);
      md << fmt::format(" | {:.4f} ± {:.4f}", s.mean, s.se);
      if (k == 1) md << " | " << fallbacks << "/" << runs;
    }
    md << " |\n";
    t.add_row(row);
    progress.step();
  }
  const auto csv = t.write(o.out, "fig2.csv");
  repro::plot({.csv = csv, .png = o.out / "fig2.png",
               .title = "PRIME Fig 2: alpha = 0.1, eps = 100, d = 50", .x = "n", .xlabel = "n",
               .ylabel = "l2 error",
               .y = {"prime", "prime_fallback", "dp_mean", "filter", "empirical"},
               .logx = true, .logy = true});
  std::ofstream(o.out / "summary.md") << md.str();
}

}  // namespace

DPSTATS_EXPERIMENT("prime-fig1",
                   "PRIME Fig. 1: error against d (alpha = 0.05 and 0.001) and against epsilon",
                   run_fig1);
DPSTATS_EXPERIMENT("prime-fig2", "PRIME Fig. 2: error against n (alpha = 0.1, eps = 100, d = 50)",
                   run_fig2);

}  // namespace dpstats::prime_repro
