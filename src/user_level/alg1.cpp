// Alg 1 of the user-level fit: its schedule (plan_alg1) and phases, and the run.
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

namespace dpstats::optimize {

// ---------------------------------------------------------------------------------------------
// Alg 1 schedule (docs/proofs/user-level.md §2.2, §2.7)

namespace {

// Thm B.1's side conditions, as warnings (the paper profile runs outside them when asked).
void paper_warnings(Alg1Plan& P, double nd, double md, double epsilon, double delta,
                    const ProblemConstants& k) {
  if (epsilon > 10) P.warnings.push_back("epsilon > 10: outside Thm B.1");
  if (delta >= 1 / (nd * md)) P.warnings.push_back("delta >= 1/(nm): outside the utility theorem");
  if (P.n_condition_lhs < P.n_condition_rhs)
    P.warnings.push_back("n^(1-q) < 100/(1-2^-q)·ln(n/δ)/ε: outside Thm B.1");
  // The Laplace good event needs C >= 150·ln(20e^ε/δ)/ε.
  if (P.C < 150 * std::log(20 * std::exp(epsilon) / delta) / epsilon)
    P.warnings.push_back("C < 150·ln(20e^ε/δ)/ε: the Laplace good event is not 1 − δ/(10e^ε)");
  if (k.beta && *k.beta > k.L / k.R * std::sqrt(static_cast<double>(k.d) * md * nd * epsilon))
    P.warnings.push_back("β > (L/R)·√(dmnε): η_i > 1/β, outside Thm B.1");
}

// The phases of Alg 1 (sizes, groups, steps, τ_i, σ_i) from public values.
void alg1_phases(Alg1Plan& P, std::int64_t n, std::int64_t m, double epsilon, double delta,
                 const ProblemConstants& k, const Alg1Options& o, double shrink) {
  const bool paper = o.profile == Profile::paper;
  const double nd = static_cast<double>(n), md = static_cast<double>(m);
  const double lnndm = std::log(nd * static_cast<double>(k.d) * md);
  std::int64_t offset = 0;
  for (std::int64_t i = 1; i <= P.l; ++i) {
    Alg1Phase ph;
    const double level = paper ? static_cast<double>(i) : static_cast<double>(i - 1);
    ph.n_i = static_cast<std::int64_t>(std::floor(shrink * nd / std::exp2(level * P.q)));
    ph.eta_i = P.eta / std::exp2(P.p * static_cast<double>(i));
    if (paper) {
      ph.groups = P.C;
    } else {
      ph.groups = o.groups ? *o.groups
                           : std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(
                                                           std::sqrt(static_cast<double>(ph.n_i)))));
      require(ph.groups >= 1, "groups must be >= 1");
    }
    ph.N_i = ph.n_i / ph.groups;
    if (!paper && offset + ph.groups * ph.N_i > n) ph.N_i = (n - offset) / ph.groups;
    if (ph.N_i < 1) {
      if (paper) {
        P.feasible = false;
        P.refusal = "phase " + std::to_string(i) + ": N_i = ⌊n_i/C⌋ = ⌊" +
                    std::to_string(ph.n_i) + "/" + std::to_string(P.C) +
                    "⌋ < 1 (paper constants need more users)";
        P.phases.push_back(ph);
        break;
      }
      break;  // practical: stop when a phase has no users left
    }
    ph.T_i = ph.N_i * m;
    const double Ti = static_cast<double>(ph.T_i);
    if (paper) {
      ph.tau_i = 1000 * ph.eta_i * k.L * std::sqrt(Ti) * lnndm;
      ph.sigma_i = 100 * ph.tau_i * std::pow(std::log(nd / delta), 2) /
                   (epsilon * static_cast<double>(P.C));
    } else {
      require(o.c_tau > 0, "c_tau must be > 0");
      ph.tau_i = o.c_tau * ph.eta_i * k.L * Ti;
      // σ of the secure Gaussian on the mean displacement: Δ = (exact-sum sensitivity)/C_i.
      const ClippedVectorSum probe(k.d, ph.tau_i, ph.groups);
      ph.sigma_i = probe.sensitivity() / static_cast<double>(ph.groups) / std::sqrt(2 * P.rho);
    }
    offset += ph.groups * ph.N_i;
    P.gradient_evaluations += ph.groups * ph.N_i * m;
    P.users_used += ph.groups * ph.N_i;
    P.phases.push_back(ph);
  }
}

}  // namespace

