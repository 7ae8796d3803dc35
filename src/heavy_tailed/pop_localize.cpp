// Pop-Localize (docs/proofs/heavy-tailed.md §2): its phases' plan and the localized run.
#include "dpstats/heavy_tailed/heavy_tailed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/l2_laplace.hpp"
#include "dpstats/solvers/adaptive_subgradient.hpp"
#include "dpstats/heavy_tailed/certificate.hpp"
#include "dpstats/solvers/exact_sum.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_clip.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_lens.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/geometry/ball.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/solvers/holdout.hpp"
#include "dpstats/solvers/standardize.hpp"

#include "heavy_tailed_internal.hpp"

namespace dpstats::optimize {

using namespace heavy_tailed_detail;

namespace {

// Practical-profile constants (docs/results/heavy-tailed.md, tuned on public synthetic samples).
constexpr int kPracticalPhases = 3;
constexpr double kPracticalGrowth = 4;
constexpr double kPracticalKappa = 0.1;      // docs/results/heavy-tailed.md: κ = 0.1
constexpr double kPracticalCMultiplier = 0.0625;
constexpr double kPracticalLambdaMultiplier = 4;
// Paper profile (docs/proofs/heavy-tailed.md §2.7 "matched", §2.8).
constexpr double kPaperGrowth = 32;
constexpr double kPaperKappa = 2;
constexpr double kPracticalFirstFraction = 0.25;
// Final clipped-GD phase (practical): T steps, step c_η·D/G_2, and the clip.
//  * private clip (default, heavy_tailed_clip.hpp): the (1 − p)-quantile of the gradient norms,
//    p = c_p·sqrt(d/(mε)), at 1/16 of the block's ε. c_p, the share, T and c_η were fixed by
//    `repro heavy-tailed-tune-clip` on public samples of all five study instances
//    (docs/results/heavy-tailed.md "Private clip"): T = 8, c_η = 0.75 for every loss but hinge;
//    hinge (low curvature near the kink: the L1 step makes too little progress) T = 16, c_η = 1.5.
//  * public rule (the previous default, kept for comparison): clip 0.375·G_k(mε/d)^{1/(2k)} (the
//    docs/proofs/heavy-tailed.md §3 noisy-GD exponent), T = 8, c_η = 0.75 for every loss.
constexpr int kFinalSteps = 8;
constexpr double kFinalStepMultiplier = 0.75;
constexpr int kFinalStepsHinge = 16;
constexpr double kFinalStepMultiplierHinge = 1.5;
constexpr double kFinalClipMultiplier = 0.375;
constexpr double kClipTailConstant = 4;
constexpr double kClipBudgetShare = 0.0625;

// Block sizes of Pop-Localize (public: n, d, the options and the resolved moment bound).
std::vector<std::int64_t> block_sizes(std::int64_t n, std::int64_t d, const HeavyTailedOptions& o,
                                      const MomentBound& mb, double epsilon) {
  const bool paper = o.profile == Profile::paper;
  const bool single = o.method == HeavyTailedMethod::output_perturbation;
  std::vector<std::int64_t> sizes;
  if (single) {
    sizes.push_back(n);
  } else if (paper) {
    // Card §2.8: T = min(⌈log2 n⌉, max{t : m_t >= m_min}, T*), m_t = ⌊n/2^t⌋, leftovers dropped.
    const std::int64_t m_min = std::max<std::int64_t>(10, d);
    const double r1 = heavy_tailed_rate(std::max<std::int64_t>(1, n / 2), d, epsilon, mb);
    const int t_star = 2 + static_cast<int>(std::ceil(std::log(mb.G_k / r1) / std::log(16.0)));
    const int t_log = static_cast<int>(std::ceil(std::log2(static_cast<double>(n))));
    int T = std::max(1, std::min(t_log, t_star));
    if (o.phases) T = *o.phases;
    for (int t = 1; t <= T; ++t) {
      const std::int64_t m = n >> t;
      if (m < m_min) break;
      sizes.push_back(m);
    }
    require(!sizes.empty(), fmt::format("n = {} is too small for the paper schedule (m_1 >= {})", n, m_min));
  } else if (final_gd(o)) {
    // Practical default: phase 1 (localisation) on a fraction of n, the final GD phase on the rest.
    const double f = o.first_fraction.value_or(kPracticalFirstFraction);
    require(f > 0 && f < 1, fmt::format("first_fraction must be in (0, 1), got {}", f));
    const auto m1 = static_cast<std::int64_t>(std::floor(f * static_cast<double>(n)));
    require(m1 >= 1 && n - m1 >= 1, fmt::format("n = {} is too small for two phases", n));
    sizes = {m1, n - m1};
  } else {
    const int T = o.phases.value_or(kPracticalPhases);
    require(T >= 1 && T <= 30, fmt::format("phases must be in [1, 30], got {}", T));
    std::int64_t used = 0;
    for (int t = 1; t < T; ++t) {
      sizes.push_back(n >> t);
      used += n >> t;
    }
    sizes.push_back(n - used);
    for (auto m : sizes) {
      require(m >= 1, fmt::format("n = {} is too small for {} phases", n, T));
    }
  }
  return sizes;
}

}  // namespace

double heavy_tailed_rate(std::int64_t m, std::int64_t d, double epsilon, const MomentBound& mb) {
  const auto dm = static_cast<double>(m);
  return mb.g2() / std::sqrt(dm) +
         mb.G_k * std::pow(static_cast<double>(d) / (dm * epsilon), 1 - 1 / mb.k);
}

std::vector<HeavyTailedPhase> plan_heavy_tailed(std::int64_t n, std::int64_t d,
                                                const HeavyTailedOptions& o, const MomentBound& mb,
                                                double epsilon) {
  require(n >= 1 && d >= 1, "plan_heavy_tailed: n and d must be >= 1");
  const bool paper = o.profile == Profile::paper;
  const double D = 2 * o.domain_radius;
  const double kappa = o.kappa.value_or(paper ? kPaperKappa : kPracticalKappa);
  check_positive(kappa, "kappa");
  const double growth = o.growth.value_or(paper ? kPaperGrowth : kPracticalGrowth);
  check_positive(growth, "growth");
  const std::vector<std::int64_t> sizes = block_sizes(n, d, o, mb, epsilon);
  const double c_mult = o.c_multiplier.value_or(paper ? 1.0 : kPracticalCMultiplier);
  const double l_mult = o.lambda_multiplier.value_or(paper ? 1.0 : kPracticalLambdaMultiplier);
  const double lambda1 = o.lambda.value_or(l_mult * heavy_tailed_rate(sizes[0], d, epsilon, mb) / D);
  check_positive(lambda1, "lambda");
  std::vector<HeavyTailedPhase> plan;
  std::int64_t begin = 0;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    HeavyTailedPhase ph;
    ph.begin = begin;
    ph.m = sizes[t];
    begin += ph.m;
    const auto m = static_cast<double>(ph.m);
    const bool clip_is_final = final_gd(o);
    ph.C = (clip_is_final ? std::optional<double>() : o.clip).value_or(c_mult * mb.G_k *
                           std::pow(m * epsilon / static_cast<double>(d), 1 / mb.k));
    check_positive(ph.C, "clip");
    ph.lambda = lambda1 * std::pow(growth, static_cast<double>(t));
    ph.kappa = kappa;
    ph.alpha = kappa * kappa * ph.C * ph.C / (2 * ph.lambda * m * m);
    ph.sensitivity = (2 + 2 * kappa) * ph.C / (ph.lambda * m);
    plan.push_back(ph);
  }
  return plan;
}

