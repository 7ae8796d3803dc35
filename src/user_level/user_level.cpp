#include "dpstats/user_level/user_level.hpp"

#include <cmath>
#include <limits>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/user_level/accelerated.hpp"
#include "dpstats/solvers/exact_sum.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats::optimize {

const char* to_string(UserLevelMethod m) {
  switch (m) {
    case UserLevelMethod::phased_sgd: return "phased-sgd";
    case UserLevelMethod::accelerated: return "accelerated";
    case UserLevelMethod::nonsmooth: return "nonsmooth";
    case UserLevelMethod::dp_gd_user: return "dp-gd-user";
    case UserLevelMethod::dp_sgd_user: return "dp-sgd-user";
    case UserLevelMethod::dp_sgd_group: return "dp-sgd-group";
    case UserLevelMethod::non_private: return "non-private";
  }
  return "?";
}

UserLevelMethod parse_user_level_method(const std::string& s) {
  for (auto m : {UserLevelMethod::phased_sgd, UserLevelMethod::accelerated,
                 UserLevelMethod::nonsmooth, UserLevelMethod::dp_gd_user,
                 UserLevelMethod::dp_sgd_user, UserLevelMethod::dp_sgd_group,
                 UserLevelMethod::non_private}) {
    if (s == to_string(m)) return m;
  }
  throw InvalidArgument(
      "method must be 'phased-sgd', 'accelerated', 'nonsmooth', 'dp-gd-user', 'dp-sgd-user', "
      "'dp-sgd-group' or 'non-private', got '" + s + "'");
}

// ---------------------------------------------------------------------------------------------
// Alg 1 schedule (card §2.2, §2.7)

Alg1Plan plan_alg1(std::int64_t n, std::int64_t m, double epsilon, double delta,
                   const ProblemConstants& k, const Alg1Options& o) {
  require(n >= 2, "Alg 1 needs n >= 2 users");
  require(m >= 1, "items per user m must be >= 1");
  check_epsilon(epsilon);
  check_delta_positive(delta);
  check_positive(k.L, "L");
  check_positive(k.R, "R");
  require(k.d >= 1, "d must be >= 1");
  Alg1Plan P;
  P.profile = o.profile;
  const double nd = static_cast<double>(n), md = static_cast<double>(m);
  const bool paper = o.profile == UserLevelProfile::paper;
  P.q = o.q.value_or(paper ? 0.1 : 1.0);
  check_positive(P.q, "q");
  // J with m <= n^J (card [choice]: J = max(ln m / ln n, small)); p = J + 3/2.
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
    if (epsilon > 10) P.warnings.push_back("epsilon > 10: outside Thm B.1");
    if (delta >= 1 / (nd * md)) P.warnings.push_back("delta >= 1/(nm): outside the utility theorem");
    if (P.n_condition_lhs < P.n_condition_rhs)
      P.warnings.push_back("n^(1-q) < 100/(1-2^-q)·ln(n/δ)/ε: outside Thm B.1");
    // Card §4.1: the good event needs C >= 150·ln(20e^ε/δ)/ε.
    if (P.C < 150 * std::log(20 * std::exp(epsilon) / delta) / epsilon)
      P.warnings.push_back("C < 150·ln(20e^ε/δ)/ε: the Laplace good event is not 1 − δ/(10e^ε)");
    if (k.beta && *k.beta > k.L / k.R * std::sqrt(static_cast<double>(k.d) * md * nd * epsilon))
      P.warnings.push_back("β > (L/R)·√(dmnε): η_i > 1/β, outside Thm B.1");
    P.certified = true;
  } else {
    P.rho = epsilon_delta_to_zcdp(epsilon, delta);
    P.certified = true;
  }
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

