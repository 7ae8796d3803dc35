// user-level-default (issue 7, gap 1): does the recommended method (dp-gd-user with its default
// clip, steps and step) come within 1.2× of the best method measured on held-out data? The full
// study's test set (10^5 labelled items) could not resolve excesses of 1e-5, so here:
//  * excess is the exact population form E_a[B(a·x, w*)] on 10^6 feature draws shared by every
//    method (synthetic_users.hpp: relative standard error ≈ 0.1 %, reported);
//  * the tuned competitors (DP-GD over clip × T × η, Alg 3 practical over clip × T × L_f) are
//    chosen by their mean excess over 3 tuning datasets × their own noise, disjoint from the
//    held-out ones;
//  * the held-out comparison uses many datasets per cell, each method on the same datasets
//    (paired), with a bootstrap interval for the ratio of mean excesses.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "../repro.hpp"
#include "common.hpp"

namespace dpstats::repro::user_level {
namespace {

double excess_of(const UserDataset& D, const PopulationExcess& pop, const UserLevelOptions& o,
                 std::uint64_t seed) {
  SeededRng rng(seed);
  return pop(fit_user_level(D, o, rng).estimate);
}

// Bootstrap (over datasets, paired) 90 % interval of mean(a)/mean(b).
std::pair<double, double> ratio_interval(const std::vector<double>& a, const std::vector<double>& b,
                                         std::uint64_t seed) {
  SeededRng rng(seed);
  const std::size_t k = a.size();
  std::vector<double> r;
  for (int it = 0; it < 2000; ++it) {
    double sa = 0, sb = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const auto j = static_cast<std::size_t>(rng.uniform_below(k));
      sa += a[j];
      sb += b[j];
    }
    r.push_back(sa / sb);
  }
  std::sort(r.begin(), r.end());
  return {r[100], r[1899]};
}

// heterogeneous = false: the study's task at every grid cell. true: the study's concept-shift
// task (w_u = w* + ξ_u, κ = 1, label flips ρ_u ~ U(0, 0.4)) at two cells, with one more fixed
// (untuned) row, the default with its clip doubled, L/(2√m).
void run_default_on(const ReproOptions& opts, bool heterogeneous) {
  const std::uint64_t seed = opts.seed.value_or(20261122);
  const std::int64_t d = 10;
  const std::vector<Size> sizes =
      heterogeneous ? (opts.quick ? std::vector<Size>{{4000, 100}}
                                  : std::vector<Size>{{4000, 100}, {10000, 100}})
      : opts.quick  ? std::vector<Size>{{10000, 100}}
                    : std::vector<Size>{{1000, 20}, {1000, 100}, {4000, 20}, {4000, 100},
                                        {10000, 20}, {10000, 100}, {4000, 400}};
  const int tune_sets = 3;
  const int held_out = opts.quick ? 8 : (heterogeneous ? 12 : 20);
  const std::int64_t pop_items = opts.quick ? 200000 : 1000000;
  std::filesystem::create_directories(opts.out);
  SeededRng wrng(seed);
  UserTask base = task_for({1, 1}, d);
  const Vector w_star = make_w_star(base, wrng);  // the study's w* for the same seed
  if (heterogeneous) {
    base.heterogeneity = 1.0;
    base.label_noise = 0.4;
  }
  auto task_of = [&](const Size& s) {
    UserTask t = base;
    t.n = s.n;
    t.m = s.m;
    return t;
  };
  SeededRng prng(seed + 2);
  const PopulationExcess pop(base, w_star, pop_items, prng, opts.quick ? 1000000 : 4000000);

  CsvTable csv({"n", "m", "method_id", "excess", "excess_se", "pop_rel_se", "ratio_to_default",
                "ratio_lo", "ratio_hi"});
  std::ofstream md(opts.out / "summary.md");
  md << "# user-level-default" << (heterogeneous ? "-het" : "")
     << ": the recommended method against tuned competitors, exact population excess\n\n";
  if (heterogeneous)
    md << fmt::format("**Heterogeneous users**: concept shift w_u = w* + ξ_u (ξ_u ~ N(0, I/d), "
                      "κ = 1) and label-flip rates ρ_u ~ U(0, 0.4); x* = {:.4f}·w*/‖w*‖.\n\n",
                      pop.minimiser().norm());
  md << fmt::format("Logistic task of `repro user-level`, (ε, δ) = (1, 1e-6), d = 10. Excess = "
                    "E_a[B(a·x, w*)] on {} shared feature draws (F(0) − F* = {:.4f}). Tuned "
                    "methods chosen on {} tuning datasets; {} held-out datasets per cell, every "
                    "method on the same ones. Ratio = method / default with a paired bootstrap "
                    "90 % interval.\n\n",
                    pop_items, pop(Vector::Zero(d)), tune_sets, held_out);
  md << "| n | m | method | config | excess (mean) | se | eval rel. se | default / method | 90 % interval |\n"
        "|---|---|---|---|---|---|---|---|---|\n";
  Progress progress("user-level-default", sizes.size());
  for (const auto& s : sizes) {
    std::vector<UserDataset> tune;
    for (int k = 0; k < tune_sets; ++k) {
      SeededRng r(seed + 40000 + static_cast<std::uint64_t>(k * 131 + s.n * 7 + s.m));
      tune.push_back(make_user_task(task_of(s), w_star, r));
    }
    struct Row {
      std::string name, cfg;
      UserLevelOptions o;
    };
    std::vector<Row> rows;
    UserLevelOptions def;
    def.privacy = {1, 1e-6};
    def.domain_radius = 5;
    rows.push_back({"dp-gd-user (default)", "clip L/(4√m), T 20, η 4R/(cT)", def});
    for (const std::string method : {"dp-gd-user", "accelerated"}) {
      const auto cands = candidates(s, method, opts.quick);
      double best = INFINITY;
      std::size_t bi = 0;
      for (std::size_t c = 0; c < cands.size(); ++c) {
        double v = 0;
        for (int k = 0; k < tune_sets; ++k)
          v += excess_of(tune[static_cast<std::size_t>(k)], pop, cands[c].opt, seed + 500 + k);
        if (v < best) {
          best = v;
          bi = c;
        }
      }
      const auto& o = cands[bi].opt;
      std::string cfg = fmt::format("clip {:.3g}·L/√m, T {}", *o.clip * std::sqrt(double(s.m)) / 1.5,
                                    *o.steps);
      if (o.step_size) cfg += fmt::format(", η {:.3g}·4R/(cT)", *o.step_size / (4 * 10.0 / (*o.clip * *o.steps)));
      if (o.alg3.smoothness) cfg += fmt::format(", L_f {:.3g}·τT²/(8R)", *o.alg3.smoothness / (*o.clip * *o.steps * *o.steps / 80.0));
      rows.push_back({method + " (tuned)", cfg, o});
    }
    if (heterogeneous) {
      UserLevelOptions c2 = def;
      c2.clip = 1.5 / (2 * std::sqrt(static_cast<double>(s.m)));
      rows.push_back({"dp-gd-user, clip L/(2√m)", "clip L/(2√m), T 20, η 4R/(cT)", c2});
    }
    std::vector<std::vector<double>> ex(rows.size());
    std::vector<double> rel_se(rows.size(), 0);
    tune.clear();
    for (int k = 0; k < held_out; ++k) {  // one held-out dataset in memory at a time
      SeededRng gen(seed + 60000 + static_cast<std::uint64_t>(k * 131 + s.n * 7 + s.m));
      const UserDataset held = make_user_task(task_of(s), w_star, gen);
      for (std::size_t r = 0; r < rows.size(); ++r) {
        SeededRng rng(seed + 900 + static_cast<std::uint64_t>(k));
        const Vector x = fit_user_level(held, rows[r].o, rng).estimate;
        const double e = pop(x);
        ex[r].push_back(e);
        rel_se[r] = std::max(rel_se[r], pop.standard_error(x) / e);
      }
    }
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const auto sm = summarise(ex[r]);
      const auto [lo, hi] = ratio_interval(ex[0], ex[r], seed + 77 + r);
      const double ratio = summarise(ex[0]).mean / sm.mean;
      csv.add_row({double(s.n), double(s.m), double(r), sm.mean, sm.se, rel_se[r], ratio, lo, hi});
      md << fmt::format("| {} | {} | {} | {} | {:.3e} | {:.1e} | {:.1e} | {:.2f} | [{:.2f}, {:.2f}] |\n",
                        s.n, s.m, rows[r].name, rows[r].cfg, sm.mean, sm.se, rel_se[r], ratio, lo, hi);
    }
    progress.step();
  }
  md << "\nmethod_id: 0 = dp-gd-user (default), 1 = dp-gd-user (tuned), 2 = accelerated (tuned)"
     << (heterogeneous ? ", 3 = dp-gd-user with clip L/(2√m). " : ". ")
     << "Held-out data: seeds disjoint from the tuning data. "
        "`eval rel. se` is the largest relative standard error of the population estimate over the "
        "held-out fits.\n";
  csv.write(opts.out, heterogeneous ? "default_rule_het.csv" : "default_rule.csv");
}