namespace heavy_tailed_detail {

// Every rank's rows and labels on rank 0, in global order (rank r's rows follow rank r - 1's, as
// shard_rows numbers them): one alltoall with only rank 0 receiving. Other ranks get none. One
// process: a copy of X and y.
void rows_on_root(Communicator& comm, const ConstMatrixRef& X, const Vector& y, RowMatrix& A,
                  Vector& yA) {
  if (comm.size() == 1) {
    A = X;
    yA = y;
    return;
  }
  const Eigen::Index d = X.cols();
  std::vector<double> mine;  // per row: the label, then the d features
  mine.reserve(static_cast<std::size_t>(X.rows() * (d + 1)));
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    mine.push_back(y[i]);
    for (Eigen::Index j = 0; j < d; ++j) mine.push_back(X(i, j));
  }
  std::vector<Bytes> send(static_cast<std::size_t>(comm.size()));
  send[0] = to_bytes(mine);
  const std::vector<Bytes> got = comm.alltoall(send);
  A.resize(0, d);
  yA.resize(0);
  if (comm.rank() != 0) return;
  std::size_t total = 0;
  for (const Bytes& b : got) total += b.size() / sizeof(double);
  const auto rows = static_cast<Eigen::Index>(total / static_cast<std::size_t>(d + 1));
  A.resize(rows, d);
  yA.resize(rows);
  Eigen::Index at = 0;
  for (const Bytes& b : got) {
    const auto v = from_bytes<std::vector<double>>(b);
    for (std::size_t p = 0; p < v.size(); p += static_cast<std::size_t>(d + 1), ++at) {
      yA[at] = v[p];
      A.row(at) = Eigen::Map<const Vector>(v.data() + p + 1, d).transpose();
    }
  }
}