Alg1Plan plan_alg1(std::int64_t n, std::int64_t m, double epsilon, double delta,
                   const ProblemConstants& k, const Alg1Options& o) {
  check_problem(n, m, epsilon, delta, k, "Alg 1");
  Alg1Plan P;
  P.profile = o.profile;
  const double nd = static_cast<double>(n), md = static_cast<double>(m);
  const bool paper = o.profile == Profile::paper;
  P.q = o.q.value_or(paper ? 0.1 : 1.0);
  check_positive(P.q, "q");
  // J with m <= n^J (docs/proofs/user-level.md [choice]: J = max(ln m / ln n, small)); p = J + 3/2.
  P.J = std::max(std::log(md) / std::log(nd), 1e-3);
  P.p = o.p.value_or(paper ? P.J + 1.5 : 1.0);
  check_positive(P.p, "p");
  P.eta = o.eta.value_or(k.R / (k.L * std::sqrt(static_cast<double>(k.d) * md * nd * epsilon)));
  check_positive(P.eta, "eta");
  P.l = static_cast<std::int64_t>(std::floor(std::log2(nd)));
  if (o.num_phases) {
    require(*o.num_phases >= 1, "num_phases must be >= 1");
    P.l = std::min<std::int64_t>(P.l, *o.num_phases);
  }
  const double shrink = 1 - std::exp2(-P.q);
  P.n_condition_lhs = std::pow(nd, 1 - P.q);
  P.n_condition_rhs = 100 / shrink * std::log(nd / delta) / epsilon;
  if (paper) {
    P.C_raw = 100 * std::log(20 * nd * md * std::exp(epsilon) / delta) / epsilon;
    P.C = static_cast<std::int64_t>(std::ceil(P.C_raw));
    paper_warnings(P, nd, md, epsilon, delta, k);
    P.certified = true;
  } else {
    P.rho = o.rho.value_or(epsilon_delta_to_zcdp(epsilon, delta));
    check_positive(P.rho, "rho");
    P.certified = true;
  }
  alg1_phases(P, n, m, epsilon, delta, k, o, shrink);
  if (!paper) P.l = static_cast<std::int64_t>(P.phases.size());
  if (P.phases.empty()) {
    P.feasible = false;
    P.refusal = "no phase has a user";
  }
  if (paper && o.num_phases) {
    P.warnings.push_back("num_phases caps l: privacy unchanged, the risk bound no longer applies");
  }
  if (paper && !P.feasible) P.certified = false;
  return P;
}

// ---------------------------------------------------------------------------------------------

ProblemConstants problem_constants(const UserDataset& data, const Loss& loss,
                                   const Domain& domain) {
  ProblemConstants k;
  k.L = loss.lipschitz(data.feature_bound(), data.label_bound(), domain);
  k.R = domain.diameter();
  k.beta = loss.smoothness(data.feature_bound());
  k.d = data.dim();
  return k;
}

namespace user_level_detail {

nlohmann::json plan_json(const Alg1Plan& P) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& ph : P.phases) {
    phases.push_back({{"n_i", ph.n_i}, {"groups", ph.groups}, {"N_i", ph.N_i}, {"T_i", ph.T_i},
                      {"eta_i", ph.eta_i}, {"tau_i", ph.tau_i}, {"sigma_i", ph.sigma_i}});
  }
  return {{"J", P.J}, {"p", P.p}, {"q", P.q}, {"eta", P.eta}, {"C", P.C}, {"l", P.l},
          {"phases", phases}, {"planned_gradient_evaluations", P.gradient_evaluations},
          {"users_used", P.users_used}, {"warnings", P.warnings}};
}

