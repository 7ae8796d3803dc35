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

}  // namespace


// ---------------------------------------------------------------------------------------------
// fit_user_level: validate -> plan (centring, bounds estimates, the method: every charge from
// public values) -> charge -> run (each stage claims its entries) -> seal (docs/proofs/user-level.md).

namespace {

constexpr double kRowQuantile = 0.9;     // a user's value: the 0.9-quantile of its row norms
// The bound: the private median of those values. The median is the quantile the scale layer's
// rank guarantee reaches with the fewest users (t/n + alpha < min(q, 1 - q)): about 900 users at
// epsilon = 1, delta = 1e-6 and the default scale_share (docs/proofs/user-level.md).
constexpr double kUserQuantile = 0.5;
constexpr double kClippedWarning = 0.05; // a supplied bound that clips more users is reported
constexpr double kClipReportBeta = 0.05;  // ... when the count's (1 - beta) lower bound says so

bool uses_label_bound(GlmKind k) { return k == GlmKind::squared || k == GlmKind::huber; }

bool paper_method(const UserLevelOptions& o) {
  return o.profile == Profile::paper &&
         (o.method == UserLevelMethod::phased_sgd || o.method == UserLevelMethod::accelerated ||
          o.method == UserLevelMethod::nonsmooth);
}

void check_share(double share, const char* name) {
  require(share > 0 && share < 1, fmt::format("{} must be in (0, 1), got {}", name, share));
}

// Several ranks (options.run.comm, the rows gathered by home_rank.hpp): the methods whose only
// data passes are exact clipped sums (dp-gd-user, dp-gd-filter; dp-sgd-user and dp-sgd-group,
// whose batch permutation rank 0 draws over the global user / item order). The phased methods
// (phased-sgd, accelerated, nonsmooth) walk the users in sequential one-pass SGD: rank 0 runs them
// on every rank's users (users_on_root, id order: the one-process users), every rank plans and
// charges alike and takes rank 0's output. The scale step runs over ranks too: the
// bounds' estimates (one value per home user, the scale layer's exact counts), the private
// centring (private_location over one row per user) and the offset check (exact integer counts).
// non-private refuses (its bounds are the data's own maxima).
void check_distributed(const UserDataset& data, const UserLevelOptions& o) {
  const int P = o.run.comm ? o.run.comm->size() : 1;
  if (P == 1) return;
  require(data.gathered(),
          fmt::format("user-level data on {} ranks must be built by gather_users (home_rank.hpp): "
                      "a user's rows must be on one home rank before the per-user clip", P));
  require(o.method != UserLevelMethod::non_private,
          fmt::format("method non-private does not run on {} ranks (its bounds are the data's own "
                      "largest norms, and its one-pass SGD walks one process's users); run it on "
                      "one process", P));
}

// Everything the ranks must agree on before the first collective of the fit.
std::string fingerprint(const UserDataset& data, const UserLevelOptions& o) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|d={}|m={}|n={}|h={}/{}/{}",
                     name_of(o.method), name_of(o.loss), name_of(o.profile), o.privacy.epsilon,
                     o.privacy.delta, o.domain_radius, o.feature_bound.value_or(-1),
                     o.label_bound.value_or(-1), o.steps.value_or(-1), o.step_size.value_or(-1),
                     o.clip.value_or(-1), o.scale_share, o.clip_report_share,
                     o.centre ? (*o.centre ? 1 : 0) : -1, static_cast<int>(o.run.noise),
                     o.domain || o.x0 ? 1 : 0, data.dim(), data.items_per_user(),
                     data.total_users(), o.holdout.value_or(-1), o.holdout_share,
                     o.holdout_loss_bound);
}

