// user-level: the empirical study of docs/results/user-level.md (the paper has none), on the
// addendum's task: logistic loss, ‖w*‖ = 4 inside the ball of radius 5, per-user feature scale
// U(0.5, 1.5), (ε, δ) = (1, 1e-6), d = 10. Every method is tuned on a separate synthetic dataset
// and then run on fresh ones; logistic excess is the exact population form on a feature sample
// shared by every method (PopulationExcess; x* = w* for the homogeneous task), the hinge section's
// on a labelled test set. Heterogeneous users (concept shift + label noise, covariate shift) get
// their own blocks, with x* of the honest users' mixture. Also: excess against gradient evaluations, the
// influence of one adversarial user (labels flipped, features ×100, clipped to A), noise-off runs
// (what the algorithm loses without its noise) and the paper-constant schedules (feasibility).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>

#include "dpstats/synthetic/synthetic_users.hpp"
#include "dpstats/solvers/dp_sgd.hpp"
#include "dpstats/user_level/user_level.hpp"
#include "../repro.hpp"
#include "common.hpp"

namespace dpstats::repro::user_level {
namespace {

using namespace dpstats::optimize;

struct RunResult {
  double excess = NAN, seconds = 0;
  std::int64_t grads = 0;
};

RunResult run_one(const UserDataset& D, const PopulationExcess& pop, const UserLevelOptions& o,
                  std::uint64_t seed, bool noiseless = false) {
  SeededRng rng(seed);
  UserLevelTrace hooks;
  hooks.noiseless = noiseless;
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = fit_user_level(D, o, rng, nullptr, &hooks);
  RunResult res;
  res.seconds = seconds_since(t0);
  res.grads = r.diagnostics["gradient_evaluations"].get<std::int64_t>();
  res.excess = pop(r.estimate);
  return res;
}

void run_study(const ReproOptions& opts) {
  const std::uint64_t seed = opts.seed.value_or(20261122);
  const std::int64_t d = 10;
  const std::vector<Size> sizes = opts.quick
                                      ? std::vector<Size>{{1000, 20}, {1000, 100}, {4000, 20}, {4000, 100}}
                                      : std::vector<Size>{{1000, 20}, {1000, 100}, {4000, 20},
                                                          {4000, 100}, {10000, 20}, {10000, 100},
                                                          {4000, 400}};
  const int seeds = opts.quick ? 3 : 5;
  const std::vector<std::string> methods = {"dp-gd-user", "dp-sgd-user", "dp-sgd-group",
                                            "phased-sgd", "accelerated", "non-private"};
  std::filesystem::create_directories(opts.out);
  SeededRng wrng(seed);
  UserTask base = task_for({1, 1}, d);
  const Vector w_star = make_w_star(base, wrng);
  // Test set (hinge section only): 10^5 honest labelled items (n = 10^4 users × m = 10).
  UserTask tt = task_for({10000, opts.quick ? 5 : 10}, d);
  SeededRng trng(seed + 1);
  const UserDataset test = make_user_task(tt, w_star, trng);
  // Logistic excess: the exact population form E_a[B(a·x, a·x*)] on a feature sample shared by
  // every method (synthetic_users.hpp); relative standard error ≈ 1/√items.
  const std::int64_t pop_items = opts.quick ? 200000 : 1000000;
  SeededRng prng(seed + 2);
  const PopulationExcess pop(base, w_star, pop_items, prng);
  CsvTable main_csv({"n", "m", "method_id", "tuned", "excess", "excess_se", "grads_per_nm",
                     "seconds", "adv_excess", "adv_shift", "noise_sd", "noise_off_excess"});
  std::ofstream md(opts.out / "summary.md");
  md << "# user-level: excess population risk, (ε, δ) = (1, 1e-6), d = 10, logistic\n\n";
  md << fmt::format("F(0) − F* = {:.4f} (exact form on {} shared feature draws); {} fresh datasets "
                    "per cell; x* = w* (‖w*‖ = 4, ball 5).\n\n",
                    pop(Vector::Zero(d)), pop_items, seeds);
  md << "| n | m | method | config (tuned) | excess | se | grads/nm | s | 1 adversary: Δexcess | noise sd | noise off |\n";
  md << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  Progress progress("user-level", (sizes.size() + (opts.quick ? 3 : 6)) * methods.size());
  std::map<std::string, int> method_id;
  for (std::size_t i = 0; i < methods.size(); ++i) method_id[methods[i]] = static_cast<int>(i);
  method_id["dp-gd-user (default)"] = static_cast<int>(methods.size());
  CsvTable frontier({"method_id", "grads_per_nm", "excess"});
  CsvTable het_csv({"n", "m", "method_id", "tuned", "excess", "excess_se", "grads_per_nm",
                    "seconds", "adv_excess", "adv_shift", "noise_sd", "noise_off_excess"});
  std::map<std::pair<std::int64_t, std::int64_t>, UserLevelOptions> best_alg3;

  // One table block per size: tune on a separate dataset, then run on fresh ones (and on the same
  // ones with user 0 adversarial). `proto` carries the task's heterogeneity knobs.
  auto run_cells = [&](const std::vector<Size>& cell_sizes, const UserTask& proto,
                       const PopulationExcess& pop, const std::string& tag,
                       std::uint64_t offset) {
    auto task_of = [&](const Size& s, std::int64_t adversaries = 0) {
      UserTask t = proto;
      t.n = s.n;
      t.m = s.m;
      t.adversaries = adversaries;
      return t;
    };
    const bool het = !tag.empty();
    for (const auto& s : cell_sizes) {
      SeededRng tune_rng(seed + offset + 100 + static_cast<std::uint64_t>(s.n * 7 + s.m));
      const UserDataset tune = make_user_task(task_of(s), w_star, tune_rng);
      std::vector<UserDataset> evals, advs;
      for (int k = 0; k < seeds; ++k) {
        SeededRng a(seed + offset + 1000 + static_cast<std::uint64_t>(k * 31 + s.n + s.m));
        SeededRng b(seed + offset + 1000 + static_cast<std::uint64_t>(k * 31 + s.n + s.m));
        evals.push_back(make_user_task(task_of(s), w_star, a));
        advs.push_back(make_user_task(task_of(s, 1), w_star, b));  // same users, user 0 adversarial
      }
      std::map<std::string, double> best_excess;
      auto evaluate = [&](const std::string& label, const std::string& cfg_text,
                          const UserLevelOptions& o, bool tuned) {
        std::vector<double> ex, adv, sec, off;
        std::int64_t grads = 0;
        for (int k = 0; k < seeds; ++k) {
          const auto r = run_one(evals[static_cast<std::size_t>(k)], pop, o, seed + 7 * k);
          const auto ra = run_one(advs[static_cast<std::size_t>(k)], pop, o, seed + 7 * k);
          ex.push_back(r.excess);
          adv.push_back(ra.excess - r.excess);
          sec.push_back(r.seconds);
          grads = r.grads;
          if (o.method != UserLevelMethod::non_private)
            off.push_back(run_one(evals[static_cast<std::size_t>(k)], pop, o, seed + 7 * k, true).excess);
        }
        const auto se = summarise(ex), sa = summarise(adv), st = summarise(sec);
        double maxadv = 0;
        for (double a : adv) maxadv = std::max(maxadv, std::abs(a));
        const double sd = se.se * std::sqrt(static_cast<double>(seeds));
        const double off_mean = off.empty() ? NAN : summarise(off).mean;
        const double gpn = static_cast<double>(grads) / static_cast<double>(s.n * s.m);
        (het ? het_csv : main_csv)
            .add_row({static_cast<double>(s.n), static_cast<double>(s.m),
                      static_cast<double>(method_id[label]), tuned ? 1.0 : 0.0, se.mean, se.se, gpn,
                      st.mean, se.mean + sa.mean, maxadv, sd, off_mean});
        md << fmt::format("| {} | {} | {} | {} | {:.2e} | {:.1e} | {:.2f} | {:.3f} | {:.1e} | {:.1e} | {} |\n",
                          s.n, s.m, label, cfg_text, se.mean, se.se, gpn, st.mean, maxadv, sd,
                          std::isnan(off_mean) ? std::string("–") : fmt::format("{:.2e}", off_mean));
        if (!het && s.n == sizes.back().n && s.m == sizes.back().m)
          frontier.add_row({static_cast<double>(method_id[label]), gpn, se.mean});
        best_excess[label] = se.mean;
      };
      for (const auto& method : methods) {
        const auto cands = candidates(s, method, opts.quick);
        std::size_t best = 0;
        double best_val = INFINITY;
        if (cands.size() > 1) {
          for (std::size_t c = 0; c < cands.size(); ++c) {
            double v = 0;
            try {
              v = run_one(tune, pop, cands[c].opt, seed + 99).excess;
            } catch (const std::exception&) {
              v = INFINITY;
            }
            if (v < best_val) {
              best_val = v;
              best = c;
            }
          }
        }
        const auto& o = cands[best].opt;
        std::string cfg;
        if (o.clip) cfg += fmt::format("clip {:.3g} ", *o.clip);
        if (o.steps) cfg += fmt::format("T {} ", *o.steps);
        if (o.step_size) cfg += fmt::format("η {:.3g} ", *o.step_size);
        if (o.alg1.eta) cfg += fmt::format("η {:.2g} c_τ {} ", *o.alg1.eta, o.alg1.c_tau);
        if (o.alg3.smoothness) cfg += fmt::format("L_f {:.3g} ", *o.alg3.smoothness);
        if (method == "accelerated" && !het) best_alg3[{s.n, s.m}] = o;
        evaluate(method, cfg.empty() ? "–" : cfg, o, cands.size() > 1);
        progress.step();
      }
      UserLevelOptions def;
      def.privacy = {1, 1e-6};
      def.domain_radius = 5;
      evaluate("dp-gd-user (default)", "clip L/(4√m), T 20, η 4R/(cT)", def, false);
      double best_private = INFINITY;
      for (const auto& [k, v] : best_excess)
        if (k != "non-private") best_private = std::min(best_private, v);
      md << fmt::format("| {} | {} | **default / best private** | | **{:.2f}×** | | | | | | |\n", s.n,
                        s.m, best_excess["dp-gd-user (default)"] / best_private);
    }
  };
  run_cells(sizes, base, pop, "", 0);

  // Heterogeneous users (issue 7): every method, tuned on a heterogeneous tuning dataset, with the
  // exact excess over the honest users' mixture (x* computed for the mixture).
  {
    struct Het {
      std::string tag, text;
      UserTask task;
    };
    std::vector<Het> hets;
    UserTask mixed = base;
    mixed.heterogeneity = 1.0;
    mixed.label_noise = 0.4;
    hets.push_back({"concept", "concept shift w_u = w* + ξ_u (ξ_u ~ N(0, I/d), κ = 1) and per-user "
                               "label-flip rates ρ_u ~ U(0, 0.4)", mixed});
    UserTask shift = base;
    shift.feature_shift = 1.0;
    hets.push_back({"covariate", "covariate shift: user u's raw features ~ N(μ_u, I/d), "
                                 "μ_u ~ N(0, I/d) (labels well specified: x* = w*)", shift});
    // --quick: concept shift at two sizes, covariate shift at the smallest (time budget).
    const std::vector<Size> het_sizes = opts.quick ? std::vector<Size>{{1000, 20}, {4000, 100}}
                                                   : std::vector<Size>{{1000, 20}, {4000, 100},
                                                                       {10000, 100}};
    std::uint64_t offset = 20000;
    for (const auto& h : hets) {
      const std::vector<Size> cells =
          opts.quick && h.tag == "covariate" ? std::vector<Size>{het_sizes.front()} : het_sizes;
      SeededRng hr(seed + offset + 3);
      const PopulationExcess hpop(h.task, w_star, pop_items, hr, opts.quick ? 1000000 : 4000000);
      md << fmt::format("\n## Heterogeneous users: {}\n\nx* = {:.4f}·w*/‖w*‖ (‖w*‖ = 4); "
                        "F(0) − F* = {:.4f}; {} fresh datasets per cell.\n\n",
                        h.text, hpop.minimiser().norm(), hpop(Vector::Zero(d)), seeds);
      md << "| n | m | method | config (tuned) | excess | se | grads/nm | s | 1 adversary: Δexcess | noise sd | noise off |\n";
      md << "|---|---|---|---|---|---|---|---|---|---|---|\n";
      run_cells(cells, h.task, hpop, h.tag, offset);
      offset += 10000;
    }
  }

  // Excess against gradient evaluations at the largest size: DP-GD over T.
  {
    const Size s = sizes.back();
    SeededRng a(seed + 5000);
    const UserDataset D = make_user_task(task_for(s, d), w_star, a);
    for (int T : {1, 2, 5, 10, 20, 40, 80}) {
      UserLevelOptions o;
      o.privacy = {1, 1e-6};
      o.domain_radius = 5;
      o.steps = T;
      o.clip = 0.5 * 1.5 / std::sqrt(static_cast<double>(s.m));
      std::vector<double> ex;
      std::int64_t grads = 0;
      for (int k = 0; k < seeds; ++k) {
        const auto r = run_one(D, pop, o, seed + 11 * k);
        ex.push_back(r.excess);
        grads = r.grads;
      }
      frontier.add_row({10.0, static_cast<double>(grads) / static_cast<double>(s.n * s.m),
                        summarise(ex).mean});
    }
  }
  // Alg 3 practical over its number of steps (same data), line 100; also the minibatch variant
  // (K = n/10 users per step), line 200. DP-GD's sweep above is line 10.
  {
    const Size s = sizes.back();
    SeededRng a(seed + 5000);
    const UserDataset D = make_user_task(task_for(s, d), w_star, a);
    const double c = 0.5 * 1.5 / std::sqrt(static_cast<double>(s.m));
    for (int mb = 0; mb < 2; ++mb)
      for (int T : {5, 10, 20, 40, 80}) {
        UserLevelOptions o;
        o.privacy = {1, 1e-6};
        o.method = UserLevelMethod::accelerated;
        o.domain_radius = 5;
        o.steps = T;
        o.clip = c;
        if (mb) o.alg3.users_per_step = s.n / 10;
        std::vector<double> ex;
        std::int64_t grads = 0;
        for (int k = 0; k < seeds; ++k) {
          const auto r = run_one(D, pop, o, seed + 11 * k);
          ex.push_back(r.excess);
          grads = r.grads;
        }
        frontier.add_row({mb ? 200.0 : 100.0,
                          static_cast<double>(grads) / static_cast<double>(s.n * s.m),
                          summarise(ex).mean});
      }
  }
  // Where Alg 3 practical loses against DP-GD, per source (largest size, tuned Alg 3 config):
  // each row changes one thing; noise-off runs isolate the optimisation error.
  {
    const Size s = sizes.back();
    const UserLevelOptions tuned = best_alg3.at({s.n, s.m});
    std::vector<UserDataset> evals;
    for (int k = 0; k < seeds; ++k) {
      SeededRng a(seed + 7000 + static_cast<std::uint64_t>(k));
      evals.push_back(make_user_task(task_for(s, d), w_star, a));
    }
    auto both = [&](const UserLevelOptions& o) {
      std::vector<double> on, off;
      for (int k = 0; k < seeds; ++k) {
        on.push_back(run_one(evals[static_cast<std::size_t>(k)], pop, o, seed + 3 * k).excess);
        off.push_back(run_one(evals[static_cast<std::size_t>(k)], pop, o, seed + 3 * k, true).excess);
      }
      return std::pair{summarise(on).mean, summarise(off).mean};
    };
    md << fmt::format("\n## Alg 3 practical: sources of loss at n = {}, m = {} ({} datasets)\n\n",
                      s.n, s.m, seeds);
    md << "| variant | excess | noise off |\n|---|---|---|\n";
    auto row = [&](const std::string& name, const UserLevelOptions& o) {
      const auto [on, off] = both(o);
      md << fmt::format("| {} | {:.2e} | {:.2e} |\n", name, on, off);
    };
    row("Alg 3 practical, tuned (1 phase, full batch, AC-SA, λ = 0)", tuned);
    auto o = tuned;
    o.alg3.num_phases = 4;
    o.alg3.q = 1;
    row("… with 4 phases on disjoint users (q = 1: n/2, n/4, …)", o);
    o = tuned;
    o.alg3.num_phases = 4;
    o.alg3.q = 1;
    o.alg3.lambda = 1.5 / 10 / std::sqrt(static_cast<double>(s.n * s.m));
    row("… with 4 phases and the Thm C.3-style regulariser λ = (L/R)/√(nm), p = 2", o);
    o = tuned;
    o.alg3.users_per_step = s.n / 10;
    row("… with K = n/10 users per step (no amplification claimed)", o);
    o = tuned;
    o.alg3.clip = 1.5;
    row("… with clip τ = L (the filter replaced by clipping at L: card's ablation)", o);
    UserLevelOptions gd;
    gd.privacy = {1, 1e-6};
    gd.domain_radius = 5;
    gd.steps = tuned.steps;
    gd.clip = tuned.clip;
    row("DP-GD user with the same clip and T (no acceleration)", gd);
  }
  // Hinge loss (G3: non-smooth; same data): Alg 3 smoothed (nonsmooth, practical) against DP-GD.
  // F* is the best test risk a long non-private full-batch subgradient run finds on the test set.
  {
    const auto hinge = make_loss("hinge");
    GradientOptions ref;
    ref.steps = 400;
    ref.clip = 10;  // never binds (‖∇‖ <= A = 1.5)
    ref.step_size = 0.5;
    ref.rho = 1;
    ref.sigma_scale = 0;
    GradientCounter cnt;
    SeededRng rr(seed + 9);
    const Ball X(Vector::Zero(d), 5);
    const auto sol = user_dp_gd(test, *hinge, X, Vector::Zero(d), ref, rr, cnt);
    const double f_hinge = test_risk(test, *hinge, sol.x);
    md << fmt::format("\n## Hinge loss (non-smooth): excess over a non-private reference (F_ref = {:.4f}; F(0) − F_ref = {:.4f})\n\n",
                      f_hinge, test_risk(test, *hinge, Vector::Zero(d)) - f_hinge);
    md << "| n | m | method | config | excess | se | grads/nm | 1 adversary: Δexcess | noise off |\n|---|---|---|---|---|---|---|---|---|\n";
    const std::vector<Size> hs = opts.quick ? std::vector<Size>{{1000, 20}, {4000, 20}}
                                            : std::vector<Size>{{1000, 20}, {4000, 20}, {4000, 100}};
    for (const auto& s : hs) {
      SeededRng tune_rng(seed + 300 + static_cast<std::uint64_t>(s.n * 7 + s.m));
      const UserDataset tune = make_user_task(task_for(s, d), w_star, tune_rng);
      std::vector<UserDataset> evals, advs;
      for (int k = 0; k < seeds; ++k) {
        SeededRng a(seed + 3000 + static_cast<std::uint64_t>(k * 31 + s.n + s.m));
        SeededRng b(seed + 3000 + static_cast<std::uint64_t>(k * 31 + s.n + s.m));
        evals.push_back(make_user_task(task_for(s, d), w_star, a));
        advs.push_back(make_user_task(task_for(s, d, 1), w_star, b));
      }
      auto hinge_excess = [&](const UserDataset& D, const UserLevelOptions& o, std::uint64_t sd,
                              std::int64_t* grads, bool noiseless = false) {
        SeededRng rng(sd);
        UserLevelTrace hooks;
        hooks.noiseless = noiseless;
        const auto r = fit_user_level(D, o, rng, nullptr, &hooks);
        if (grads) *grads = r.diagnostics["gradient_evaluations"].get<std::int64_t>();
        return test_risk(test, *hinge, r.estimate) - f_hinge;
      };
      for (const std::string method : {"dp-gd-user", "nonsmooth", "non-private"}) {
        auto cands = candidates(s, method, opts.quick);
        for (auto& c : cands) c.opt.loss = GlmKind::hinge;
        if (opts.quick && method == "dp-gd-user") {  // --quick: every other configuration
          std::vector<Config> half;
          for (std::size_t i = 0; i < cands.size(); i += 2) half.push_back(cands[i]);
          cands = half;
        }
        if (method == "dp-gd-user")  // η grid for hinge (β undefined): 4, 16, 64
          for (std::size_t i = 0; i < cands.size(); ++i)
            cands[i].opt.step_size = *cands[i].opt.step_size * (1.5 * 1.5 / 4) / 2;
        std::size_t best = 0;
        double best_val = INFINITY;
        if (cands.size() > 1)
          for (std::size_t c = 0; c < cands.size(); ++c) {
            const double v = hinge_excess(tune, cands[c].opt, seed + 99, nullptr);
            if (v < best_val) {
              best_val = v;
              best = c;
            }
          }
        const auto& o = cands[best].opt;
        std::vector<double> ex, adv, off;
        std::int64_t grads = 0;
        for (int k = 0; k < seeds; ++k) {
          const double e = hinge_excess(evals[static_cast<std::size_t>(k)], o, seed + 7 * k, &grads);
          ex.push_back(e);
          adv.push_back(std::abs(hinge_excess(advs[static_cast<std::size_t>(k)], o, seed + 7 * k, nullptr) - e));
          if (o.method != UserLevelMethod::non_private) {
            off.push_back(hinge_excess(evals[static_cast<std::size_t>(k)], o, seed + 7 * k, nullptr, true));
          }
        }
        double maxadv = 0;
        for (double a : adv) maxadv = std::max(maxadv, a);
        std::string cfg;
        if (o.clip) cfg += fmt::format("clip {:.3g} ", *o.clip);
        if (o.steps) cfg += fmt::format("T {} ", *o.steps);
        if (o.step_size) cfg += fmt::format("η {:.3g} ", *o.step_size);
        if (o.alg3.smoothness) cfg += fmt::format("L_f {:.3g} ", *o.alg3.smoothness);
        const auto se = summarise(ex);
        md << fmt::format("| {} | {} | {} | {} | {:.2e} | {:.1e} | {:.2f} | {:.1e} | {} |\n", s.n,
                          s.m, method, cfg.empty() ? "–" : cfg, se.mean, se.se,
                          static_cast<double>(grads) / static_cast<double>(s.n * s.m), maxadv,
                          off.empty() ? std::string("–") : fmt::format("{:.2e}", summarise(off).mean));
      }
    }
  }
  // Paper constants: where do Alg 1's schedules first become feasible?
  md << "\n## Paper constants (Alg 1, q = 0.1, ε = 1, δ = 1e-6, m = 20)\n\n| n | feasible | phase-1 σ |\n|---|---|---|\n";
  for (std::int64_t n : {std::int64_t{1} << 12, std::int64_t{1} << 15, std::int64_t{1} << 17,
                         std::int64_t{1} << 18, std::int64_t{1} << 20, std::int64_t{1} << 22}) {
    ProblemConstants k;
    k.L = 1.5;
    k.R = 10;
    k.beta = 1.5 * 1.5 / 4;
    k.d = d;
    Alg1Options ao;
    ao.profile = Profile::paper;
    const auto P = plan_alg1(n, 20, 1, 1e-6, k, ao);
    md << fmt::format("| {} | {} | {} |\n", n, P.feasible ? "yes" : "no: " + P.refusal,
                      P.feasible ? fmt::format("{:.3g}", P.phases.front().sigma_i) : "–");
  }
  md << "\n## Paper constants (Alg 3 schedule, q = 0.1, ε = 1, δ = 1e-6, m = 20)\n\n"
        "| n | feasible | phase-1 σ | τ (vs L = 1.5) | Σ T_i·K_i·m / nm |\n|---|---|---|---|---|\n";
  for (int e : {12, 16, 18, 20, 21, 22}) {
    ProblemConstants k;
    k.L = 1.5;
    k.R = 10;
    k.beta = 1.5 * 1.5 / 4;
    k.d = d;
    const std::int64_t n = std::int64_t{1} << e;
    const auto P = plan_alg3(n, 20, 1, 1e-6, k);
    md << fmt::format("| 2^{} | {} | {:.3g} | {:.2f} | {:.1f} |\n", e,
                      P.feasible ? "yes" : "no: " + P.refusal, P.phases.front().sigma_i, P.tau,
                      P.gradient_evaluations / (static_cast<double>(n) * 20));
  }
  md << "\n## Paper constants (smoothed Alg 3 schedule, hinge: Thm D.3 r and λ, q = 0.1, m = 20)\n\n"
        "| n | feasible | phase-1 σ | r | Σ T_i·K_i·m / nm |\n|---|---|---|---|---|\n";
  for (int e : {12, 16, 20, 21, 22}) {
    ProblemConstants k;
    k.L = 1.5;
    k.R = 10;
    k.d = d;
    Alg3Options ao;
    ao.profile = Profile::paper;
    const std::int64_t n = std::int64_t{1} << e;
    const auto P = plan_accelerated(n, 20, 1, 1e-6, k, ao, true);
    md << fmt::format("| 2^{} | {} | {:.3g} | {:.2e} | {:.1f} |\n", e,
                      P.feasible ? "yes" : "no: " + P.refusal, P.phases.front().sigma_i,
                      P.smoothing_radius, P.gradient_evaluations / (static_cast<double>(n) * 20));
  }
  md << "\nmethod_id: ";
  for (const auto& [k, v] : method_id) md << v << " = " << k << "; ";
  md << "frontier lines: 10 = DP-GD over T = 1..80 steps; 100 = Alg 3 practical (full batch) over "
        "T = 5..80; 200 = Alg 3 practical with K = n/10 users per step over T = 5..80.\n";
  const auto main_path = main_csv.write(opts.out, "user_level.csv");
  const auto fr = frontier.write(opts.out, "frontier.csv");
  het_csv.write(opts.out, "heterogeneous.csv");
  plot({fr, opts.out / "frontier.png", "excess vs gradient evaluations (largest size)",
        "grads_per_nm", "gradient evaluations / nm", "excess test loss", {"excess"}, "method_id",
        true, true});
  plot({main_path, opts.out / "excess_vs_n.png", "excess vs n (all m)", "n", "n",
        "excess test loss", {"excess"}, "method_id", true, true});
}

}  // namespace

DPSTATS_EXPERIMENT("user-level",
                   "User-level SCO study (docs/proofs/user-level.md): every method tuned on separate data, excess "
                   "vs n, m, gradient evaluations, one adversarial user, noise-off losses",
                   run_study);

}  // namespace dpstats::repro::user_level