nlohmann::json plan_json(const Alg3Plan& P) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& ph : P.phases) {
    phases.push_back({{"n_i", ph.n_i}, {"T_i", ph.T_i}, {"K_i", ph.K_i}, {"lambda_i", ph.lambda_i},
                      {"L_f", ph.L_f}, {"stage_length", ph.stage_length},
                      {"sigma_i", ph.sigma_i}, {"sensitivity", ph.sensitivity}});
  }
  nlohmann::json j = {{"q", P.q}, {"p", P.p}, {"lambda", P.lambda}, {"tau", P.tau},
                      {"beta", P.beta}, {"l", P.l}, {"phases", phases},
                      {"planned_gradient_evaluations", P.gradient_evaluations},
                      {"users_used", P.users_used}, {"warnings", P.warnings}};
  if (P.nonsmooth) j["smoothing_radius"] = P.smoothing_radius;
  return j;
}

// One phase's groups: C group iterates by one-pass SGD from `start` on disjoint user groups. The
// groups' item orders are drawn first, in group order (the same draws as one group at a time:
// SGD itself draws nothing); the C runs are independent and run on up to `threads` threads.
std::vector<Vector> group_iterates(const UserDataset& data, const Loss& loss, const Domain& X,
                                   const Vector& start, const Alg1Phase& ph, std::int64_t phase,
                                   const std::vector<std::int64_t>& perm, std::int64_t offset,
                                   int threads, Rng& rng, GradientCounter& counter,
                                   UserLevelTrace* trace) {
  using Items = std::vector<std::pair<std::int64_t, std::int64_t>>;
  const std::int64_t m = data.items_per_user();
  const auto C = static_cast<std::size_t>(ph.groups);
  std::vector<Items> orders(C);
  for (std::size_t j = 0; j < C; ++j) {
    Items items;
    items.reserve(static_cast<std::size_t>(ph.T_i));
    for (std::int64_t a = 0; a < ph.N_i; ++a) {
      const std::int64_t u = perm[static_cast<std::size_t>(offset + static_cast<std::int64_t>(j) * ph.N_i + a)];
      if (trace && trace->on_user) trace->on_user(phase, static_cast<std::int64_t>(j), u);
      for (std::int64_t k = 0; k < m; ++k) items.emplace_back(u, k);
    }
    const auto order = random_permutation(static_cast<std::int64_t>(items.size()), rng);
    orders[j].reserve(items.size());
    for (auto idx : order) orders[j].push_back(items[static_cast<std::size_t>(idx)]);
  }
  std::vector<Vector> out(C);
  std::vector<GradientCounter> counters(C);
  parallel_tasks(C, threads, [&](std::size_t j) {
    out[j] = projected_sgd(data, loss, X, start, ph.eta_i, orders[j], counters[j]);
  });
  for (const auto& c : counters) counter.evaluations += c.evaluations;
  return out;
}

// Alg 1's mechanisms, public given the plan: the paper's score test (Laplace(20/ε), sensitivity 2)
// and Gaussian output (σ_i, the Lemma B.2 coupling sensitivity), the practical profile's Gaussian
// at ρ on the exact sum of the displacements clipped to τ_i.
LaplaceMechanism alg1_test(double eps, NoiseMode noise) { return LaplaceMechanism(2.0, eps / 10, 1, noise); }

GaussianMechanism alg1_paper_output(const Alg1Phase& ph, const UserLevelOptions& o, std::int64_t d) {
  const double zeta = o.privacy.delta / (10 * std::exp(o.privacy.epsilon));
  const double sens = ph.tau_i * std::log(1 / zeta) / static_cast<double>(ph.groups);
  return GaussianMechanism::from_sigma(sens, ph.sigma_i, static_cast<std::size_t>(d), o.run.noise);
}

GaussianMechanism alg1_practical_output(const Alg1Phase& ph, double rho, std::int64_t d,
                                        NoiseMode noise) {
  return GaussianMechanism::from_rho(ClippedVectorSum(d, ph.tau_i, ph.groups).sensitivity(), rho,
                                     static_cast<std::size_t>(d), noise);
}