// checked_labels over every rank's users' labels (one process: checked_labels itself): {0, 1}
// labels are mapped when every rank's are in {0, 1}, some are not ±1 and some are 0.
Vector global_checked_labels(Communicator& comm, const Vector& y, GlmKind kind, bool* mapped) {
  if (comm.size() == 1) return checked_labels(y, kind, mapped);
  if (mapped) *mapped = false;
  std::int64_t c[4] = {0, 0, 0, 0};  // non-finite, not ±1, not {0, 1}, zeros
  for (Eigen::Index i = 0; i < y.size(); ++i) {
    c[0] += !std::isfinite(y[i]);
    c[1] += (y[i] != 1 && y[i] != -1);
    c[2] += (y[i] != 0 && y[i] != 1);
    c[3] += (y[i] == 0);
  }
  comm.allreduce_sum(c);
  require(c[0] == 0, "labels must be finite (got a NaN or infinite label)");
  if (!binary_labels(kind) || c[1] == 0) return y;
  require(c[2] == 0 && c[3] > 0,
          fmt::format("labels must be -1 or +1 for the {} loss (labels in {{0, 1}} are mapped "
                      "0 -> -1, 1 -> +1); got a label outside both sets", name_of(kind)));
  if (mapped) *mapped = true;
  return (2 * y.array() - 1).matrix();
}

void validate_options(const UserDataset& data, const UserLevelOptions& o) {
  validate(o.run);
  check_distributed(data, o);
  // Before any estimate draws noise (the plan repeats the check from the loss's beta).
  require(!(o.method == UserLevelMethod::accelerated &&
            o.loss == GlmKind::hinge),
          "Alg 3 needs a smooth loss (beta > 0); use method 'nonsmooth' for hinge-type losses");
  if (o.method != UserLevelMethod::non_private) validate(o.privacy, DeltaRule::positive);
  if (!o.domain) {
    require(o.domain_radius > 0 && std::isfinite(o.domain_radius),
            fmt::format("domain_radius is required: the radius R of the ball B(0, R) that holds the "
                        "weights, in units of 1/feature (choose it from public knowledge of the "
                        "model, e.g. a bound on the weights' norm); must be finite and > 0, got {}",
                        o.domain_radius));
  } else {
    require(o.domain->dimension() == data.dim(),
            fmt::format("domain dimension {} must equal the number of features {}",
                        o.domain->dimension(), data.dim()));
  }
  for (const auto& [v, name] : {std::pair{o.feature_bound, "feature_bound"},
                                std::pair{o.label_bound, "label_bound"},
                                std::pair{o.step_size, "step_size"}, std::pair{o.clip, "clip"}}) {
    if (v) require(*v > 0 && std::isfinite(*v),
                   fmt::format("{} must be finite and > 0, got {}", name, *v));
  }
  if (o.steps) require(*o.steps >= 1, fmt::format("steps must be >= 1, got {}", *o.steps));
  check_share(o.scale_share, "scale_share");
  check_share(o.clip_report_share, "clip_report_share");
  require(o.scale_share + o.clip_report_share < 1, "scale_share + clip_report_share must be < 1");
  if (o.holdout) {
    check_holdout(*o.holdout, o.holdout_loss_bound);
    check_share(o.holdout_share, "holdout_share");
    require(!paper_method(o), "holdout applies to the practical profile and non-private (the "
                              "paper profile's schedule takes the whole budget)");
    require(2 * o.scale_share + o.clip_report_share + o.holdout_share < 1,
            "with holdout, 2 scale_share + clip_report_share + holdout_share must be < 1 (the "
            "centring and the bounds may each spend scale_share)");
  }
  if (o.x0) require(o.x0->size() == data.dim(), "x0 must have the feature dimension");
  if (o.centre.value_or(false)) {
    require(!o.domain && !o.x0 && o.method != UserLevelMethod::non_private && !paper_method(o),
            "centre = true needs the default domain (domain_radius, no domain or x0) and a private "
            "method with profile 'practical': the centred fit runs in standardised units");
    require(2 * o.scale_share + o.clip_report_share < 1,
            "centre = true spends scale_share twice (centring and bounds): 2 scale_share + "
            "clip_report_share must be < 1");
  }
  if (!paper_method(o)) return;
  require((o.feature_bound || data.has_feature_bound()) &&
              (!uses_label_bound(o.loss) || o.label_bound || data.has_label_bound()),
          "profile 'paper' needs feature_bound (and label_bound for the squared and huber losses): "
          "its schedule takes them as public constants");
  if (o.method != UserLevelMethod::phased_sgd) {
    require(!o.steps && !o.clip && !o.step_size,
            "steps, clip and step_size do not apply to the paper profile of Alg 3 (its schedule "
            "fixes T_i, τ and L_f)");
  }
}

