// fit_user_level's runners: each method's plan, charges and run on the bounded users.
#include "dpstats/user_level/user_level.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mechanisms/above_threshold.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/user_level/accelerated.hpp"
#include "dpstats/user_level/filter.hpp"
#include "dpstats/user_level/home_rank.hpp"
#include "dpstats/solvers/exact_sum.hpp"
#include "dpstats/solvers/holdout.hpp"
#include "dpstats/solvers/standardize.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/solvers/dp_sgd.hpp"
#include "dpstats/scale/reliability.hpp"
#include "checks.hpp"

#include "user_level_internal.hpp"

namespace dpstats::optimize::user_level_detail {

struct Setting {  // the resolved, public problem
  std::unique_ptr<Loss> loss;
  std::shared_ptr<const Domain> domain;
  Vector x0;
  ProblemConstants k;
};

Setting make_setting(const UserDataset& data, const UserLevelOptions& o) {
  Setting s;
  s.loss = make_loss(o.loss);
  s.domain = o.domain ? o.domain : std::make_shared<Ball>(Vector::Zero(data.dim()), o.domain_radius);
  s.x0 = o.x0 ? *o.x0 : s.domain->center();
  s.k = problem_constants(data, *s.loss, *s.domain);
  return s;
}

// The methods' charges, planned before the bounds are released (their losses follow from ε, δ
// and ρ alone) and claimed with the phases' mechanisms once the schedule is known.
ParallelComposite alg1_composite(double rho) {
  return ParallelComposite(PrivacyLoss::zcdp(rho), Accountant::zcdp,
                           "Alg 1: phase outputs on disjoint users (parallel composition)");
}
ParallelComposite alg3_composite(double rho) {
  return ParallelComposite(PrivacyLoss::zcdp(rho), Accountant::zcdp,
                           "Alg 3: exact clipped gradient sums, T_i steps per phase (phases on "
                           "disjoint users: parallel composition)");
}
const char* const kAlg1Theorem = "Thm B.1, docs/proofs/user-level.md §2.2";
const char* const kAlg1Purpose = "Alg 1: score tests (Laplace(20/eps)) and phase outputs";
const char* const kAlg3Theorem = "Thm C.1, docs/proofs/user-level.md §2.3–2.4";
const char* const kAlg3Purpose = "Alg 3: concentration gates (AboveThreshold) and filtered steps";

LedgerEntry alg1_proved(double eps, double delta, Ledger parts) {
  return proved_entry(PrivacyLoss::approximate(eps, delta), kAlg1Theorem, kAlg1Purpose,
                      std::move(parts));
}
LedgerEntry alg3_proved(double eps, double delta, Ledger parts) {
  return proved_entry(PrivacyLoss::approximate(eps, delta), kAlg3Theorem, kAlg3Purpose,
                      std::move(parts));
}

// The method's planned entries at `rho` (the practical profiles' zCDP; the paper's (ε, δ)).
Ledger method_planned(const UserDataset& data, const UserLevelOptions& o, double rho) {
  const double eps = o.privacy.epsilon, delta = o.privacy.delta;
  const bool paper = o.profile == Profile::paper;
  GradientOptions g;
  g.steps = o.steps.value_or(20);
  g.rho = rho;
  FilterOptions f;
  f.steps = o.steps.value_or(20);
  f.rho = rho;
  const std::int64_t n = data.total_users(), m = data.items_per_user();
  switch (o.method) {
    case UserLevelMethod::phased_sgd:
      return {paper ? proved_entry(PrivacyLoss::approximate(eps, delta), kAlg1Theorem, kAlg1Purpose)
                    : alg1_composite(rho).planned()};
    case UserLevelMethod::accelerated:
    case UserLevelMethod::nonsmooth:
      return {paper ? proved_entry(PrivacyLoss::approximate(eps, delta), kAlg3Theorem, kAlg3Purpose)
                    : alg3_composite(rho).planned()};
    case UserLevelMethod::dp_gd_user: return {user_dp_gd_planned(g)};
    case UserLevelMethod::dp_sgd_user:
      require(g.steps <= n, "dp-sgd-user needs at most one batch per user (steps <= n)");
      return {user_dp_sgd_planned(g)};
    case UserLevelMethod::dp_sgd_group:
      require(g.steps <= n * m, "dp-sgd-group needs at most one batch per item (steps <= n·m)");
      return {item_dp_sgd_group_planned(g, m)};
    case UserLevelMethod::dp_gd_filter: return filter_planned(f);
    case UserLevelMethod::non_private: return {};
  }
  throw std::logic_error("method_planned: no plan for this method");
}

MethodRun fit_phased(const UserDataset& data, const Setting& s, const UserLevelOptions& o,
                     double rho, ReleaseBudget& account, Rng& rng, GradientCounter& counter,
                     nlohmann::json& diag, UserLevelTrace* trace) {
  const bool paper = o.profile == Profile::paper;
  Alg1Options a1 = o.alg1;
  a1.profile = o.profile;
  if (!paper) a1.rho = rho;
  const double eps = o.privacy.epsilon, delta = o.privacy.delta;
  const Alg1Plan P = plan_alg1(data.total_users(), data.items_per_user(), eps, delta, s.k, a1);
  diag["schedule"] = plan_json(P);
  if (!P.feasible) throw InvalidArgument("phased-sgd cannot run at this size: " + P.refusal);
  // The phases' mechanisms (public given the plan), presented on every rank before rank 0 runs.
  std::vector<GaussianMechanism> outputs;
  Ledger parts;
  ParallelComposite phases = alg1_composite(rho);
  for (const Alg1Phase& ph : P.phases) {
    if (paper) {
      parts.push_back(alg1_test(eps, o.run.noise).ledger_entry("score test"));
      parts.push_back(alg1_paper_output(ph, o, data.dim()).ledger_entry("phase output, Lemma B.2 coupling"));
    } else {
      outputs.push_back(alg1_practical_output(ph, P.rho, data.dim(), o.run.noise));
      phases.add_block({outputs.back().ledger_entry("phase output")});
    }
  }
  account.claim(paper ? alg1_proved(eps, delta, std::move(parts)) : phases.entry());
  // Several ranks: rank 0 holds every user (users_on_root) and runs; [halted, phase, x...].
  const Vector got = on_root(comm_or_single(o.run.comm), [&] {
    const auto r = run_alg1(data, *s.loss, *s.domain, s.x0, P, outputs, o, rng, counter, trace);
    Vector v(2 + r.x.size());
    v[0] = r.halted ? 1 : 0;
    v[1] = static_cast<double>(r.halted_phase);
    v.tail(r.x.size()) = r.x;
    return v;
  });
  Alg1Result res{got.tail(got.size() - 2), got[0] != 0, static_cast<std::int64_t>(got[1])};
  MethodRun out{res.x, std::nullopt, P.certified};
  if (res.halted) {
    diag["halted_phase"] = res.halted_phase;
    out.abstained = fmt::format("the concentration test failed in phase {}", res.halted_phase);
  }
  return out;
}

// run_alg3 on rank 0 (several ranks: every user is there, users_on_root) and its result on every
// rank, sent as [halted, phase, step, steps run, x...]. One process: run_alg3.
Alg3Result alg3_on_root(const UserDataset& data, const Setting& s, const Alg3Plan& P,
                        const UserLevelOptions& o, Rng& rng, GradientCounter& counter,
                        UserLevelTrace* trace) {
  const Vector got = on_root(comm_or_single(o.run.comm), [&] {
    const auto r = run_alg3(data, *s.loss, *s.domain, s.x0, P, o, rng, counter, trace);
    Vector v(4 + r.x.size());
    v[0] = r.halted ? 1 : 0;
    v[1] = static_cast<double>(r.halted_phase);
    v[2] = static_cast<double>(r.halted_step);
    v[3] = static_cast<double>(r.steps_run);
    v.tail(r.x.size()) = r.x;
    return v;
  });
  return {got.tail(got.size() - 4), got[0] != 0, static_cast<std::int64_t>(got[1]),
          static_cast<std::int64_t>(got[2]), static_cast<std::int64_t>(got[3])};
}

MethodRun fit_alg3(const UserDataset& data, const Setting& s, const UserLevelOptions& o,
                   double rho, ReleaseBudget& account, Rng& rng, GradientCounter& counter,
                   nlohmann::json& diag, UserLevelTrace* trace) {
  const bool nonsmooth = o.method == UserLevelMethod::nonsmooth;
  const bool paper = o.profile == Profile::paper;
  const std::int64_t n = data.total_users(), m = data.items_per_user();
  const double eps = o.privacy.epsilon, delta = o.privacy.delta;
  // The shared gradient options map onto the practical profile: steps → T_i, clip → τ,
  // step_size → 1/L_f of AC-SA. The paper profile's schedule has no free step, clip or T.
  Alg3Options ao = o.alg3;
  ao.profile = o.profile;
  if (!paper) {
    ao.rho = rho;
    if (!ao.steps) ao.steps = o.steps;
    if (!ao.clip) ao.clip = o.clip;
    if (!ao.smoothness && o.step_size) ao.smoothness = 1 / *o.step_size;
  }
  ProblemConstants kk = s.k;
  if (nonsmooth) {
    // f must be L-Lipschitz on X + B(0, r) (Lemma D.1): L is taken on the enlarged domain.
    const Alg3Plan probe = plan_accelerated(n, m, eps, delta, kk, ao, true);
    kk.L = s.loss->lipschitz(data.feature_bound(), data.label_bound(), *s.domain,
                             probe.smoothing_radius);
    diag["L"] = kk.L;
  } else {
    require(s.k.beta.has_value(), "method 'accelerated' needs a smooth loss; use 'nonsmooth' for the " +
                                      s.loss->name() + " loss");
  }
  const Alg3Plan P = plan_accelerated(n, m, eps, delta, kk, ao, nonsmooth);
  diag["schedule"] = plan_json(P);
  if (!P.feasible) {
    throw InvalidArgument(fmt::format("{} cannot run at this size: {}", name_of(o.method), P.refusal));
  }
  // The phases' mechanisms (public given the plan), presented on every rank before rank 0 runs.
  Ledger parts;
  ParallelComposite phases = alg3_composite(rho);
  for (const Alg3Phase& ph : P.phases) {
    LedgerEntry steps = alg3_step_mechanism(P, ph, data.dim(), o.run.noise)
                            .ledger_entry(paper ? "filtered noisy gradients, Lemma C.2 coupling"
                                                : "exact clipped gradient sums");
    steps.count = static_cast<int>(ph.T_i);
    if (paper) {
      parts.push_back(AboveThreshold::entry(2.0, eps / 2, false, "concentration gate"));
      parts.push_back(steps);
    } else {
      phases.add_block({steps});
    }
  }
  account.claim(paper ? alg3_proved(eps, delta, std::move(parts)) : phases.entry());
  const Alg3Result res = alg3_on_root(data, s, P, o, rng, counter, trace);
  diag["steps_run"] = res.steps_run;
  MethodRun out{res.x, std::nullopt, P.certified};
  if (res.halted) {
    // The halting phase and step are AboveThreshold outputs.
    diag["halted_phase"] = res.halted_phase;
    diag["halted_step"] = res.halted_step;
    out.abstained = fmt::format("the concentration gate halted in phase {}, step {}",
                                res.halted_phase, res.halted_step);
  }
  return out;
}

// B0, B1 and the group baseline: one Gaussian mechanism per noisy gradient sum, planned here.
MethodRun fit_gradient(const UserDataset& data, const Setting& s, const UserLevelOptions& o,
                       double rho, ReleaseBudget& account, Rng& rng, GradientCounter& counter,
                       nlohmann::json& diag, UserLevelTrace* trace) {
  const std::int64_t m = data.items_per_user();
  GradientOptions g;
  g.steps = o.steps.value_or(20);
  // Default clip (B0, B1): L/(4√m), about the size of a per-user mean gradient near the optimum
  // (a clip only rescales the update). Default step: η = 4R/(cT), so that T clipped steps can
  // cross the domain (utility only; docs/results/user-level.md).
  const bool group = o.method == UserLevelMethod::dp_sgd_group;
  g.clip = o.clip.value_or(group ? s.k.L : s.k.L / (4 * std::sqrt(static_cast<double>(m))));
  g.step_size = o.step_size.value_or(4 * s.k.R / (g.clip * g.steps));
  g.noise = o.run.noise;
  g.threads = o.run.threads;
  g.sigma_scale = trace && trace->noiseless ? 0 : 1;
  g.rho = rho;
  if (trace) g.hook = trace->on_user;
  g.comm = o.run.comm;  // every gradient baseline runs over ranks
  g.account = &account;  // the run presents its mechanism's entry before its first draw
  diag["steps"] = g.steps;
  diag["step_size"] = g.step_size;
  diag["clip"] = g.clip;
  GradientRun run;
  if (o.method == UserLevelMethod::dp_gd_user) {
    run = user_dp_gd(data, *s.loss, *s.domain, s.x0, g, rng, counter);
  } else if (o.method == UserLevelMethod::dp_sgd_user) {
    run = user_dp_sgd(data, *s.loss, *s.domain, s.x0, g, rng, counter);
  } else {
    run = item_dp_sgd_group(data, *s.loss, *s.domain, s.x0, g, rng, counter);
  }
  diag["noise_sigma_sum"] = run.sigma;
  return {run.x, std::nullopt, true};
}

// dp-gd-filter (filter.hpp, docs/proofs/user-level.md §3.1): both mechanisms planned and charged
// before the first draw; defaults as B0 (clip L/(4√m), η = 4R/(cT)), r = c/2.
MethodRun fit_filter(const UserDataset& data, const Setting& s, const UserLevelOptions& o,
                     double rho, ReleaseBudget& account, Rng& rng, GradientCounter& counter,
                     nlohmann::json& diag, UserLevelTrace* trace) {
  FilterOptions f;
  f.steps = o.steps.value_or(20);
  f.clip = o.clip.value_or(s.k.L / (4 * std::sqrt(static_cast<double>(data.items_per_user()))));
  f.radius = kFilterRadiusOverClip * f.clip;
  f.step_size = o.step_size.value_or(4 * s.k.R / (f.clip * f.steps));
  f.rho = rho;
  f.noise = o.run.noise;
  f.noiseless = trace && trace->noiseless;
  if (trace) f.hook = trace->on_user;
  f.comm = o.run.comm;
  f.account = &account;  // the run presents plan_filter's entries before its first draw
  const GradientRun run = filtered_dp_gd(data, *s.loss, *s.domain, s.x0, f, rng, counter);
  diag["steps"] = f.steps;
  diag["step_size"] = f.step_size;
  diag["clip"] = f.clip;
  diag["filter_radius"] = f.radius;
  diag["filter_centre_share"] = f.centre_share;
  return {run.x, std::nullopt, true};
}

// run, part 2: the method on the bounded users (`rho`: what the scale step left), its mechanisms'
// entries claiming their planned places before they draw.
MethodRun run_method(const UserDataset& work, const UserLevelOptions& o, double rho,
                     ReleaseBudget& account, Rng& rng, nlohmann::json& diag,
                     UserLevelTrace* trace) {
  Communicator& comm = comm_or_single(o.run.comm);
  const bool priv = o.method != UserLevelMethod::non_private;
  // Several ranks, a method that walks the users in one sequential pass: rank 0 runs it on every
  // rank's users (users_on_root: the one-process users, bit for bit); the others plan alike.
  const bool sequential = o.method == UserLevelMethod::phased_sgd ||
                          o.method == UserLevelMethod::accelerated ||
                          o.method == UserLevelMethod::nonsmooth;
  std::optional<UserDataset> stacked;
  if (sequential && comm.size() > 1) stacked.emplace(users_on_root(comm, work));
  const UserDataset& all = stacked ? *stacked : work;
  const Setting s = make_setting(work, o);
  diag["L"] = s.k.L;
  diag["R"] = s.k.R;
  if (s.k.beta) diag["beta"] = *s.k.beta;
  if (priv && !paper_method(o)) diag["profile"] = name_of(o.profile);
  GradientCounter counter;
  MethodRun run;
  // run, part 2: each method presents its mechanisms' entries before they draw.
  switch (o.method) {
    case UserLevelMethod::phased_sgd:
      run = fit_phased(all, s, o, rho, account, rng, counter, diag, trace);
      break;
    case UserLevelMethod::accelerated:
    case UserLevelMethod::nonsmooth:
      run = fit_alg3(all, s, o, rho, account, rng, counter, diag, trace);
      break;
    case UserLevelMethod::non_private: {
      const double eta = o.step_size.value_or(
          s.k.R / (s.k.L * std::sqrt(static_cast<double>(work.num_users() * work.items_per_user()))));
      diag["step_size"] = eta;
      run.x = non_private_sgd(work, *s.loss, *s.domain, s.x0, eta, rng, counter);
      run.certified = false;
      break;
    }
    case UserLevelMethod::dp_gd_filter:
      run = fit_filter(work, s, o, rho, account, rng, counter, diag, trace);
      break;
    default:
      run = fit_gradient(work, s, o, rho, account, rng, counter, diag, trace);
  }
  diag["profile"] = name_of(o.profile);
  diag["gradient_evaluations"] = allreduce_count(comm, counter.evaluations);
  return run;
}

}  // namespace dpstats::optimize::user_level_detail
