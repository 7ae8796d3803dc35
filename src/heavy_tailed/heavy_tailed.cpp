#include "dpstats/heavy_tailed/heavy_tailed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/l2_laplace.hpp"
#include "dpstats/solvers/adaptive_subgradient.hpp"
#include "dpstats/heavy_tailed/certificate.hpp"
#include "dpstats/solvers/exact_sum.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_clip.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_lens.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats::optimize {
namespace {

// Practical-profile constants (docs/results/heavy-tailed.md, tuned on public synthetic samples).
constexpr int kPracticalPhases = 3;
constexpr double kPracticalGrowth = 4;
constexpr double kPracticalKappa = 0.1;      // addendum: κ = 0.1
constexpr double kPracticalCMultiplier = 0.0625;
constexpr double kPracticalLambdaMultiplier = 4;
// Paper profile (card §2.7 "matched", §2.8).
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
//    card §3 noisy-GD exponent), T = 8, c_η = 0.75 for every loss.
constexpr int kFinalSteps = 8;
constexpr double kFinalStepMultiplier = 0.75;
constexpr int kFinalStepsHinge = 16;
constexpr double kFinalStepMultiplierHinge = 1.5;
constexpr double kFinalClipMultiplier = 0.375;
constexpr double kClipTailConstant = 4;
constexpr double kClipBudgetShare = 0.0625;
// Clipped GD: card §3 theory defaults; T capped for run time (documented in the guide).
constexpr int kMaxDefaultSteps = 1000;

bool final_gd(const HeavyTailedOptions& o) {
  if (o.profile != HeavyTailedProfile::practical ||
      o.method != HeavyTailedMethod::lipschitz_extension) {
    return false;
  }
  const std::string f = o.final_solver.value_or("clipped-gd");
  require(f == "clipped-gd" || f == "output-perturbation",
          "final_solver must be 'clipped-gd' or 'output-perturbation', got '" + f + "'");
  return f == "clipped-gd";
}

void project_ball(Vector& w, double R) {
  const double n = w.norm();
  if (n > R) w *= R / n;
}

void validate(const RowMatrix& X, const Vector& y, const HeavyTailedOptions& o, GlmKind kind) {
  require(X.rows() >= 1 && X.cols() >= 1, "data must have at least one row and one feature column");
  require(y.size() == X.rows(), fmt::format("labels have length {} but features have {} rows",
                                            y.size(), X.rows()));
  require(X.allFinite() && y.allFinite(), "data must be finite (got a NaN or infinite entry)");
  if (kind == GlmKind::hinge || kind == GlmKind::logistic) {
    for (Eigen::Index i = 0; i < y.size(); ++i) {
      require(y[i] == 1 || y[i] == -1, "labels must be -1 or +1 for the {} loss", to_string(kind));
    }
  }
  check_epsilon(o.epsilon);
  check_positive(o.domain_radius, "domain_radius");
  require(std::isfinite(o.domain_radius), "domain_radius must be finite");
  require(o.moment.k >= 2 && std::isfinite(o.moment.k),
          fmt::format("moment k must be a finite number >= 2, got {}", o.moment.k));
  check_positive(o.moment.G_k, "moment bound G_k");
  if (o.moment.G_2) check_positive(*o.moment.G_2, "moment bound G_2");
  if (o.method == HeavyTailedMethod::dp_sgd) {
    require(o.delta > 0 && o.delta < 1,
            fmt::format("delta must be in (0, 1) for method dp-sgd, got {}", o.delta));
  } else {
    require(o.delta == 0, fmt::format("delta applies to method dp-sgd only (pure epsilon-DP "
                                      "methods have delta = 0), got {}", o.delta));
  }
}

PrivacyGuarantee pure(double epsilon, bool certified) {
  PrivacyGuarantee g;
  g.epsilon = epsilon;
  g.certified = certified;
  return g;
}

struct GdSchedule {
  int T;
  double C, eta;
};

GdSchedule gd_schedule(std::int64_t n, std::int64_t d, const HeavyTailedOptions& o) {
  const double ne = static_cast<double>(n) * o.epsilon, D = 2 * o.domain_radius;
  GdSchedule s;
  s.C = o.clip.value_or(o.moment.G_k * std::pow(ne / static_cast<double>(d), 1 / (2 * o.moment.k)));
  s.T = o.steps.value_or(static_cast<int>(
      std::clamp(std::ceil(ne / static_cast<double>(d)), 1.0, static_cast<double>(kMaxDefaultSteps))));
  require(s.T >= 1, fmt::format("steps must be >= 1, got {}", s.T));
  const double beta = 2 * s.C * s.T / ne;
  const auto dd = static_cast<double>(d);
  s.eta = o.step_size.value_or(D / (std::sqrt(s.C * s.C + dd * (dd + 1) * beta * beta) *
                                    std::sqrt(static_cast<double>(s.T))));
  check_positive(s.C, "clip");
  check_positive(s.eta, "step_size");
  return s;
}

struct GdRun {
  Vector w;
  double sensitivity = 0, scale = 0;
  bool certified_noise = true;
};

// T projected steps on rows [begin, begin + m) from x0, each releasing the clipped mean gradient
// with l2-Laplace at ε/T (or the Gaussian at ρ/T); returns the average iterate.
GdRun gd_core(const RowMatrix& X, const Vector& y, std::int64_t begin, std::int64_t m,
              const GlmEnvelope& env, const Vector& x0, const GdSchedule& s, double epsilon,
              double rho, bool gaussian, double radius, NoiseMode noise, Rng& rng) {
  const std::int64_t d = X.cols();
  GdRun out;
  Vector w = x0, avg = Vector::Zero(d);
  for (int t = 0; t < s.T; ++t) {
    ClippedVectorSum sum(d, s.C, m);
    for (std::int64_t i = begin; i < begin + m; ++i) {
      const double g = env.derivative(X.row(i).dot(w), y[i], std::numeric_limits<double>::infinity());
      sum.add(g * X.row(i).transpose());
    }
    const double dn = static_cast<double>(m);
    const Vector mean = sum.sum() / dn;
    out.sensitivity = sum.sensitivity() / dn;
    Vector noisy;
    if (gaussian) {
      const auto mech = GaussianMechanism::from_rho(out.sensitivity, rho / s.T, static_cast<std::size_t>(d), noise);
      noisy = mech.apply(mean, rng);
      out.scale = mech.sigma();
    } else {
      const L2LaplaceMechanism mech(out.sensitivity, epsilon / s.T, static_cast<std::size_t>(d), noise);
      noisy = mech.apply(mean, rng);
      out.scale = mech.beta();
      out.certified_noise = out.certified_noise && mech.certified();
    }
    w -= s.eta * noisy;
    project_ball(w, radius);
    avg += w;
  }
  out.w = avg / s.T;
  return out;
}

Release<Vector> noisy_gd(const RowMatrix& X, const Vector& y, const HeavyTailedOptions& o,
                         const GlmEnvelope& env, Rng& rng) {
  const std::int64_t n = X.rows(), d = X.cols();
  const GdSchedule s = gd_schedule(n, d, o);
  const bool gaussian = o.method == HeavyTailedMethod::dp_sgd;
  Release<Vector> r;
  const double rho = gaussian ? epsilon_delta_to_zcdp(o.epsilon, o.delta) : 0;
  const GdRun run = gd_core(X, y, 0, n, env, Vector::Zero(d), s, o.epsilon, rho, gaussian,
                            o.domain_radius, o.noise, rng);
  const double sens = run.sensitivity, scale = run.scale;
  const bool certified_noise = run.certified_noise;
  r.estimate = run.w;
  if (gaussian) {
    r.privacy.epsilon = o.epsilon;
    r.privacy.delta = o.delta;
    r.privacy.rho = rho;
    r.privacy.certified = o.noise == NoiseMode::secure;
    r.ledger.push_back({"gaussian", "clipped mean gradient", sens, scale, PrivacyLoss::zcdp(rho / s.T), s.T});
  } else {
    r.privacy = pure(o.epsilon, certified_noise);
    r.ledger.push_back({"l2_laplace", "clipped mean gradient", sens, scale,
                        PrivacyLoss::pure(o.epsilon / s.T), s.T});
  }
  r.noise = o.noise;
  r.seeded = rng.seeded();
  r.diagnostics = {{"steps", s.T}, {"clip", s.C}, {"step_size", s.eta}, {"noise_scale", scale}};
  return r;
}

Release<Vector> non_private(const RowMatrix& X, const Vector& y, const HeavyTailedOptions& o,
                            const GlmEnvelope& env) {
  GlmErmProblem p;
  p.A = &X;
  p.y = &y;
  p.begin = 0;
  p.end = X.rows();
  p.env = env;
  p.C = std::numeric_limits<double>::infinity();
  p.lambda = 1e-9 * o.moment.G_k / o.domain_radius;
  p.w0 = Vector::Zero(X.cols());
  p.center = Vector::Zero(X.cols());
  p.radius = o.domain_radius;
  // Non-private reference (Huber-smoothed to width 10^-6), not a private release.
  Release<Vector> r;
  r.estimate = solve_glm_erm_reference(p);
  r.privacy.epsilon = std::numeric_limits<double>::infinity();
  r.privacy.certified = false;
  r.diagnostics = {{"private", false}};
  return r;
}

}  // namespace