// One value per user: the kRowQuantile-quantile of |f(row)| over the user's m rows.
std::vector<double> per_user_values(const UserDataset& data, bool labels) {
  const std::int64_t n = data.num_users(), m = data.items_per_user();
  std::vector<double> out(static_cast<std::size_t>(n)), row(static_cast<std::size_t>(m));
  const auto k = static_cast<std::size_t>(
      std::min<double>(static_cast<double>(m - 1), std::ceil(kRowQuantile * static_cast<double>(m)) - 1));
  for (std::int64_t u = 0; u < n; ++u) {
    for (std::int64_t j = 0; j < m; ++j) {
      row[static_cast<std::size_t>(j)] =
          labels ? std::abs(data.label(u, j)) : data.all_features().row(u * m + j).norm();
    }
    std::nth_element(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(k), row.end());
    out[static_cast<std::size_t>(u)] = row[k];
  }
  return out;
}

// The bounds the run uses, and what estimating or checking them cost (the scale step).
struct Bounds {
  double A = 0, B = 1;
  double rho_left = 0;  // zCDP left for the method (zcdp accountant)
  std::optional<std::string> abstained;  // an estimate has no guarantee: abstain, say why
  nlohmann::json diagnostics = nlohmann::json::object();
};

// The bounds step's plan (public: the options, and whether the data state bounds): which bounds
// are estimated, whether a supplied feature_bound is reported, their shares, and the rho left.
struct BoundsPlan {
  bool estimate_A = false, estimate_B = false, report = false;
  double eps_each = 0, eps_report = 0, rho_left = 0;
};

BoundsPlan plan_bounds(bool has_A, bool has_B, const UserLevelOptions& o, double centred_share) {
  BoundsPlan p;
  p.estimate_A = !o.feature_bound && !has_A;
  p.estimate_B = uses_label_bound(o.loss) && !o.label_bound && !has_B;
  p.report = o.feature_bound.has_value() && !paper_method(o) &&
             o.method != UserLevelMethod::non_private;
  if (paper_method(o) || o.method == UserLevelMethod::non_private) return p;
  const double rho = epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta);
  const int estimates = (p.estimate_A ? 1 : 0) + (p.estimate_B ? 1 : 0);
  // Pure epsilon-DP is epsilon^2/2-zCDP: each estimate gets the epsilon whose rho is its share.
  p.eps_each = estimates ? std::sqrt(2 * o.scale_share * rho / estimates) : 0;
  p.eps_report = std::sqrt(2 * o.clip_report_share * rho);
  p.rho_left = rho * (1 - centred_share - (estimates ? o.scale_share : 0) -
                      (p.report ? o.clip_report_share : 0));
  return p;
}

const char* const kReportPurpose = "users with a row above the supplied feature_bound";

LaplaceMechanism report_mechanism(const BoundsPlan& p, NoiseMode noise) {
  return LaplaceMechanism(1.0, p.eps_report, 1, noise);
}

NormQuantileOptions bound_quantile_options(const BoundsPlan& p, const UserLevelOptions& o) {
  NormQuantileOptions nq;
  nq.comm = o.run.comm;  // every rank's users: exact counts, rank 0 draws
  nq.loss = PrivacyLoss::pure(p.eps_each);
  nq.q = kUserQuantile;
  return nq;
}

// The bounds step's entries (the estimates' and the report's).
Ledger bounds_entries(const BoundsPlan& p, const UserLevelOptions& o) {
  if (paper_method(o) || o.method == UserLevelMethod::non_private) return {};
  Ledger l;
  if (p.report) l.push_back(report_mechanism(p, o.run.noise).ledger_entry(kReportPurpose));
  for (int k = (p.estimate_A ? 1 : 0) + (p.estimate_B ? 1 : 0); k > 0; --k)
    for (const auto& e : private_norm_quantile_entries(bound_quantile_options(p, o))) l.push_back(e);
  return l;
}

