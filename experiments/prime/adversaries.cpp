// PRIME beyond the paper's oblivious attack (docs/proofs/mean.md) and the issue-3 target table
// (the addendum's settings: α = 0.05, ε = 10, δ = 0.01).
//  * prime-adversaries: nine corruption models × methods (incl. the private filter and PRIME-ht).
//  * prime-targets: shift and same-norm attacks at n ∈ {2e5, 1e6}, d ∈ {10, 20, 50}: PRIME
//    (k = 2αn and 1.25αn), the same run with the noise switched off, DP Mean, times; and the
//    smallest n on a grid where PRIME <= DP Mean / 2.
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "common.hpp"

namespace dpstats::prime_repro {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void run_adversaries(const repro::ReproOptions& o) {
  const std::int64_t n = o.quick ? 50000 : 200000, d = 20;
  const int runs = o.quick ? 2 : 5;
  const double alpha = 0.05;
  const std::uint64_t seed = o.seed.value_or(3);
  const Attack attacks[] = {Attack::shift,       Attack::same_norm,   Attack::point_mass,
                            Attack::far,         Attack::multi_dir,   Attack::cov_matched,
                            Attack::subtractive, Attack::duplicates,  Attack::heavy};
  const Methods m{10, 0.01, alpha, o.threads};
  repro::CsvTable t({"attack", "prime", "prime_se", "prime_k125", "prime_k125_se",
                     "prime_noiseless", "prime_noiseless_se", "dp_mean", "dp_mean_se", "filter",
                     "filter_se", "empirical", "empirical_se", "private_filter",
                     "private_filter_se", "prime_ht", "prime_ht_se"});
  std::ostringstream md;
  md << "# PRIME and its family against nine adversaries (" << (o.quick ? "quick" : "full") << ")\n\n"
     << fmt::format("n = {}, d = {}, α = {}, ε = 10, δ = 0.01; {} runs (mean ± s.e. of the l2 "
                    "error, true mean 0). Seed {}. PRIME = practical profile (no fallback), "
                    "k = 2αn unless marked.\n\n",
                    n, d, alpha, runs, seed)
     << "| attack | PRIME | PRIME k=1.25αn | PRIME noiseless | DP Mean | filter (non-private) "
        "| empirical | private filter | PRIME-ht |\n|---|---|---|---|---|---|---|---|---|\n";
  repro::Progress progress("prime-adversaries", std::size(attacks));
  int code = 0;
  for (Attack a : attacks) {
    std::vector<double> e[8];
    for (int r = 0; r < runs; ++r) {
      SeededRng g(seed * 7919 + code * 101 + r);
      const RowMatrix X = attack_data(a, n, d, alpha, g);
      SeededRng g1(r + 1), g2(r + 1);
      e[0].push_back(m.prime(X, g1, Profile::practical, 2.0));
      e[1].push_back(m.prime(X, g, Profile::practical, 1.25));
      e[2].push_back(m.prime(X, g2, Profile::practical, 2.0, false, true));
      e[3].push_back(m.dp_mean(X, g));
      e[4].push_back(m.filter(X, g));
      e[5].push_back(Methods::empirical(X));
      e[6].push_back(m.private_filter(X, g));
      e[7].push_back(m.prime_ht(X, g));
    }
    std::vector<double> row = {static_cast<double>(code)};
    md << "| " << name(a);
    for (auto& v : e) {
      const MeanSe s = finite_mean_se(v);
      row.push_back(s.mean);
      row.push_back(s.se);
      md << fmt::format(" | {:.4f} ± {:.4f}", s.mean, s.se);
    }
    md << " |\n";
    t.add_row(row);
    ++code;
    progress.step();
  }
  md << "\nAttack codes in adversaries.csv: 0 = A1 … 8 = A10 in the order of the table. Private "
        "filter and PRIME-ht: practical profile, defaults (filter T = min(200, 2d + 20)).\n";
  t.write(o.out, "adversaries.csv");
  std::ofstream(o.out / "summary.md") << md.str();
}

void run_targets(const repro::ReproOptions& o) {
  const double alpha = 0.05;
  const Methods m{10, 0.01, alpha, std::max(o.threads, 2)};
  const int runs = o.quick ? 1 : 5;
  const std::vector<std::int64_t> ns =
      o.quick ? std::vector<std::int64_t>{200000} : std::vector<std::int64_t>{200000, 1000000};
  const std::uint64_t seed = o.seed.value_or(4);
  std::ostringstream md;
  md << "# PRIME targets (issue 3; addendum settings α = 0.05, ε = 10, δ = 0.01)\n\n"
     << fmt::format("{} runs per cell (mean ± s.e.); seed {}; {} threads. 'noiseless' is the same "
                    "run (same Z, same range) with the filter's noise switched off (test hook). "
                    "Times are wall-clock for one PRIME call, data generation excluded.\n\n",
                    runs, seed, m.threads)
     << "| attack | d | n | DP Mean | PRIME | PRIME noiseless | PRIME k=1.25αn | t PRIME (s) "
        "| t DP Mean (s) |\n|---|---|---|---|---|---|---|---|---|\n";
  repro::CsvTable t({"attack", "d", "n", "dp_mean", "prime", "prime_se", "prime_noiseless",
                     "prime_k125", "prime_k125_se", "t_prime", "t_dp_mean"});
  repro::Progress progress("prime-targets", 2 * 3 * ns.size() + 6);
  for (Attack a : {Attack::shift, Attack::same_norm})
    for (std::int64_t d : {10, 20, 50})
      for (auto n : ns) {
        std::vector<double> e[4];
        double tp = 0, td = 0;
        for (int r = 0; r < runs; ++r) {
          SeededRng g(seed * 131 + d * 7 + r + (a == Attack::shift ? 0 : 99991));
          const RowMatrix X = attack_data(a, n, d, alpha, g);
          auto t0 = std::chrono::steady_clock::now();
          e[0].push_back(m.dp_mean(X, g));
          td += seconds_since(t0);
          SeededRng g1(100 + r), g2(100 + r);
          t0 = std::chrono::steady_clock::now();
          e[1].push_back(m.prime(X, g1, Profile::practical, 2.0));
          tp += seconds_since(t0);
          e[2].push_back(m.prime(X, g2, Profile::practical, 2.0, false, true));
          e[3].push_back(m.prime(X, g, Profile::practical, 1.25));
        }
        const MeanSe dm = finite_mean_se(e[0]), p = finite_mean_se(e[1]),
                     q = finite_mean_se(e[2]), k = finite_mean_se(e[3]);
        md << fmt::format(
            "| {} | {} | {:.0e} | {:.3f} | {:.3f} ± {:.3f} | {:.3f} | {:.3f} ± {:.3f} | {:.2f} | "
            "{:.2f} |\n",
            name(a), d, static_cast<double>(n), dm.mean, p.mean, p.se, q.mean, k.mean, k.se,
            tp / runs, td / runs);
        t.add_row({a == Attack::shift ? 0.0 : 1.0, double(d), double(n), dm.mean, p.mean, p.se,
                   q.mean, k.mean, k.se, tp / runs, td / runs});
        progress.step();
      }
  t.write(o.out, "targets.csv");
  // Smallest n on a grid where PRIME (default, with fallback) <= DP Mean / 2.
  const std::vector<std::int64_t> grid = {2000, 5000, 10000, 20000, 50000, 100000};
  md << "\n## Smallest n with PRIME <= DP Mean / 2 (grid "
     << "2e3, 5e3, 1e4, 2e4, 5e4, 1e5; PRIME without fallback; " << (o.quick ? 1 : 3)
     << " runs, means)\n\n| attack | d | smallest n | PRIME / DP Mean at that n |\n|---|---|---|---|\n";
  for (Attack a : {Attack::shift, Attack::same_norm})
    for (std::int64_t d : {10, 20, 50}) {
      std::string found = "> 1e5";
      double ratio = 0;
      for (auto n : grid) {
        std::vector<double> pe, de;
        for (int r = 0; r < (o.quick ? 1 : 3); ++r) {
          SeededRng g(seed * 17 + n + d * 3 + r);
          const RowMatrix X = attack_data(a, n, d, alpha, g);
          pe.push_back(m.prime(X, g, Profile::practical, 2.0));
          de.push_back(m.dp_mean(X, g));
        }
        const double pm = finite_mean_se(pe).mean, dmm = finite_mean_se(de).mean;
        if (std::isfinite(pm) && pm <= dmm / 2) {
          found = fmt::format("{:.0e}", double(n));
          ratio = pm / dmm;
          break;
        }
      }
      md << fmt::format("| {} | {} | {} | {:.2f} |\n", name(a), d, found, ratio);
      progress.step();
    }
  std::ofstream(o.out / "summary.md") << md.str();
}

}  // namespace

DPSTATS_EXPERIMENT("prime-adversaries",
                   "PRIME against nine corruption models (docs/proofs/mean.md) next to DP Mean and the "
                   "non-private filter",
                   run_adversaries);
DPSTATS_EXPERIMENT("prime-targets",
                   "PRIME at the issue's target settings (alpha 0.05, eps 10): errors, noiseless "
                   "runs, times, 2x crossover",
                   run_targets);

}  // namespace dpstats::prime_repro