// Pop-Localize's state across phases. A and y: the rows the certified solver and the final clip's
// quantile read (one process: all rows; several ranks: all rows on rank 0, gathered in global
// order, none elsewhere), comm: the ranks (those passes run on rank 0 only).
// `blocks`: the phases' parallel composite, each phase adding its mechanisms' entries as a block
// before they draw.
struct Localize {
  const RowMatrix& A;
  const Vector& y;
  Communicator& comm;
  ParallelComposite& blocks;
  Vector center;
  nlohmann::json phases = nlohmann::json::array();
  int lens_probes = 0;
  HeavyTailedTrace* trace = nullptr;
};

GlmErmProblem phase_problem(const Problem& q, const Localize& L, const HeavyTailedPhase& ph) {
  GlmErmProblem p;
  p.A = &L.A;
  p.y = &L.y;
  p.begin = ph.begin;
  p.end = ph.begin + ph.m;
  p.env = q.env;
  p.C = ph.C;
  p.lambda = ph.lambda;
  p.w0 = L.center;
  p.center = Vector::Zero(L.A.cols());
  p.radius = q.o.domain_radius;
  p.threads = q.o.run.threads;
  return p;
}

Vector noisy(const L2LaplaceMechanism& m, const Vector& v, bool noiseless, Rng& rng) {
  return noiseless ? v : Vector(m.apply(v, rng));
}

// The practical final phase: localized noisy clipped GD from the previous output (its clip a
// private quantile of the gradient norms there, or public).
void final_gd_phase(const Problem& q, Localize& L, const HeavyTailedPhase& ph, std::size_t t,
                    Rng& rng) {
  const auto& o = q.o;
  const std::int64_t d = L.A.cols();
  const auto m = static_cast<double>(ph.m);
  const FinalClipRule rule = o.final_clip_rule.value_or(FinalClipRule::private_quantile);
  const bool hinge_defaults = rule == FinalClipRule::private_quantile && q.env.kind == GlmKind::hinge;
  GdSchedule s;
  s.T = o.steps.value_or(hinge_defaults ? kFinalStepsHinge : kFinalSteps);
  s.eta = o.step_size.value_or((hinge_defaults ? kFinalStepMultiplierHinge : kFinalStepMultiplier) *
                               2 * o.domain_radius / q.scale.mb.g2());
  double eps_gd = q.scale.epsilon;
  nlohmann::json clip_info = {{"rule", o.clip ? "fixed" : std::string(name_of(rule))}};
  if (o.clip) {
    s.C = *o.clip;
  } else if (rule == FinalClipRule::public_bound) {
    s.C = kFinalClipMultiplier * q.scale.mb.G_k *
          std::pow(m * q.scale.epsilon / static_cast<double>(d), 1 / (2 * q.scale.mb.k));
  } else {
    // Inside the final block (basic composition): share·ε for the clip, the rest for the steps;
    // the block spends the phase's ε like every other block (parallel composition across blocks).
    const double share = o.clip_budget_share.value_or(kClipBudgetShare);
    GradientNormQuantile gq = gradient_norm_grid(ph.m, d, q.scale.epsilon, q.scale.mb.G_k,
                                                 q.scale.mb.k, q.scale.mb.g2());
    gq.tail = clip_tail_fraction(ph.m, d, q.scale.epsilon, o.clip_tail_constant.value_or(kClipTailConstant));
    gq.epsilon = share * q.scale.epsilon;
    L.blocks.add_block({gradient_norm_clip_entry(gq)});
    s.C = on_root(L.comm, [&] {  // rank 0 holds the block's rows and draws
      return private_gradient_norm_clip(L.A, L.y, ph.begin, ph.m, q.env, L.center, gq, rng).clip;
    });
    eps_gd = (1 - share) * q.scale.epsilon;
    clip_info.update({{"tail", gq.tail}, {"epsilon", gq.epsilon}, {"grid", {gq.lower, gq.upper}},
                      {"candidates", gq.candidates}});
  }
  check_positive(s.C, "clip");
  const GdMechanism mech = gd_mechanism(ph.m, d, s, eps_gd, 0, false, o.run.noise);
  const LedgerEntry steps = mech.entry("final block: clipped-GD steps");
  if (L.blocks.blocks() == t + 1) L.blocks.extend_block({steps});
  else L.blocks.add_block({steps});
  const GdRun run = gd_core(q.X, q.y, ph.begin, ph.m, q.env, L.center, s, mech, o.domain_radius,
                            o.run, q.shard, q.noiseless, rng);
  L.phases.push_back({{"phase", t + 1}, {"m", ph.m}, {"solver", "clipped-gd"}, {"steps", s.T},
                      {"clip", s.C}, {"clip_rule", clip_info}, {"step_size", s.eta},
                      {"epsilon", eps_gd}, {"noise_scale", run.scale}});
  if (L.trace != nullptr) {
    L.trace->final_clip = s.C;
    L.trace->phase_output.push_back(run.w);
  }
  L.center = run.w;
}