// A supplied feature_bound's clip report: a private count of the users with a raw row above it
// (the bound the run clips the raw rows at), drawn once on rank 0. The warning needs the count's
// 95% lower confidence bound above kClippedWarning, so that the Laplace noise alone (scale
// 1 / eps, tens of users at the default share) never raises it.
nlohmann::json clip_report(const UserDataset& raw, double A, const LaplaceMechanism& count,
                           const UserLevelOptions& o, Rng& rng) {
  Communicator& comm = comm_or_single(o.run.comm);  // every rank's users (exact), noise on rank 0
  const std::int64_t clipped = allreduce_count(comm, raw.users_clipped_at(A));
  const double noisy =
      on_root(comm, [&] { return count.apply(static_cast<double>(clipped), rng); });
  const double n = static_cast<double>(raw.total_users());
  const double margin = count.scale() * std::log(1 / (2 * kClipReportBeta));  // one-sided 95%
  const double fraction = std::clamp(noisy / n, 0.0, 1.0);
  const double lower = std::clamp((noisy - margin) / n, 0.0, 1.0);
  nlohmann::json j = {{"value", A}, {"estimated", false}, {"clipped_users_fraction", fraction},
                      {"clipped_users_fraction_lower_95", lower},
                      {"noise_scale_fraction", count.scale() / n},
                      {"epsilon", count.loss().epsilon}};
  if (lower > kClippedWarning) {
    j["warning"] = fmt::format(
        "feature_bound = {} clips rows of at least {:.0f}% of the users (private count, 95% "
        "lower bound): the supplied bound bites; leave it out to have it estimated",
        format_number(A), 100 * lower);
  }
  return j;
}

// The bounds the run uses. `raw`: the users' rows as given (the clip report's); `data`: the rows
// the fit runs on (standardised when centred). `derived_A`: the bound of the standardised rows
// that a supplied feature_bound implies (Standardization::bound_of), when centred.
Bounds resolve_bounds(const UserDataset& raw, const UserDataset& data, const UserLevelOptions& o,
                      double centred_share, std::optional<double> derived_A,
                      ReleaseBudget& account, Rng& rng) {
  Bounds b;
  const BoundsPlan p = plan_bounds(data.has_feature_bound(), data.has_label_bound(), o, centred_share);
  const bool estimate_A = p.estimate_A, estimate_B = p.estimate_B, report = p.report;
  b.A = derived_A ? *derived_A : o.feature_bound.value_or(data.feature_bound());
  b.B = uses_label_bound(o.loss) ? o.label_bound.value_or(data.label_bound()) : 1.0;
  if (o.method == UserLevelMethod::non_private) {
    // Not private: the data's own largest row norm and |label| (nothing is clipped).
    if (estimate_A) b.A = std::max(data.all_features().rowwise().norm().maxCoeff(), 1e-300);
    if (estimate_B) b.B = std::max(data.all_labels().cwiseAbs().maxCoeff(), 1e-300);
    return b;
  }
  if (paper_method(o)) return b;  // validate_options required both bounds
  std::optional<LaplaceMechanism> count;
  if (report) {
    count.emplace(report_mechanism(p, o.run.noise));
    account.claim(count->ledger_entry(kReportPurpose));
  }
  b.rho_left = p.rho_left;
  // The scale layer's selection on its log grid over every double (claims its planned entry).
  const auto estimate = [&](bool labels, const char* name) {
    const auto values = per_user_values(data, labels);  // this rank's home users
    const NormQuantile pb =
        private_value_quantile(values, bound_quantile_options(p, o), account, rng);
    Reliability r = reliability(pb, name);
    r.estimate = fmt::format("{} ({})", name, r.estimate);
    b.diagnostics[name] = pb.diagnostics();
    b.diagnostics[name].update(
        {{"value", pb.value}, {"estimated", true}, {"epsilon", pb.epsilon},
         {"reliability", r.json()},
         {"rule", fmt::format("private {}-quantile over users of each user's {}-quantile (scale "
                              "layer, log grid over every double)", kUserQuantile, kRowQuantile)}});
    if (!r.usable && !b.abstained) b.abstained = r.reason();
    return pb.value;
  };
  if (estimate_A) b.A = estimate(false, "feature_bound");
  if (estimate_B) b.B = estimate(true, "label_bound");
  if (report) {
    b.diagnostics["feature_bound"] = clip_report(raw, *o.feature_bound, *count, o, rng);
    if (b.diagnostics["feature_bound"].contains("warning"))
      b.diagnostics["warnings"].push_back(b.diagnostics["feature_bound"]["warning"]);
    if (derived_A) b.diagnostics["feature_bound"]["standardised_bound"] = *derived_A;
  }
  return b;
}