void run_default(const ReproOptions& opts) { run_default_on(opts, false); }
void run_default_het(const ReproOptions& opts) { run_default_on(opts, true); }

}  // namespace

DPSTATS_EXPERIMENT("user-level-default",
                   "Issue 7: the recommended user-level method against tuned DP-GD and tuned Alg 3 "
                   "practical on many held-out datasets, exact population excess",
                   run_default);
DPSTATS_EXPERIMENT("user-level-default-het",
                   "Issue 7: the recommended user-level method against tuned DP-GD and tuned Alg 3 "
                   "practical on heterogeneous users (concept shift + label noise)",
                   run_default_het);

}  // namespace dpstats::repro::user_level

namespace dpstats::repro::user_level {
namespace {

// user-level-clip: the default clip L/(4√m) against L/(2√m) (the clip the heterogeneous tuning
// datasets chose at both cells of user-level-default-het), T = 20 and η = 4R/(cT) for both, on
// fresh datasets (seeds disjoint from every other user-level run) at every grid cell, homogeneous
// and heterogeneous users. No tuning: both rules use public sizes only.
void run_clip(const ReproOptions& opts) {
  const std::uint64_t seed = opts.seed.value_or(20261122);
  const std::int64_t d = 10;
  const std::vector<Size> sizes =
      opts.quick ? std::vector<Size>{{1000, 20}, {4000, 100}}
                 : std::vector<Size>{{1000, 20}, {1000, 100}, {4000, 20}, {4000, 100},
                                     {10000, 20}, {10000, 100}, {4000, 400}};
  const int held_out = opts.quick ? 6 : 12;
  const std::int64_t pop_items = opts.quick ? 200000 : 1000000;
  std::filesystem::create_directories(opts.out);
  SeededRng wrng(seed);
  const UserTask hom = task_for({1, 1}, d);
  const Vector w_star = make_w_star(hom, wrng);
  UserTask het = hom;
  het.heterogeneity = 1.0;
  het.label_noise = 0.4;
  CsvTable csv({"heterogeneous", "n", "m", "default_excess", "default_se", "half_clip_excess",
                "half_clip_se", "ratio", "ratio_lo", "ratio_hi"});
  std::ofstream md(opts.out / "summary.md");
  md << fmt::format("# user-level-clip: default clip L/(4√m) against L/(2√m), population excess, "
                    "{} fresh datasets per cell (paired)\n\n| users | n | m | default | se | "
                    "clip L/(2√m) | se | default / L/(2√m) | 90 % interval |\n"
                    "|---|---|---|---|---|---|---|---|---|\n", held_out);
  Progress progress("user-level-clip", 2 * sizes.size());
  for (int h = 0; h < 2; ++h) {
    const UserTask& base = h ? het : hom;
    SeededRng prng(seed + 2);
    const PopulationExcess pop(base, w_star, pop_items, prng, opts.quick ? 1000000 : 4000000);
    for (const auto& s : sizes) {
      UserLevelOptions def;
      def.privacy = {1, 1e-6};
      def.domain_radius = 5;
      UserLevelOptions half = def;
      half.clip = 1.5 / (2 * std::sqrt(static_cast<double>(s.m)));
      std::vector<double> a, b;
      for (int k = 0; k < held_out; ++k) {
        UserTask t = base;
        t.n = s.n;
        t.m = s.m;
        SeededRng gen(seed + 80000 + static_cast<std::uint64_t>(h * 7919 + k * 131 + s.n * 7 + s.m));
        const UserDataset D = make_user_task(t, w_star, gen);
        a.push_back(excess_of(D, pop, def, seed + 1900 + k));
        b.push_back(excess_of(D, pop, half, seed + 1900 + k));
      }
      const auto sa = summarise(a), sb = summarise(b);
      const auto [lo, hi] = ratio_interval(a, b, seed + 5);
      csv.add_row({double(h), double(s.n), double(s.m), sa.mean, sa.se, sb.mean, sb.se,
                   sa.mean / sb.mean, lo, hi});
      md << fmt::format("| {} | {} | {} | {:.3e} | {:.1e} | {:.3e} | {:.1e} | {:.2f} | [{:.2f}, {:.2f}] |\n",
                        h ? "heterogeneous" : "homogeneous", s.n, s.m, sa.mean, sa.se, sb.mean,
                        sb.se, sa.mean / sb.mean, lo, hi);
      progress.step();
    }
  }
  md << "\nHeterogeneous: concept shift κ = 1 and label-flip rates ρ_u ~ U(0, 0.4) (as in "
        "user-level-default-het).\n";
  csv.write(opts.out, "clip_rule.csv");
}

}  // namespace

DPSTATS_EXPERIMENT("user-level-clip",
                   "Issue 7: default clip L/(4√m) against L/(2√m) on fresh homogeneous and "
                   "heterogeneous datasets at every grid cell",
                   run_clip);

}  // namespace dpstats::repro::user_level