// Alg 1 paper, lines 8–14 for one phase: the score test, the randomized filter and the Gaussian
// output; nullopt when the test fails (the run halts).
std::optional<Vector> paper_phase(const std::vector<Vector>& it, const Alg1Phase& ph,
                                  const Vector& start, const UserLevelOptions& o, bool noisy,
                                  Rng& rng, UserLevelTrace* trace) {
  const std::int64_t C = ph.groups, d = start.size();
  const double eps = o.privacy.epsilon;
  // Lines 8–10: concentration score at radius τ_i, Laplace(20/ε) test (sensitivity 2).
  double pairs = 0;
  std::vector<std::int64_t> h(static_cast<std::size_t>(C), 0);
  for (std::int64_t a = 0; a < C; ++a) {
    for (std::int64_t b = 0; b < C; ++b) {
      const double dist = (it[static_cast<std::size_t>(a)] - it[static_cast<std::size_t>(b)]).norm();
      if (dist <= ph.tau_i) pairs += 1;
      if (dist <= 2 * ph.tau_i) ++h[static_cast<std::size_t>(a)];
    }
  }
  const double s = pairs / static_cast<double>(C);
  const LaplaceMechanism lap = alg1_test(eps, o.run.noise);
  const double noisy_s = noisy ? lap.apply(s, rng) : s;
  const bool pass = noisy_s >= 4.0 * static_cast<double>(C) / 5;
  if (trace) trace->phase_passed.push_back(pass ? 1 : 0);
  if (!pass) return std::nullopt;
  // Lines 11–13: keep j with probability p(h_j) = clamp(6h/C − 3, 0, 1), drawn exactly as
  // U < 6h − 3C with U uniform on {0..C−1}.
  Vector mean = Vector::Zero(d);
  std::int64_t kept = 0;
  for (std::int64_t j = 0; j < C; ++j) {
    const std::int64_t w = 6 * h[static_cast<std::size_t>(j)] - 3 * C;
    const bool keep = w > 0 && static_cast<std::int64_t>(
                                   rng.uniform_below(static_cast<std::uint64_t>(C))) < w;
    if (keep) {
      mean += it[static_cast<std::size_t>(j)];
      ++kept;
    }
  }
  if (trace) trace->kept.push_back(kept);
  mean = kept > 0 ? Vector(mean / static_cast<double>(kept)) : start;
  // Line 14: x_i = x̃_i + N(0, σ_i² I).
  if (!noisy) return mean;
  return Vector(alg1_paper_output(ph, o, d).apply(mean, rng));
}

// Alg 1 practical for one phase: exact sum of the displacements clipped to τ_i, `output`'s noise.
Vector practical_phase(const std::vector<Vector>& it, const Alg1Phase& ph,
                       const GaussianMechanism& output, const Vector& start, bool noisy, Rng& rng) {
  const std::int64_t d = start.size();
  ClippedVectorSum sum(d, ph.tau_i, ph.groups);
  for (const auto& v : it) sum.add(v - start);
  Vector disp = sum.sum();
  if (noisy) disp = output.apply(disp, rng);
  return start + disp / static_cast<double>(ph.groups);
}

// `outputs`: the practical profile's phase mechanisms (alg1_practical_output), whose entries the
// release presented.
Alg1Result run_alg1(const UserDataset& data, const Loss& loss, const Domain& X, const Vector& x0,
                    const Alg1Plan& P, const std::vector<GaussianMechanism>& outputs,
                    const UserLevelOptions& o, Rng& rng, GradientCounter& counter,
                    UserLevelTrace* trace) {
  const bool paper = P.profile == Profile::paper;
  const auto perm = random_permutation(data.num_users(), rng);
  Vector x = x0;
  Alg1Result res;
  std::int64_t offset = 0;
  const bool noisy = !(trace && trace->noiseless);
  for (std::size_t i = 0; i < P.phases.size(); ++i) {
    const Alg1Phase& ph = P.phases[i];
    Vector start = x;
    X.project(start);
    auto it = group_iterates(data, loss, X, start, ph, static_cast<std::int64_t>(i + 1), perm,
                             offset, o.run.threads, rng, counter, trace);
    offset += ph.groups * ph.N_i;
    if (trace) trace->group_iterates = it;
    if (!paper) {
      x = practical_phase(it, ph, outputs[i], start, noisy, rng);
      continue;
    }
    const auto out = paper_phase(it, ph, start, o, noisy, rng, trace);
    if (!out) {  // the abstention carries no estimate
      res.halted = true;
      res.halted_phase = static_cast<std::int64_t>(i + 1);
      return res;
    }
    x = *out;
  }
  X.project(x);
  res.x = x;
  return res;
}

}  // namespace user_level_detail

}  // namespace dpstats::optimize