// The run's data: features clipped to A, labels to B (and mapped {0, 1} -> ±1 when needed).
UserDataset bounded_data(const UserDataset& data, const UserLevelOptions& o, const Bounds& b,
                         nlohmann::json& diag) {
  bool mapped = false;
  const Vector labels =
      global_checked_labels(comm_or_single(o.run.comm), data.all_labels(), o.loss, &mapped);
  if (mapped) diag["labels"] = "mapped {0, 1} -> {-1, +1}";
  return data.bounded(b.A, b.B, mapped ? &labels : nullptr);
}

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

// What a method's run hands to seal.
struct MethodRun {
  Vector x;
  std::optional<std::string> abstained;
  bool certified = true;
};

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

// Whether the fit centres (public values only: options, n, d, the budget).
struct CentreDecision {
  bool centre = false;
  bool check = false;     // too few users to centre an unknown scale: run the offset check
  std::size_t need = 0;   // users the private centring needs (public)
  PrivacyLoss share = PrivacyLoss::zcdp(1);
  std::string why_not;
};

CentreDecision decide_centring(const UserDataset& data, const UserLevelOptions& o) {
  CentreDecision c;
  if (o.centre == false) return c.why_not = "centre = false", c;
  // A supplied feature_bound bounds the norms, not the location: the fit still centres (the
  // standardised rows' bound then follows from it, Standardization::bound_of).
  const bool unknown = !data.has_feature_bound() && !o.domain && !o.x0 &&
                       o.method != UserLevelMethod::non_private && !paper_method(o) &&
                       2 * o.scale_share + o.clip_report_share < 1;
  if (!o.centre && !unknown) {
    return c.why_not = "the features' units are the caller's (bounded data, a custom domain or "
                       "x0) or the method is not a private practical one", c;
  }
  c.share = PrivacyLoss::zcdp(o.scale_share *
                              epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta));
  const auto shortfall = private_location_shortfall(
      centring_options(c.share), static_cast<std::size_t>(data.total_users()),
      static_cast<std::size_t>(data.dim()));
  if (shortfall && !o.centre) {
    c.check = true;  // the offset check spends the share the centring would have
    c.need = centring_units_needed(centring_options(c.share), static_cast<std::size_t>(data.dim()));
    return c.why_not = "too few users for a private centring (" + *shortfall +
                       "): no intercept, features in the data's units", c;
  }
  c.centre = true;  // centre = true with a shortfall abstains after the estimate
  return c;
}

// The users' rows, each clipped to norm A (a supplied feature_bound, before centring).
UserDataset clip_rows(const UserDataset& data, double A) {
  RowMatrix X = data.all_features();
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const double norm = X.row(i).norm();
    if (norm > A) X.row(i) *= A / norm;
  }
  return data.with_features(std::move(X));
}

// One row per user (its first): the centring's table at user-level sensitivity 1.
RowMatrix first_rows(const UserDataset& data) {
  RowMatrix F(data.num_users(), data.dim());
  for (std::int64_t u = 0; u < data.num_users(); ++u) {
    F.row(u) = data.all_features().row(u * data.items_per_user());
  }
  return F;
}