// Alg 4 with Alg 2 (paper preset): two output perturbations at ε/2 each, the second over
// W_0 = W ∩ B(w_loc, r_0). Returns false when a stage cannot be certified (the run aborts).
bool double_op_phase(const Problem& q, Localize& L, const HeavyTailedPhase& ph, std::size_t t,
                     std::string& reason, Rng& rng) {
  const auto& o = q.o;
  const auto d = static_cast<std::size_t>(L.A.cols());
  GlmErmProblem p = phase_problem(q, L, ph);
  const double m = static_cast<double>(ph.m), C = ph.C, lam = ph.lambda, eps = q.scale.epsilon;
  const double sens = 6 * C / (lam * m);
  const CertifiedSolution s1 = solve_certified_glm_erm(p, C * C / (2 * lam * m * m));
  if (!s1.certified) return reason = "stage 1 accuracy could not be certified", false;
  const L2LaplaceMechanism m1(sens, eps / 2, d, o.run.noise), m2(sens, eps / 2, d, o.run.noise);
  L.blocks.add_block({m1.ledger_entry("Alg 2 localisation"), m2.ledger_entry("Alg 4 stage 2")});
  Vector w_loc = noisy(m1, s1.w, q.noiseless, rng);
  project_to_ball(w_loc, o.domain_radius);
  const double r0 = 600 * C * static_cast<double>(d) / (lam * m * eps);
  // W_0's shape (decided from public values and the released w_loc only).
  const double alpha2 = C * C / (72 * lam * m * m);
  const char* shape = "lens";
  CertifiedSolution s2;
  if (r0 >= o.domain_radius + w_loc.norm()) {
    shape = "W";
    s2 = solve_certified_glm_erm(p, alpha2);
  } else if (w_loc.norm() + r0 <= o.domain_radius) {
    shape = "ball";
    p.center = w_loc;
    p.radius = r0;
    s2 = solve_certified_glm_erm(p, alpha2);
  } else {
    const LensSolution ls = solve_certified_lens_glm_erm(p, w_loc, r0, alpha2);
    s2 = ls.solution;
    L.lens_probes += ls.probes;
  }
  if (L.trace != nullptr) {
    L.trace->pre_noise.push_back(s2.w);
    L.trace->gaps.push_back(s2.gap);
    L.trace->alphas.push_back(alpha2);
    L.trace->newton_steps.push_back(s1.newton_steps + s2.newton_steps);
  }
  if (!s2.certified) return reason = "stage 2 accuracy could not be certified", false;
  const double R = o.domain_radius;
  const Vector out = inexact_ball_cap_projection([R](Vector& x) { project_to_ball(x, R); }, w_loc, r0,
                                                 noisy(m2, s2.w, q.noiseless, rng), C / (6 * lam * m));
  L.phases.push_back({{"phase", t + 1}, {"m", ph.m}, {"C", C}, {"lambda", lam}, {"r0", r0},
                      {"W0", shape}, {"noise_scale", m2.beta()}, {"sampler", m2.sampler()}});
  if (L.trace != nullptr) {
    L.trace->phase_output.push_back(out);
    L.trace->sensitivity = sens;
    L.trace->beta = m2.beta();
  }
  L.center = out;
  return true;
}