const char* to_string(HeavyTailedMethod m) {
  switch (m) {
    case HeavyTailedMethod::lipschitz_extension: return "lipschitz-extension";
    case HeavyTailedMethod::output_perturbation: return "output-perturbation";
    case HeavyTailedMethod::clipped_gd: return "clipped-gd";
    case HeavyTailedMethod::dp_sgd: return "dp-sgd";
    case HeavyTailedMethod::non_private: return "non-private";
  }
  return "?";
}

HeavyTailedMethod parse_heavy_tailed_method(const std::string& s) {
  for (auto m : {HeavyTailedMethod::lipschitz_extension, HeavyTailedMethod::output_perturbation,
                 HeavyTailedMethod::clipped_gd, HeavyTailedMethod::dp_sgd,
                 HeavyTailedMethod::non_private}) {
    if (s == to_string(m)) return m;
  }
  throw InvalidArgument("method must be one of lipschitz-extension, clipped-gd, "
                        "output-perturbation, dp-sgd, non-private, got '" + s + "'");
}

double heavy_tailed_rate(std::int64_t m, std::int64_t d, double epsilon, const MomentBound& mb) {
  const auto dm = static_cast<double>(m);
  return mb.g2() / std::sqrt(dm) +
         mb.G_k * std::pow(static_cast<double>(d) / (dm * epsilon), 1 - 1 / mb.k);
}