// Runs the private centring when planned (fills `st` and `centred`), or states in
// diag["centring"] why not. Returns why the release abstains, if it does (only the centring was
// charged).
std::optional<std::string> centre_if_planned(const UserDataset& data, const UserLevelOptions& o,
                                           const CentreDecision& cd, ReleaseBudget& account,
                                           Rng& rng, nlohmann::json& diag,
                                           std::optional<Standardization>& st,
                                           std::optional<UserDataset>& centred) {
  if (cd.centre) {
    // Every rank's home users' first rows (the one-process table, split by home rank).
    Centring c = private_centring(first_rows(data), cd.share, account, rng, nullptr, o.run.comm);
    diag["centring"] = c.standardization.diagnostics;
    diag["centring"]["share_of_rho"] = o.scale_share;
    if (c.abstained) return c.abstained;
    st = std::move(c.standardization);
    centred.emplace(data.with_features(st->apply(data.all_features())));
    diag["intercept"] = true;
    return std::nullopt;
  }
  if (o.method != UserLevelMethod::non_private) {
    diag["centring"] = {{"applied", false}, {"reason", cd.why_not}};
  }
  return std::nullopt;
}

// Below the centring threshold with an unknown scale: are the columns far from 0? (the labels
// too, for regression losses). Run after the bounds' estimates, so that a table too small for
// them abstains for that reason (the check's noise is then a large fraction of the users).
std::optional<std::string> offset_gate(const UserDataset& data, const UserLevelOptions& o,
                                       const CentreDecision& cd, ReleaseBudget& account, Rng& rng,
                                       nlohmann::json& diag) {
  const OffsetCheck oc = offset_check(data.all_features(), data.items_per_user(),
                                      uses_label_bound(o.loss) ? &data.all_labels() : nullptr,
                                      PrivacyLoss::zcdp(kOffsetCheckZcdpFraction * cd.share.rho),
                                      o.run.noise, account, rng, o.run.comm);
  diag["centring"]["offset_check"] = oc.diagnostics;
  diag["centring"]["offset_check"]["share_of_rho"] = kOffsetCheckZcdpFraction * o.scale_share;
  if (!oc.blocks()) return std::nullopt;
  return offset_abstention(oc, static_cast<std::size_t>(data.total_users()), cd.need, "users");
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

// The Gaussian on the held-out users' clipped-loss sum at holdout_share of rho (private methods).
std::optional<HoldoutLoss> holdout_loss(const UserLevelOptions& o) {
  if (!o.holdout || o.method == UserLevelMethod::non_private) return std::nullopt;
  const double rho = epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta);
  return HoldoutLoss::gaussian(o.holdout_loss_bound, o.holdout_share * rho, o.run.noise);
}

// What the centring (or the offset check, run after the bounds) and the held-out loss release
// spend of rho before the bounds (a fraction): not the method's.
double before_bounds(const CentreDecision& cd, const UserLevelOptions& o) {
  return (cd.centre ? o.scale_share : (cd.check ? kOffsetCheckZcdpFraction * o.scale_share : 0)) +
         (holdout_loss(o) ? o.holdout_share : 0);
}

// The release's plan: every charge, from public values (the options, n, m, d and whether the data
// state bounds), before any noise. The method's mechanisms are built once the bounds are
// released: their entries are planned here with the same losses.
Ledger user_level_plan(const UserDataset& data, const UserLevelOptions& o, const CentreDecision& cd) {
  const auto d = static_cast<std::size_t>(data.dim());
  Ledger l;
  if (cd.centre) l = private_location_entries(centring_options(cd.share), d);
  // The centred data state no bounds (with_features): the bounds step estimates them then.
  const BoundsPlan b = plan_bounds(!cd.centre && data.has_feature_bound(),
                                   !cd.centre && data.has_label_bound(), o, before_bounds(cd, o));
  const Ledger bounds = bounds_entries(b, o), method = method_planned(data, o, b.rho_left);
  l.insert(l.end(), bounds.begin(), bounds.end());
  if (cd.check) {  // run after the bounds' estimates (offset_gate)
    l.push_back(offset_check_entry(data.dim() + (uses_label_bound(o.loss) ? 1 : 0),
                                   PrivacyLoss::zcdp(kOffsetCheckZcdpFraction * cd.share.rho),
                                   o.run.noise));
  }
  l.insert(l.end(), method.begin(), method.end());
  if (const auto h = holdout_loss(o)) l.push_back(h->ledger_entry());
  return l;
}