// The GLM one-stage output perturbation (docs/proofs/heavy-tailed.md §2.13): certified ERM of the extension + l2-Laplace.
// On several ranks the solve and the noise run on rank 0 (which holds the block's rows in global
// order: the one-process solve, bit for bit) and the noisy output, or the abort bit, is broadcast.
bool one_stage_phase(const Problem& q, Localize& L, const HeavyTailedPhase& ph, std::size_t t,
                     std::string& reason, Rng& rng) {
  const L2LaplaceMechanism mech(ph.sensitivity, q.scale.epsilon, static_cast<std::size_t>(L.A.cols()),
                                q.o.run.noise);
  L.blocks.add_block({mech.ledger_entry("phase output (output perturbation)")});
  Vector out = on_root(L.comm, [&] {
    const CertifiedSolution sol = solve_certified_glm_erm(phase_problem(q, L, ph), ph.alpha);
    if (L.trace != nullptr) {
      L.trace->pre_noise.push_back(sol.w);
      L.trace->gaps.push_back(sol.gap);
      L.trace->alphas.push_back(ph.alpha);
      L.trace->newton_steps.push_back(sol.newton_steps);
    }
    return sol.certified ? noisy(mech, sol.w, q.noiseless, rng) : Vector();  // empty: the abort
  });
  if (out.size() == 0) return reason = "optimization accuracy could not be certified", false;
  project_to_ball(out, q.o.domain_radius);
  if (L.trace != nullptr) {
    L.trace->phase_output.push_back(out);
    L.trace->sensitivity = ph.sensitivity;
    L.trace->beta = mech.beta();
  }
  L.phases.push_back({{"phase", t + 1}, {"m", ph.m}, {"C", ph.C}, {"lambda", ph.lambda},
                      {"kappa", ph.kappa}, {"alpha", ph.alpha}, {"sensitivity", ph.sensitivity},
                      {"noise_scale", mech.beta()}, {"sampler", mech.sampler()}});
  L.center = out;
  return true;
}

// Every block spends the phases' ε on its own disjoint records, so the run is ε-DP by parallel
// composition (docs/proofs/heavy-tailed.md §2): one composite, each phase's mechanisms a block.
ParallelComposite localize_composite(const HeavyTailedOptions& o, double epsilon) {
  return ParallelComposite(PrivacyLoss::pure(epsilon), Accountant::basic,
                           final_gd(o) ? "phases on disjoint blocks (the final block splits its "
                                         "epsilon between its clip quantile and its GD steps)"
                                       : "phases on disjoint blocks");
}

MethodRun pop_localize(const Problem& q, ReleaseBudget& account, Rng& rng, HeavyTailedTrace* trace) {
  const std::int64_t n = q.n, d = q.X.cols();
  const auto plan = plan_heavy_tailed(n, d, q.o, q.scale.mb, q.scale.epsilon);
  const bool double_op =
      q.o.inner.value_or(InnerSolver::glm_one_stage) == InnerSolver::double_output_perturbation;
  // The certificate's solvers read a RowMatrix of every row (several ranks: on rank 0).
  RowMatrix A;
  Vector y;
  rows_on_root(q.shard.comm, q.X, q.y, A, y);
  ParallelComposite blocks = localize_composite(q.o, q.scale.epsilon);
  Localize L{A, y, q.shard.comm, blocks, Vector::Zero(d), nlohmann::json::array(), 0, trace};
  MethodRun out;
  out.diagnostics = {{"inner", name_of(q.o.inner.value_or(InnerSolver::glm_one_stage))}};
  for (std::size_t t = 0; t < plan.size(); ++t) {
    std::string reason;
    bool ok = true;
    if (t + 1 == plan.size() && t > 0 && final_gd(q.o)) {
      final_gd_phase(q, L, plan[t], t, rng);
    } else {
      ok = double_op ? double_op_phase(q, L, plan[t], t, reason, rng)
                     : one_stage_phase(q, L, plan[t], t, reason, rng);
    }
    if (!ok) {
      // The abort is a public bit (docs/threat-model.md): nothing computed from the uncertified
      // iterate is released; its phase and reason depend on the same bit and public values.
      account.claim(blocks.entry());
      out.abstained = reason;
      out.diagnostics["aborted_phase"] = t + 1;
      return out;
    }
  }
  account.claim(blocks.entry());
  out.w = L.center;
  out.diagnostics.update({{"lens_probes", L.lens_probes}, {"phases", L.phases},
                          {"composition", final_gd(q.o) ? "parallel across blocks; basic inside "
                                                          "the final block (clip quantile + GD steps)"
                                                        : "parallel (disjoint blocks)"}});
  return out;
}

}  // namespace heavy_tailed_detail

}  // namespace dpstats::optimize
