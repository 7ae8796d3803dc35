// prime-seeds (issue 17): PRIME per seed at the paper's setting (n = 10^6, ε = 10, δ = 0.01,
// α = 0.05, the shifted cluster N(1.5·1, I)), d ∈ {20, 50}, 20 seeds each: the error, the
// rows removed minus the ⌊αn⌋ corrupted ones (negative: some corrupted rows kept; positive: at
// least that many clean rows removed) and each filter round's ρ_t, Z_t and cut: the evidence behind
// docs/results/prime.md "Consistency across seeds".
// --quick: n = 10^5, 5 seeds.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common.hpp"

namespace dpstats::prime_repro {
namespace {

void run_seeds(const repro::ReproOptions& o) {
  const double alpha = 0.05;
  const std::int64_t n = o.quick ? 100000 : 1000000;
  const int seeds = o.quick ? 5 : 20;
  const std::uint64_t base = o.seed.value_or(5);
  std::ostringstream md;
  md << fmt::format("# PRIME per seed (n = {}, eps = 10, delta = 0.01, alpha = 0.05, shift 1.5)\n\n",
                    n)
     << "| d | seed | error | rows removed - floor(alpha n) | rounds (rho, Z, cut) |\n"
        "|---|---|---|---|---|\n";
  repro::CsvTable t({"d", "seed", "error", "extra_removed"});
  repro::Progress progress("prime-seeds", 2 * seeds);
  for (std::int64_t d : {20, 50}) {
    std::vector<double> errs;
    for (int s = 0; s < seeds; ++s) {
      SeededRng g(base * 1000003 + static_cast<std::uint64_t>(d * 101 + s));
      const RowMatrix X = attack_data(Attack::shift, n, d, alpha, g);
      PrimeOptions po;
      po.scale = std::vector<double>{1.0};
      po.clip_check_share = 0;
      po.privacy.epsilon = 10;
      po.privacy.delta = 0.01;
      po.alpha = alpha;
      po.run.threads = std::max(o.threads, 1);
      PrimeTrace trace;
      const auto r = prime(X, po, g, nullptr, &trace);
      const double err = r.status == Status::ok ? r.estimate.norm() : std::nan("");
      const auto bad = static_cast<std::int64_t>(std::floor(alpha * static_cast<double>(n)));
      const std::int64_t extra =
          n - static_cast<std::int64_t>(trace.final_set.size()) - bad;
      std::string rounds;
      for (const auto& rd : trace.rounds)
        rounds += fmt::format("{}({:.3g}, {:.3g}, {:.3g})", rounds.empty() ? "" : " ", rd.rho,
                              rd.Z, rd.rho * rd.Z);
      md << fmt::format("| {} | {} | {:.4f} | {} | {} |\n", d, s, err, extra, rounds);
      t.add_row({double(d), double(s), err, double(extra)});
      errs.push_back(err);
      progress.step();
    }
    std::sort(errs.begin(), errs.end());
    const std::size_t m = errs.size();
    md << fmt::format("\nd = {}: median {:.4f}, worst {:.4f}\n\n", d,
                      (errs[(m - 1) / 2] + errs[m / 2]) / 2, errs.back());
  }
  t.write(o.out, "seeds.csv");
  std::ofstream(o.out / "summary.md") << md.str();
}

}  // namespace

DPSTATS_EXPERIMENT("prime-seeds",
                   "PRIME per seed at the paper's setting (n 1e6, eps 10, alpha 0.05, d 20 and "
                   "50): errors, extra rows removed, each round's cut",
                   run_seeds);

}  // namespace dpstats::prime_repro