// plan, parts 0 and 1: the private centring or the offset check, and the public bounds
// (estimated privately where absent, charged before their noise). `work`: the bounded users the
// method runs on (standardised when centred); `abstained`: why not (only the scale step charged).
struct ScaleStep {
  std::optional<Standardization> st;
  std::optional<UserDataset> work;
  Bounds bounds;
  std::optional<std::string> abstained;
};

ScaleStep scale_step(const UserDataset& data, const UserLevelOptions& o, const CentreDecision& cd,
                     ReleaseBudget& account, Rng& rng, nlohmann::json& diag) {
  ScaleStep out;
  // A supplied feature_bound clips the raw rows before they are centred (the bound the clip
  // report counts against); the standardised rows' bound follows from it.
  std::optional<UserDataset> clipped;
  if (cd.centre && o.feature_bound) clipped.emplace(clip_rows(data, *o.feature_bound));
  std::optional<UserDataset> centred;
  out.abstained = centre_if_planned(clipped ? *clipped : data, o, cd, account, rng, diag, out.st,
                                    centred);
  if (out.abstained) return out;
  const UserDataset& source = centred ? *centred : data;
  std::optional<double> derived;  // the standardised rows' bound a supplied feature_bound implies
  if (out.st && o.feature_bound) derived = out.st->bound_of(*o.feature_bound);
  out.bounds = resolve_bounds(data, source, o, before_bounds(cd, o), derived, account, rng);
  diag["bounds"] = out.bounds.diagnostics;
  out.abstained = out.bounds.abstained;  // only the estimates were charged
  if (!out.abstained && cd.check) out.abstained = offset_gate(data, o, cd, account, rng, diag);
  if (!out.abstained) out.work.emplace(bounded_data(source, o, out.bounds, diag));
  return out;
}

// The held-out users (solvers/holdout.hpp: a keyed hash of each user id) and the others.
struct UserSplit {
  UserDataset train;
  std::optional<UserDataset> held;
};

UserSplit split_users(const UserDataset& all, const UserLevelOptions& o, Rng& rng) {
  if (!o.holdout) return {all, std::nullopt};
  Communicator& comm = comm_or_single(o.run.comm);
  const HoldoutSplit split(*o.holdout, rng, o.run.comm);
  std::vector<bool> held(static_cast<std::size_t>(all.num_users()));
  std::int64_t count = 0;
  for (std::int64_t u = 0; u < all.num_users(); ++u) {
    held[static_cast<std::size_t>(u)] =
        split.held_out(static_cast<std::uint64_t>(all.ids()[static_cast<std::size_t>(u)]));
    count += held[static_cast<std::size_t>(u)] ? 1 : 0;
  }
  const std::int64_t held_total = allreduce_count(comm, count);
  std::vector<bool> kept(held.size());
  for (std::size_t u = 0; u < held.size(); ++u) kept[u] = !held[u];
  return {all.subset(kept, all.total_users() - held_total), all.subset(held, held_total)};
}