namespace {

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

struct Alg1Result {
  Vector x;
  bool halted = false;
  std::int64_t halted_phase = 0;
};

// One phase's groups: C group iterates by one-pass SGD from `start` on disjoint user groups.
std::vector<Vector> group_iterates(const UserDataset& data, const Loss& loss, const Domain& X,
                                   const Vector& start, const Alg1Phase& ph, std::int64_t phase,
                                   const std::vector<std::int64_t>& perm, std::int64_t offset,
                                   Rng& rng, GradientCounter& counter, UserLevelTrace* trace) {
  const std::int64_t m = data.items_per_user();
  std::vector<Vector> out;
  out.reserve(static_cast<std::size_t>(ph.groups));
  for (std::int64_t j = 0; j < ph.groups; ++j) {
    std::vector<std::pair<std::int64_t, std::int64_t>> items;
    items.reserve(static_cast<std::size_t>(ph.T_i));
    for (std::int64_t a = 0; a < ph.N_i; ++a) {
      const std::int64_t u = perm[static_cast<std::size_t>(offset + j * ph.N_i + a)];
      if (trace && trace->on_user) trace->on_user(phase, j, u);
      for (std::int64_t k = 0; k < m; ++k) items.emplace_back(u, k);
    }
    const auto order = random_permutation(static_cast<std::int64_t>(items.size()), rng);
    std::vector<std::pair<std::int64_t, std::int64_t>> shuffled;
    shuffled.reserve(items.size());
    for (auto idx : order) shuffled.push_back(items[static_cast<std::size_t>(idx)]);
    out.push_back(projected_sgd(data, loss, X, start, ph.eta_i, shuffled, counter));
  }
  return out;
}

Alg1Result run_alg1(const UserDataset& data, const Loss& loss, const Domain& X, const Vector& x0,
                    const Alg1Plan& P, const UserLevelOptions& o, Rng& rng,
                    GradientCounter& counter, Ledger& ledger) {
  const bool paper = P.profile == UserLevelProfile::paper;
  const std::int64_t d = data.dim();
  const auto perm = random_permutation(data.num_users(), rng);
  Vector x = x0;
  Vector fallback = Vector::Zero(d);
  X.project(fallback);
  Alg1Result res;
  std::int64_t offset = 0;
  const double eps = o.epsilon;
  for (std::size_t i = 0; i < P.phases.size(); ++i) {
    const Alg1Phase& ph = P.phases[i];
    Vector start = x;
    X.project(start);
    auto it = group_iterates(data, loss, X, start, ph, static_cast<std::int64_t>(i + 1), perm,
                             offset, rng, counter, o.trace);
    offset += ph.groups * ph.N_i;
    if (o.trace) o.trace->group_iterates = it;
    const std::int64_t C = ph.groups;
    if (paper) {
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
      const LaplaceMechanism lap(2.0, eps / 10, 1, o.noise);
      const double noisy_s = o.sigma_scale == 0 ? s : lap.apply(s, rng);
      const bool pass = noisy_s >= 4.0 * static_cast<double>(C) / 5;
      if (o.trace) o.trace->phase_passed.push_back(pass ? 1 : 0);
      if (!pass) {
        res.halted = true;
        res.halted_phase = static_cast<std::int64_t>(i + 1);
        res.x = fallback;
        return res;
      }
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
      if (o.trace) o.trace->kept.push_back(kept);
      mean = kept > 0 ? Vector(mean / static_cast<double>(kept)) : start;
      // Line 14: x_i = x̃_i + N(0, σ_i² I).
      if (o.sigma_scale == 0) {
        x = mean;
      } else {
        const double zeta = o.delta / (10 * std::exp(eps));
        const double sens = ph.tau_i * std::log(1 / zeta) / static_cast<double>(C);
        const auto g = GaussianMechanism::from_sigma(sens, ph.sigma_i * o.sigma_scale,
                                                     static_cast<std::size_t>(d), o.noise);
        x = g.apply(mean, rng);
      }
    } else {
      // Practical: exact sum of the displacements clipped to τ_i, secure Gaussian at ρ.
      ClippedVectorSum sum(d, ph.tau_i, C);
      for (const auto& v : it) sum.add(v - start);
      Vector disp = sum.sum();
      if (o.sigma_scale != 0) {
        const auto g = GaussianMechanism::from_rho(sum.sensitivity(),
                                                   P.rho / (o.sigma_scale * o.sigma_scale),
                                                   static_cast<std::size_t>(d), o.noise);
        disp = g.apply(disp, rng);
      }
      x = start + disp / static_cast<double>(C);
    }
  }
  X.project(x);
  res.x = x;
  (void)ledger;
  return res;
}

}  // namespace