std::vector<HeavyTailedPhase> plan_heavy_tailed(std::int64_t n, std::int64_t d,
                                                const HeavyTailedOptions& o) {
  require(n >= 1 && d >= 1, "plan_heavy_tailed: n and d must be >= 1");
  const bool paper = o.profile == HeavyTailedProfile::paper;
  const bool single = o.method == HeavyTailedMethod::output_perturbation;
  const double D = 2 * o.domain_radius;
  const double kappa = o.kappa.value_or(paper ? kPaperKappa : kPracticalKappa);
  check_positive(kappa, "kappa");
  const double growth = o.growth.value_or(paper ? kPaperGrowth : kPracticalGrowth);
  check_positive(growth, "growth");
  // Block sizes.
  std::vector<std::int64_t> sizes;
  if (single) {
    sizes.push_back(n);
  } else if (paper) {
    // Card §2.8: T = min(⌈log2 n⌉, max{t : m_t >= m_min}, T*), m_t = ⌊n/2^t⌋, leftovers dropped.
    const std::int64_t m_min = std::max<std::int64_t>(10, d);
    const double r1 = heavy_tailed_rate(std::max<std::int64_t>(1, n / 2), d, o.epsilon, o.moment);
    const int t_star = 2 + static_cast<int>(std::ceil(std::log(o.moment.G_k / r1) / std::log(16.0)));
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
  const double c_mult = o.c_multiplier.value_or(paper ? 1.0 : kPracticalCMultiplier);
  const double l_mult = o.lambda_multiplier.value_or(paper ? 1.0 : kPracticalLambdaMultiplier);
  const double lambda1 = o.lambda.value_or(l_mult * heavy_tailed_rate(sizes[0], d, o.epsilon, o.moment) / D);
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
    ph.C = (clip_is_final ? std::optional<double>() : o.clip).value_or(c_mult * o.moment.G_k *
                           std::pow(m * o.epsilon / static_cast<double>(d), 1 / o.moment.k));
    check_positive(ph.C, "clip");
    ph.lambda = lambda1 * std::pow(growth, static_cast<double>(t));
    ph.kappa = kappa;
    ph.alpha = kappa * kappa * ph.C * ph.C / (2 * ph.lambda * m * m);
    ph.sensitivity = (2 + 2 * kappa) * ph.C / (ph.lambda * m);
    plan.push_back(ph);
  }
  return plan;
}