// Each held-out user's mean loss of the released model x . w (+ b) over its m rows as given (the
// user's units; {0, 1} labels mapped as for the fit), released by `mechanism` (non-private: the
// exact mean of the clipped losses).
nlohmann::json holdout_statement(const UserDataset& held, std::int64_t users, const Vector& x,
                                 const UserLevelOptions& o, bool mapped,
                                 const std::optional<HoldoutLoss>& mechanism, Rng& rng) {
  const auto loss = make_loss(o.loss);
  const Eigen::Index d = held.dim();
  const double b = x.size() > d ? x[d] : 0.0;
  const Vector w = x.head(d);
  std::vector<double> losses(static_cast<std::size_t>(held.num_users()));
  for (std::int64_t u = 0; u < held.num_users(); ++u) {
    double sum = 0;
    for (std::int64_t k = 0; k < held.items_per_user(); ++k) {
      const double y = mapped ? 2 * held.label(u, k) - 1 : held.label(u, k);
      const Eigen::Map<const Vector> a(held.features(u, k), d);
      sum += loss->phi(a.dot(w) + b, y);
    }
    losses[static_cast<std::size_t>(u)] = sum / static_cast<double>(held.items_per_user());
  }
  nlohmann::json j;
  if (mechanism) {  // the held-out count is private (issue 28): the users (public) x fraction
    j = mechanism->release(losses, rng, o.run.comm, {users, *o.holdout, users});
  } else {
    double sum = 0;
    for (double v : losses) sum += std::clamp(v, 0.0, o.holdout_loss_bound);
    j = {{"units", losses.size()}, {"loss_bound", o.holdout_loss_bound}, {"private", false},
         {"loss", losses.empty() ? nlohmann::json(nullptr) : nlohmann::json(sum / losses.size())}};
  }
  j.update({{"fraction", *o.holdout}, {"unit", "user"},
            {"loss_name", fmt::format("the user's mean {} loss of the released model over its "
                                      "rows (the user's units), clipped to loss_bound",
                                      name_of(o.loss))}});
  return j;
}

Release<Vector> seal_user_level(Vector x, ReleaseBudget& account, bool certified,
                                std::optional<std::string> abstained, const UserLevelOptions& o,
                                UserLevelTrace* trace, Rng& rng, nlohmann::json diag) {
  SealFacts facts(certified);
  facts.unit = PrivacyUnit::user;
  facts.noise = o.run.noise;
  facts.noiseless = trace && trace->noiseless;
  facts.abstained = std::move(abstained);
  diag["stated_error"] = fit_stated_error();
  return seal(std::move(x), account, facts, rng, std::move(diag));
}

}  // namespace

Release<Vector> fit_user_level(const UserDataset& all, const UserLevelOptions& o, Rng& rng,
                               Budget* budget, UserLevelTrace* trace) {
  validate_options(all, o);  // validate: nothing read from the data's values yet
  Communicator& comm = comm_or_single(o.run.comm);
  if (comm.size() > 1) check_agreement(comm, fingerprint(all, o), "the user-level fit's options");
  bool mapped = false;
  if (binary_labels(o.loss)) global_checked_labels(comm, all.all_labels(), o.loss, &mapped);
  const bool priv = o.method != UserLevelMethod::non_private;
  ReleaseBudget account = priv ? ReleaseBudget(o.privacy.loss(),
                                               paper_method(o) ? Accountant::basic : Accountant::zcdp,
                                               budget)
                               : ReleaseBudget::non_private();
  const UserSplit split = split_users(all, o, rng);  // the users the fit does not see
  const UserDataset& data = split.held ? split.train : all;
  nlohmann::json diag = {{"method", name_of(o.method)}, {"loss", name_of(o.loss)},
                         {"n_users", data.total_users()}, {"items_per_user", data.items_per_user()}};
  // plan and charge: the centring or the offset check (decided from public values), the bounds'
  // estimates, the method and the held-out loss release, all at once before any noise (the
  // budget lives on rank 0).
  const CentreDecision cd = decide_centring(data, o);
  if (priv) {
    const Ledger plan = user_level_plan(data, o, cd);
    all_or_none(comm, [&] { account.charge(plan); });
  }
  ScaleStep step = scale_step(data, o, cd, account, rng, diag);  // run, parts 0 and 1
  if (step.abstained)
    return seal_user_level(Vector(), account, true, std::move(step.abstained), o, trace, rng, diag);
  const std::optional<HoldoutLoss> holdout = holdout_loss(o);  // its entry is in the plan, final
  MethodRun run = run_method(*step.work, o, step.bounds.rho_left, account, rng, diag, trace);
  Vector x = step.st ? step.st->to_user_units(run.x) : std::move(run.x);  // post-processing
  if (split.held && !run.abstained)
    diag["holdout"] = holdout_statement(*split.held, all.total_users(), x, o, mapped, holdout, rng);
  return seal_user_level(std::move(x), account, priv && run.certified, run.abstained, o, trace,
                         rng, std::move(diag));
}

}  // namespace dpstats::optimize