Release<Vector> fit_user_level(const UserDataset& data, const UserLevelOptions& o, Rng& rng) {
  check_epsilon(o.epsilon);
  check_delta_positive(o.delta);
  require(o.sigma_scale >= 0, "sigma_scale must be >= 0");
  const auto loss = make_loss(o.loss);
  std::shared_ptr<const Domain> domain = o.domain;
  if (!domain) domain = std::make_shared<Ball>(Vector::Zero(data.dim()), o.domain_radius);
  require(domain->dimension() == data.dim(),
          "domain dimension " + std::to_string(domain->dimension()) +
              " must equal the number of features " + std::to_string(data.dim()));
  const ProblemConstants k = problem_constants(data, *loss, *domain);
  Vector x0 = o.x0 ? *o.x0 : domain->center();
  require(x0.size() == data.dim(), "x0 must have the feature dimension");
  const std::int64_t n = data.num_users(), m = data.items_per_user();

  Release<Vector> r;
  r.seeded = rng.seeded();
  r.noise = o.noise;
  r.privacy.epsilon = o.epsilon;
  r.privacy.delta = o.delta;
  r.privacy.unit = PrivacyUnit::user;
  r.privacy.neighbouring = Neighbouring::replace_one;
  r.privacy.certified = o.noise == NoiseMode::secure && o.sigma_scale == 1;
  nlohmann::json& diag = r.diagnostics;
  diag["method"] = to_string(o.method);
  diag["loss"] = loss->name();
  diag["n_users"] = n;
  diag["items_per_user"] = m;
  diag["L"] = k.L;
  diag["R"] = k.R;
  if (k.beta) diag["beta"] = *k.beta;
  GradientCounter counter;

  const double rho = epsilon_delta_to_zcdp(o.epsilon, o.delta);
  const int default_steps = 20;
  GradientOptions g;
  g.steps = o.steps.value_or(default_steps);
  require(g.steps >= 1, "steps must be >= 1");
  // Default clip (B0, B1): L/(4√m), about the size of a per-user mean gradient near the optimum
  // (a clip only rescales the update; docs/results/user-level.md). Default step: η = 4R/(cT), so
  // that one clipped step moves at most R/5·(4/T)·T/4 = R/5 and T steps can cross the domain; the
  // study's tuned steps were of this size, far above 1/β (utility only).
  const double default_clip = k.L / (4 * std::sqrt(static_cast<double>(m)));
  const double clip = o.clip.value_or(o.method == UserLevelMethod::dp_sgd_group ? k.L : default_clip);
  g.step_size = o.step_size.value_or(4 * k.R / (clip * g.steps));
  g.noise = o.noise;
  g.sigma_scale = o.sigma_scale;
  g.rho = rho;
  if (o.trace) g.hook = o.trace->on_user;

  if (o.method == UserLevelMethod::phased_sgd) {
    const Alg1Plan P = plan_alg1(n, m, o.epsilon, o.delta, k, o.alg1);
    diag["profile"] = o.alg1.profile == UserLevelProfile::paper ? "paper" : "practical";
    diag["schedule"] = plan_json(P);
    if (!P.feasible) throw InvalidArgument("phased-sgd cannot run at this size: " + P.refusal);
    Budget budget(PrivacyLoss::approximate(o.epsilon, o.delta),
                  o.alg1.profile == UserLevelProfile::paper ? Accountant::basic : Accountant::zcdp);
    if (o.alg1.profile == UserLevelProfile::paper) {
      // Thm B.1, per phase (phases on disjoint users compose in parallel): the test is ε/10-DP
      // (charged ε/4), the filter's coupling and the Gaussian take the rest (card §2.2).
      budget.spend({"laplace", "score test per phase (parallel over phases), scale 20/eps", 2,
                    20 / o.epsilon, PrivacyLoss::pure(o.epsilon / 4), 1});
      // Sensitivity of the phase-1 filtered mean as Lemma B.2 bounds it, with its "≲" read as 1.
      const double coupling = P.phases.front().tau_i *
                              std::log(10 * std::exp(o.epsilon) / o.delta) /
                              static_cast<double>(P.C);
      budget.spend({"gaussian", "phase outputs (parallel over phases), Lemma B.2 coupling",
                    coupling, P.phases.front().sigma_i,
                    PrivacyLoss::approximate(remainder_after(o.epsilon, o.epsilon / 4), o.delta),
                    1});
    } else {
      budget.spend({"gaussian", "phase outputs (disjoint users: parallel composition)",
                    P.phases.front().sigma_i * std::sqrt(2 * P.rho), P.phases.front().sigma_i,
                    PrivacyLoss::zcdp(P.rho), 1});
      r.privacy.rho = P.rho;
    }
    r.privacy.certified = r.privacy.certified && P.certified;
    const auto res = run_alg1(data, *loss, *domain, x0, P, o, rng, counter, r.ledger);
    r.ledger = budget.ledger();
    r.estimate = res.x;
    if (res.halted) {
      r.status = Status::abstained;
      diag["halted_phase"] = res.halted_phase;
    }
  } else if (o.method == UserLevelMethod::accelerated || o.method == UserLevelMethod::nonsmooth) {
    const bool nonsmooth = o.method == UserLevelMethod::nonsmooth;
    const bool paper = o.alg3.profile == UserLevelProfile::paper;
    // The shared gradient options map onto the practical profile: steps → T_i, clip → τ,
    // step_size → 1/L_f of AC-SA. The paper profile's schedule has no free step, clip or T.
    Alg3Options ao = o.alg3;
    if (paper) {
      require(!o.steps && !o.clip && !o.step_size,
              "steps, clip and step_size do not apply to the paper profile of Alg 3 (its "
              "schedule fixes T_i, τ and L_f)");
    } else {
      if (!ao.steps) ao.steps = o.steps;
      if (!ao.clip) ao.clip = o.clip;
      if (!ao.smoothness && o.step_size) {
        check_positive(*o.step_size, "step_size");
        ao.smoothness = 1 / *o.step_size;
      }
    }
    ProblemConstants kk = k;
    if (nonsmooth) {
      // f must be L-Lipschitz on X + B(0, r) (Lemma D.1): L is taken on the enlarged domain.
      const Alg3Plan probe = plan_accelerated(n, m, o.epsilon, o.delta, kk, ao, true);
      kk.L = loss->lipschitz(data.feature_bound(), data.label_bound(), *domain,
                             probe.smoothing_radius);
      diag["L"] = kk.L;
    } else {
      require(k.beta.has_value(),
              "method 'accelerated' needs a smooth loss; use 'nonsmooth' for the " +
                  loss->name() + " loss");
    }
    const Alg3Plan P = plan_accelerated(n, m, o.epsilon, o.delta, kk, ao, nonsmooth);
    diag["profile"] = paper ? "paper" : "practical";
    diag["schedule"] = plan_json(P);
    if (!P.feasible) throw InvalidArgument(std::string(to_string(o.method)) +
                                           " cannot run at this size: " + P.refusal);
    Budget budget(PrivacyLoss::approximate(o.epsilon, o.delta),
                  paper ? Accountant::basic : Accountant::zcdp);
    const Alg3Phase& p1 = P.phases.front();
    if (paper) {
      // Thm C.1 per phase (phases on disjoint users compose in parallel): the gate's pass bits
      // are one AboveThreshold, ε/2; the filtered noisy gradients ε/2 by amplification and
      // advanced composition over T_i steps, with the Lemma C.2 coupling sensitivity.
      budget.spend({"above_threshold",
                    "concentration gate per phase (parallel), Lap(8/eps) threshold, Lap(16/eps) "
                    "queries, sensitivity 2",
                    2, 16 / o.epsilon, PrivacyLoss::pure(o.epsilon / 2), 1});
      budget.spend({"gaussian",
                    "filtered noisy gradients per phase (parallel), Lemma C.2 coupling; "
                    "amplification + advanced composition over T_i",
                    p1.sensitivity, p1.sigma_i,
                    PrivacyLoss::approximate(remainder_after(o.epsilon, o.epsilon / 2), o.delta),
                    1});
    } else {
      budget.spend({"gaussian",
                    "exact clipped gradient sums, T_i steps at rho/T_i per phase (disjoint "
                    "phases: parallel)",
                    p1.sensitivity * static_cast<double>(p1.K_i), p1.sigma_i * static_cast<double>(p1.K_i),
                    PrivacyLoss::zcdp(P.rho), 1});
      r.privacy.rho = P.rho;
    }
    r.privacy.certified = r.privacy.certified && P.certified;
    const auto res = run_alg3(data, *loss, *domain, x0, P, o, rng, counter);
    r.ledger = budget.ledger();
    r.estimate = res.x;
    diag["steps_run"] = res.steps_run;
    if (res.halted) {
      // The halting phase and step are AboveThreshold outputs (card §4.3).
      r.status = Status::abstained;
      diag["halted_phase"] = res.halted_phase;
      diag["halted_step"] = res.halted_step;
    }
  } else if (o.method == UserLevelMethod::non_private) {
    r.privacy.epsilon = std::numeric_limits<double>::infinity();
    r.privacy.delta = 1;
    r.privacy.certified = false;
    const double eta = o.step_size.value_or(
        k.R / (k.L * std::sqrt(static_cast<double>(n) * static_cast<double>(m))));
    diag["step_size"] = eta;
    r.estimate = non_private_sgd(data, *loss, *domain, x0, eta, rng, counter);
  } else {
    Budget budget(PrivacyLoss::approximate(o.epsilon, o.delta), Accountant::zcdp);
    GradientRun run;
    g.clip = clip;
    diag["steps"] = g.steps;
    diag["step_size"] = g.step_size;
    diag["clip"] = g.clip;
    // The planned spend, before any noise: ρ for the whole run under each method's accounting.
    const char* purpose = o.method == UserLevelMethod::dp_gd_user
                              ? "noisy gradient sums, T full-batch steps at rho/T each"
                          : o.method == UserLevelMethod::dp_sgd_user
                              ? "noisy gradient sums on disjoint user batches (parallel)"
                              : "item-level rho/m^2 per disjoint item batch; group privacy m^2";
    budget.spend({"gaussian", purpose, 0, 0, PrivacyLoss::zcdp(rho), 1});
    r.privacy.rho = rho;
    if (o.method == UserLevelMethod::dp_gd_user) {
      run = user_dp_gd(data, *loss, *domain, x0, g, rng, counter);
    } else if (o.method == UserLevelMethod::dp_sgd_user) {
      run = user_dp_sgd(data, *loss, *domain, x0, g, rng, counter);
    } else {
      run = item_dp_sgd_group(data, *loss, *domain, x0, g, rng, counter);
    }
    r.ledger = budget.ledger();
    r.ledger.front().sensitivity = run.sensitivity;
    r.ledger.front().noise_scale = run.sigma;
    r.ledger.front().loss = PrivacyLoss::zcdp(rho);
    diag["noise_sigma_sum"] = run.sigma;
    r.estimate = run.x;
  }
  diag["gradient_evaluations"] = counter.evaluations;
  return r;
}

}  // namespace dpstats::optimize