Release<Vector> fit_heavy_tailed(const RowMatrix& X, const Vector& y, const HeavyTailedOptions& o,
                                 Rng& rng, HeavyTailedTrace* trace) {
  const GlmKind kind = parse_glm_kind(o.loss);
  validate(X, y, o, kind);
  GlmEnvelope env;
  env.kind = kind;
  env.huber_kappa = o.huber_kappa;
  if (o.method == HeavyTailedMethod::clipped_gd || o.method == HeavyTailedMethod::dp_sgd) {
    return noisy_gd(X, y, o, env, rng);
  }
  if (o.method == HeavyTailedMethod::non_private) return non_private(X, y, o, env);

  const std::int64_t n = X.rows(), d = X.cols();
  const auto plan = plan_heavy_tailed(n, d, o);
  Release<Vector> r;
  r.noise = o.noise;
  r.seeded = rng.seeded();
  Vector center = Vector::Zero(d);
  bool certified_noise = true;
  nlohmann::json phases = nlohmann::json::array();
  // Abort without releasing (card §4.4): nothing is computed from an uncertified iterate; the
  // abort (and its phase and reason, which depend on the same bit and public values) is the only
  // output, and the ledger is cleared.
  const auto abort_run = [&](std::size_t t, const std::string& reason) {
    r.status = Status::abstained;
    r.estimate = Vector();
    r.ledger.clear();
    r.privacy = pure(o.epsilon, certified_noise);
    r.diagnostics = {{"profile", o.profile == HeavyTailedProfile::paper ? "paper" : "practical"},
                     {"aborted_phase", t + 1},
                     {"reason", reason}};
    return r;
  };
  const std::string inner = o.inner.value_or("glm-one-stage");
  require(inner == "glm-one-stage" || inner == "double-output-perturbation",
          "inner must be 'glm-one-stage' or 'double-output-perturbation', got '" + inner + "'");
  int lens_probes = 0;
  bool final_block_basic = false;
  for (std::size_t t = 0; t < plan.size(); ++t) {
    const auto& ph = plan[t];
    if (t + 1 == plan.size() && t > 0 && final_gd(o)) {
      GdSchedule s;
      const auto m = static_cast<double>(ph.m);
      const std::string rule = o.final_clip_rule.value_or("private-quantile");
      require(rule == "private-quantile" || rule == "public",
              "final_clip_rule must be 'private-quantile' or 'public', got '" + rule + "'");
      const bool hinge_defaults = rule == "private-quantile" && kind == GlmKind::hinge;
      s.T = o.steps.value_or(hinge_defaults ? kFinalStepsHinge : kFinalSteps);
      s.eta = o.step_size.value_or((hinge_defaults ? kFinalStepMultiplierHinge : kFinalStepMultiplier) *
                                   2 * o.domain_radius / o.moment.g2());
      require(s.T >= 1, fmt::format("steps must be >= 1, got {}", s.T));
      check_positive(s.eta, "step_size");
      double eps_gd = o.epsilon;
      nlohmann::json clip_info = {{"rule", o.clip ? "fixed" : rule}};
      if (o.clip) {
        s.C = *o.clip;
      } else if (rule == "public") {
        s.C = kFinalClipMultiplier * o.moment.G_k *
              std::pow(m * o.epsilon / static_cast<double>(d), 1 / (2 * o.moment.k));
      } else {
        const double share = o.clip_budget_share.value_or(kClipBudgetShare);
        require(share > 0 && share < 1,
                fmt::format("clip_budget_share must be in (0, 1), got {}", share));
        GradientNormQuantile q = gradient_norm_grid(ph.m, d, o.epsilon, o.moment.G_k, o.moment.k,
                                                    o.moment.g2());
        q.tail = clip_tail_fraction(ph.m, d, o.epsilon, o.clip_tail_constant.value_or(kClipTailConstant));
        q.epsilon = share * o.epsilon;
        const PrivateClip pc = private_gradient_norm_clip(X, y, ph.begin, ph.m, env, center, q, rng);
        s.C = pc.clip;
        eps_gd = (1 - share) * o.epsilon;
        final_block_basic = true;
        LedgerEntry e = pc.entry;
        e.purpose = fmt::format("phase {} {}", t + 1, e.purpose);
        r.ledger.push_back(e);
        clip_info.update({{"tail", q.tail}, {"epsilon", q.epsilon}, {"grid", {q.lower, q.upper}},
                          {"candidates", q.candidates}});
      }
      check_positive(s.C, "clip");
      const GdRun run = gd_core(X, y, ph.begin, ph.m, env, center, s, eps_gd, 0, false,
                                o.domain_radius, o.noise, rng);
      certified_noise = certified_noise && run.certified_noise;
      r.ledger.push_back({"l2_laplace", fmt::format("phase {} clipped mean gradient", t + 1),
                          run.sensitivity, run.scale, PrivacyLoss::pure(eps_gd / s.T), s.T});
      phases.push_back({{"m", ph.m}, {"solver", "clipped-gd"}, {"steps", s.T}, {"clip", s.C},
                        {"clip_rule", clip_info}, {"step_size", s.eta}, {"noise_scale", run.scale}});
      if (trace != nullptr) trace->final_clip = s.C;
      if (trace != nullptr) trace->phase_output.push_back(run.w);
      center = run.w;
      continue;
    }
    GlmErmProblem p;
    p.A = &X;
    p.y = &y;
    p.begin = ph.begin;
    p.end = ph.begin + ph.m;
    p.env = env;
    p.C = ph.C;
    p.lambda = ph.lambda;
    p.w0 = center;
    p.center = Vector::Zero(d);
    p.radius = o.domain_radius;
    if (o.inner.value_or("glm-one-stage") == "double-output-perturbation") {
      // Alg 4 (card §2.7, paper preset): Alg 2 at ε/2 (κ = 1, noise for 6C/(λm), r_0 =
      // 600Cd/(λmε)), then the certified solve over W_0 = W ∩ B(w_loc, r_0) to C²/(72λm²), noise
      // for 6C/(λm) at ε/2, and the ξ-inexact projection onto W_0 (ξ = C/(6λm)). The R^d
      // extension is used (card §2.13 "Unconstrained (GLM)" reading).
      const double m = static_cast<double>(ph.m), C = ph.C, lam = ph.lambda;
      const double sens = 6 * C / (lam * m);
      const CertifiedSolution s1 = solve_certified_glm_erm(p, C * C / (2 * lam * m * m));
      if (!s1.certified) return abort_run(t, "stage 1 accuracy could not be certified");
      const L2LaplaceMechanism m1(sens, o.epsilon / 2, static_cast<std::size_t>(d), o.noise);
      Vector w_loc = m1.apply(s1.w, rng);
      project_ball(w_loc, o.domain_radius);
      const double r0 = 600 * C * static_cast<double>(d) / (lam * m * o.epsilon);
      // W_0's shape (decided from public values and the released w_loc only): W, the ball
      // B(w_loc, r_0), or the lens W ∩ B(w_loc, r_0) (heavy_tailed_lens.hpp).
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
        lens_probes += ls.probes;
      }
      if (trace != nullptr) {
        trace->pre_noise.push_back(s2.w);
        trace->gaps.push_back(s2.gap);
        trace->alphas.push_back(alpha2);
        trace->newton_steps.push_back(s1.newton_steps + s2.newton_steps);
      }
      if (!s2.certified) return abort_run(t, "stage 2 accuracy could not be certified");
      const L2LaplaceMechanism m2(sens, o.epsilon / 2, static_cast<std::size_t>(d), o.noise);
      const Vector noisy = m2.apply(s2.w, rng);
      const double R = o.domain_radius;
      const Vector out = inexact_ball_cap_projection(
          [R](Vector& x) { project_ball(x, R); }, w_loc, r0, noisy, C / (6 * lam * m));
      certified_noise = certified_noise && m1.certified() && m2.certified();
      r.ledger.push_back(m1.ledger_entry(fmt::format("phase {} Alg 2 localisation", t + 1)));
      r.ledger.push_back(m2.ledger_entry(fmt::format("phase {} Alg 4 stage 2", t + 1)));
      phases.push_back({{"m", ph.m}, {"C", C}, {"lambda", lam}, {"r0", r0}, {"W0", shape},
                        {"noise_scale", m2.beta()}, {"sampler", m2.sampler()}});
      if (trace != nullptr) {
        trace->phase_output.push_back(out);
        trace->sensitivity = sens;
        trace->beta = m2.beta();
      }
      center = out;
      continue;
    }
    const CertifiedSolution sol = solve_certified_glm_erm(p, ph.alpha);
    if (trace != nullptr) {
      trace->pre_noise.push_back(sol.w);
      trace->gaps.push_back(sol.gap);
      trace->alphas.push_back(ph.alpha);
      trace->newton_steps.push_back(sol.newton_steps);
    }
    if (!sol.certified) return abort_run(t, "optimization accuracy could not be certified");
    const L2LaplaceMechanism mech(ph.sensitivity, o.epsilon, static_cast<std::size_t>(d), o.noise);
    Vector out = mech.apply(sol.w, rng);
    project_ball(out, o.domain_radius);
    certified_noise = certified_noise && mech.certified();
    if (trace != nullptr) {
      trace->phase_output.push_back(out);
      trace->sensitivity = ph.sensitivity;
      trace->beta = mech.beta();
    }
    r.ledger.push_back(mech.ledger_entry(fmt::format("phase {} regularised extension ERM", t + 1)));
    phases.push_back({{"m", ph.m}, {"C", ph.C}, {"lambda", ph.lambda}, {"kappa", ph.kappa},
                      {"alpha", ph.alpha}, {"sensitivity", ph.sensitivity},
                      {"noise_scale", mech.beta()}, {"sampler", mech.sampler()}});
    center = out;
  }
  r.estimate = center;
  r.privacy = pure(o.epsilon, certified_noise);
  r.diagnostics = {{"profile", o.profile == HeavyTailedProfile::paper ? "paper" : "practical"},
                   {"inner", inner},
                   {"lens_probes", lens_probes},
                   {"composition", final_block_basic ? "parallel across blocks; basic inside the "
                                                       "final block (clip quantile + GD steps)"
                                                     : "parallel (disjoint blocks)"},
                   {"phases", phases}};
  return r;
}

}  // namespace dpstats::optimize
