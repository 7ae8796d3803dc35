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

namespace dpstats::optimize {
namespace {

// Practical-profile constants (docs/results/heavy-tailed.md, tuned on public synthetic samples).
constexpr double kMomentQuantile = 0.75;  // an absent G_k: private 0.75-quantile of the record bounds
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
// Clipped GD: docs/proofs/heavy-tailed.md §3 theory defaults (profile paper; T capped for run time,
// documented in the guide).
constexpr int kMaxDefaultSteps = 1000;
// Clipped GD, profile practical (the default method): the short schedule that `repro
// heavy-tailed-tune` found best on public samples (T = 16, C = 4, eta = 2 at G_k = 3.67,
// G_2 = 2.89, R = 2; docs/results/heavy-tailed.md "Tuning"), stated relative to the moment bound
// so that it follows the data's scale: C = 1.09 G_k, eta = 1.45 D / G_2. The card's T = n eps / d
// steps at eps/T each (basic composition) drown every step in noise (issue #15: 0.249 excess
// against 0.0019 for lipschitz-extension on the study task).
// The step takes D = 2R capped at the tuning's D = 4: in standardised units (features and a
// regression label divided by their private scales) the minimiser has norm of order 1, and a
// generous domain_radius with 16 fixed steps only overshoots (flights, R = 5: 18.0 minutes of
// absolute risk against 16.7 at R = 1 or 2).
constexpr int kPracticalGdSteps = 16;
constexpr double kPracticalGdClip = 1.09;
constexpr double kPracticalGdStep = 1.45;
constexpr double kPracticalGdStepDomain = 4;

bool final_gd(const HeavyTailedOptions& o) {
  return o.profile == Profile::practical && o.method == HeavyTailedMethod::lipschitz_extension &&
         o.final_solver.value_or(FinalSolver::clipped_gd) == FinalSolver::clipped_gd;
}

void check_positive_opt(const std::optional<double>& v, const char* name) {
  if (v) require(*v > 0 && std::isfinite(*v), fmt::format("{} must be finite and > 0, got {}", name, *v));
}

// Every option, before the data's values are read or noise drawn.
void validate_options(const HeavyTailedOptions& o) {
  validate(o.run);
  const bool gaussian = o.method == HeavyTailedMethod::dp_sgd;
  if (o.method != HeavyTailedMethod::non_private) {
    validate(o.privacy, gaussian ? DeltaRule::positive : DeltaRule::any);
  }
  if (!gaussian) {
    require(o.privacy.delta == 0, fmt::format("delta applies to method dp-sgd only (pure epsilon-DP "
                                              "methods have delta = 0), got {}", o.privacy.delta));
  }
  require(o.domain_radius > 0 && std::isfinite(o.domain_radius),
          fmt::format("domain_radius is required: the radius R of the ball W = B(0, R) that holds "
                      "the weights, in units of 1/feature (choose it from public knowledge of the "
                      "model); must be finite and > 0, got {}", o.domain_radius));
  require(o.moment_order >= 2 && std::isfinite(o.moment_order),
          fmt::format("moment_order must be a finite number >= 2, got {}", o.moment_order));
  check_positive_opt(o.moment_bound, "moment_bound");
  check_positive_opt(o.moment_bound_2, "moment_bound_2");
  require(o.scale_share > 0 && o.scale_share < 1,
          fmt::format("scale_share must be in (0, 1), got {}", o.scale_share));
  for (const auto& [v, name] : {std::pair{o.growth, "growth"}, std::pair{o.kappa, "kappa"},
                                std::pair{o.c_multiplier, "c_multiplier"},
                                std::pair{o.lambda_multiplier, "lambda_multiplier"},
                                std::pair{o.clip, "clip"}, std::pair{o.lambda, "lambda"},
                                std::pair{o.clip_tail_constant, "clip_tail_constant"},
                                std::pair{o.step_size, "step_size"}}) {
    check_positive_opt(v, name);
  }
  check_positive(o.huber_kappa, "huber_kappa");
  if (o.steps) require(*o.steps >= 1, fmt::format("steps must be >= 1, got {}", *o.steps));
  if (o.phases) require(*o.phases >= 1 && *o.phases <= 30,
                        fmt::format("phases must be in [1, 30], got {}", *o.phases));
  if (o.clip_budget_share) require(*o.clip_budget_share > 0 && *o.clip_budget_share < 1,
                                   fmt::format("clip_budget_share must be in (0, 1), got {}",
                                               *o.clip_budget_share));
  if (o.first_fraction) require(*o.first_fraction > 0 && *o.first_fraction < 1,
                                fmt::format("first_fraction must be in (0, 1), got {}",
                                            *o.first_fraction));
  if (o.holdout) {
    check_holdout(*o.holdout, o.holdout_loss_bound);
    require(o.holdout_share > 0 && o.holdout_share < 1 - 2 * o.scale_share,
            fmt::format("holdout_share must be in (0, 1 - 2 scale_share) (the centring and the "
                        "moment bound may each spend scale_share), got {}",
                        format_number(o.holdout_share)));
  }
  if (o.centre.value_or(false)) {
    require(o.method != HeavyTailedMethod::non_private && 2 * o.scale_share < 1,
            "centre = true needs a private method and 2 scale_share < 1 (the centring and the "
            "moment bound each spend scale_share)");
  }
  const bool le = o.method == HeavyTailedMethod::lipschitz_extension;
  require(le || (!o.inner && !o.final_solver && !o.final_clip_rule),
          "inner, final_solver and final_clip_rule apply to method lipschitz-extension only");
}

// `n`: the rows over all ranks (X holds this rank's shard, possibly empty when n >= 1).
void validate_data(const ConstMatrixRef& X, const Eigen::Ref<const Vector>& y, std::int64_t n) {
  require(n >= 1 && X.cols() >= 1, "data must have at least one row and one feature column");
  require(y.size() == X.rows(), "labels and features have different row counts (not shown)");
  require(X.allFinite(), "data must be finite (got a NaN or infinite entry)");
}

// Several ranks (options.run.comm): every private method. The noisy clipped GD methods' only
// data pass is the exact clipped gradient sum. The scale step runs over ranks: the private
// moment-bound estimate (one value per record, the scale layer's exact counts), the private
// centring (private_location over every rank's rows) and the offset check (exact integer counts).
// Output perturbation and lipschitz-extension gather the rows to rank 0 (rows_on_root), which runs
// the certified ERM solver (its floating-point Newton passes do not merge exactly across ranks),
// the final block's clip quantile and the noise; the final clipped-GD phase runs over the ranks.
// Refused: the Alg 2 double output perturbation inner solver (its localisation runs two solves
// and a lens search whose diagnostics are not broadcast) and non-private (a float reference
// solve, docs/guide.md "Heavy-tailed fits on several ranks").
void check_distributed(const HeavyTailedOptions& o, int ranks) {
  if (ranks == 1) return;
  require(o.method != HeavyTailedMethod::non_private,
          fmt::format("method non-private does not run on {} ranks (its reference solver sums "
                      "floating-point gradients and Hessians); run it on one rank", ranks));
  require(o.inner.value_or(InnerSolver::glm_one_stage) != InnerSolver::double_output_perturbation,
          fmt::format("inner double-output-perturbation does not run on {} ranks (its two "
                      "certified solves and lens search run on one process); use the default "
                      "inner solver, or run on one rank", ranks));
}

// Everything the ranks must agree on before the first collective.
std::string fingerprint(const HeavyTailedOptions& o, Eigen::Index d) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|d={}|centre={}|share={:a}",
                     name_of(o.method), name_of(o.profile), name_of(o.loss), o.huber_kappa,
                     o.privacy.epsilon, o.privacy.delta, o.domain_radius, o.moment_order,
                     o.moment_bound.value_or(-1), o.moment_bound_2.value_or(-1),
                     o.clip.value_or(-1), o.steps.value_or(-1), o.step_size.value_or(-1),
                     static_cast<int>(o.run.noise), d, o.centre ? (*o.centre ? 1 : 0) : -1,
                     o.scale_share) +
         fmt::format("|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", o.inner ? static_cast<int>(*o.inner) : -1,
                     o.final_solver ? static_cast<int>(*o.final_solver) : -1,
                     o.final_clip_rule ? static_cast<int>(*o.final_clip_rule) : -1,
                     o.phases.value_or(-1), o.first_fraction.value_or(-1),
                     o.clip_budget_share.value_or(-1), o.clip_tail_constant.value_or(-1),
                     o.lambda.value_or(-1), o.kappa.value_or(-1), o.growth.value_or(-1),
                     o.c_multiplier.value_or(-1), o.lambda_multiplier.value_or(-1)) +
         fmt::format("|h={:a}/{:a}/{:a}", o.holdout.value_or(-1), o.holdout_share,
                     o.holdout_loss_bound);
}

// checked_labels over every rank's labels: {0, 1} labels are mapped when every rank's are in
// {0, 1}, some are not ±1 and some are 0 (one rank's shard alone may hold only 1s).
Vector global_labels(Communicator& comm, const Eigen::Ref<const Vector>& y, GlmKind kind,
                     bool* mapped) {
  if (comm.size() == 1) return checked_labels(y, kind, mapped);
  *mapped = false;
  require(y.allFinite(), "labels must be finite (got a NaN or infinite label)");
  if (!binary_labels(kind)) return y;
  std::int64_t c[3] = {0, 0, 0};  // not ±1, not {0, 1}, zeros
  for (Eigen::Index i = 0; i < y.size(); ++i) {
    c[0] += (y[i] != 1 && y[i] != -1);
    c[1] += (y[i] != 0 && y[i] != 1);
    c[2] += (y[i] == 0);
  }
  comm.allreduce_sum(c);
  if (c[0] == 0) return y;
  require(c[1] == 0 && c[2] > 0,
          fmt::format("labels must be -1 or +1 for the {} loss (labels in {{0, 1}} are mapped "
                      "0 -> -1, 1 -> +1); got a label outside both sets", name_of(kind)));
  *mapped = true;
  return (2 * y.array() - 1).matrix();
}

// sup_W ‖∇f(w; a, y)‖ for one record (W = Ball(0, R)): |φ'| <= 1 (absolute, hinge, logistic),
// <= κ (huber), <= ‖a‖R + |y| (squared). Depends on this record alone.
double record_bound(GlmKind kind, double kappa, double norm, double y, double R) {
  switch (kind) {
    case GlmKind::huber: return kappa * norm;
    case GlmKind::squared: return norm * (norm * R + std::abs(y));
    default: return norm;
  }
}

// The resolved moment bound and what is left for the method.
struct Scale {
  MomentBound mb;
  double epsilon = 0;  // pure methods: epsilon left for the phases
  double rho = 0;      // dp-sgd: zCDP left for the steps
  std::optional<std::string> abstained;  // the estimate has no guarantee: abstain, say why
  nlohmann::json diagnostics = nlohmann::json::object();
};

// The budget's split (public: the options and the centring's share): the moment bound's estimate
// (pure epsilon, 0 when G_k is given) and what the method gets (pure epsilon, or rho for dp-sgd).
struct MethodShares {
  double estimate = 0, epsilon = 0, rho = 0;
};

// The held-out loss release (solvers/holdout.hpp), planned with the rest and taken from what the
// method has left: pure methods a Laplace at holdout_share x epsilon (basic composition), dp-sgd
// a Gaussian at holdout_share x rho. Non-private, or no holdout: none (the statement is exact).
std::optional<HoldoutLoss> holdout_mechanism(const HeavyTailedOptions& o) {
  if (!o.holdout || o.method == HeavyTailedMethod::non_private) return std::nullopt;
  if (o.method == HeavyTailedMethod::dp_sgd) {
    const double rho = o.holdout_share * epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta);
    return HoldoutLoss::gaussian(o.holdout_loss_bound, rho, o.run.noise);
  }
  return HoldoutLoss::laplace(o.holdout_loss_bound, o.holdout_share * o.privacy.epsilon,
                              o.run.noise);
}

// What the method keeps once the held-out loss release (when planned) has its share.
MethodShares less_holdout(MethodShares m, const HeavyTailedOptions& o) {
  if (!holdout_mechanism(o)) return m;
  if (o.method == HeavyTailedMethod::dp_sgd)
    m.rho -= o.holdout_share * epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta);
  else
    m.epsilon = remainder_after(m.epsilon, o.holdout_share * o.privacy.epsilon);
  return m;
}

// `centring`: what the centring spends before (pure epsilon, or rho for dp-sgd; 0 without).
MethodShares method_shares(const HeavyTailedOptions& o, double centring) {
  MethodShares m;
  const bool gaussian = o.method == HeavyTailedMethod::dp_sgd;
  m.epsilon = centring > 0 && !gaussian ? remainder_after(o.privacy.epsilon, centring)
                                        : o.privacy.epsilon;
  if (gaussian) m.rho = epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta);
  const double rho_total = m.rho;
  if (gaussian) m.rho -= centring;
  if (o.moment_bound || o.method == HeavyTailedMethod::non_private) return less_holdout(m, o);
  // Pure: basic composition, scale_share of epsilon. dp-sgd: scale_share of rho (pure eps is
  // eps^2/2-zCDP).
  m.estimate = gaussian ? std::sqrt(2 * o.scale_share * rho_total)
                        : o.scale_share * o.privacy.epsilon;
  if (gaussian) {
    m.rho = rho_total * (1 - o.scale_share) - centring;
  } else {
    m.epsilon = remainder_after(m.epsilon, m.estimate);
  }
  return less_holdout(m, o);
}

NormQuantileOptions moment_quantile_options(const HeavyTailedOptions& o, double epsilon) {
  NormQuantileOptions nq;
  nq.comm = o.run.comm;  // every rank's records: exact counts, rank 0 draws
  nq.loss = PrivacyLoss::pure(epsilon);
  nq.q = kMomentQuantile;
  return nq;
}

Scale resolve_scale(const ConstMatrixRef& X, const Vector& y, const HeavyTailedOptions& o,
                    double centring, ReleaseBudget& account, Rng& rng) {
  Scale s;
  s.mb.k = o.moment_order;
  s.mb.G_2 = o.moment_bound_2;
  const MethodShares shares = method_shares(o, centring);
  s.epsilon = shares.epsilon;
  s.rho = shares.rho;
  if (shares.estimate == 0) {
    s.mb.G_k = o.moment_bound.value_or(1);
    s.diagnostics["moment_bound"] = {{"value", s.mb.G_k}, {"estimated", false}};
    return s;
  }
  // The scale layer's selection on its log grid over every double (claims its planned entry).
  const double eps_s = shares.estimate;
  std::vector<double> values(static_cast<std::size_t>(X.rows()));
  parallel_ranges(X.rows(), o.run.threads, 4096, [&](int, std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {  // per record: no reduction, any cut
      values[static_cast<std::size_t>(i)] = std::min(
          record_bound(o.loss, o.huber_kappa, X.row(i).norm(), y[i], o.domain_radius),
          std::numeric_limits<double>::max());
    }
  });
  const NormQuantile pb =
      private_value_quantile(values, moment_quantile_options(o, eps_s), account, rng);
  s.mb.G_k = pb.value;
  Reliability r = reliability(pb, "moment_bound (--moment-bound)");
  r.estimate = "moment_bound (" + r.estimate + ")";
  s.diagnostics["moment_bound"] = pb.diagnostics();
  s.diagnostics["moment_bound"].update(
      {{"value", pb.value}, {"estimated", true}, {"epsilon", eps_s}, {"reliability", r.json()},
       {"rule", fmt::format("private {}-quantile of sup_W |grad f(w; z)| per record (scale layer, "
                            "log grid over every double)", kMomentQuantile)}});
  if (!r.usable) s.abstained = r.reason();
  return s;
}

struct GdSchedule {
  int T;
  double C, eta;
};

// `standardized`: the features were centred and scaled privately (the short schedule needs a
// well-conditioned problem; in the data's raw units, e.g. miles against hours, it stops far from
// the optimum, so the card's schedule stays there).
// The number of steps (public: n, d, epsilon and the options; not the moment bound).
int gd_steps(std::int64_t n, std::int64_t d, const HeavyTailedOptions& o, double epsilon,
             bool standardized) {
  if (standardized && o.profile == Profile::practical && o.method == HeavyTailedMethod::clipped_gd)
    return o.steps.value_or(kPracticalGdSteps);
  const double ne = static_cast<double>(n) * epsilon;
  return o.steps.value_or(static_cast<int>(
      std::clamp(std::ceil(ne / static_cast<double>(d)), 1.0, static_cast<double>(kMaxDefaultSteps))));
}

GdSchedule gd_schedule(std::int64_t n, std::int64_t d, const HeavyTailedOptions& o,
                       const MomentBound& mb, double epsilon, bool standardized) {
  const double ne = static_cast<double>(n) * epsilon, D = 2 * o.domain_radius;
  GdSchedule s;
  s.T = gd_steps(n, d, o, epsilon, standardized);
  if (standardized && o.profile == Profile::practical && o.method == HeavyTailedMethod::clipped_gd) {
    s.C = o.clip.value_or(kPracticalGdClip * mb.G_k);
    s.eta = o.step_size.value_or(kPracticalGdStep * std::min(D, kPracticalGdStepDomain) / mb.g2());
    check_positive(s.C, "clip");
    check_positive(s.eta, "step_size");
    return s;
  }
  s.C = o.clip.value_or(mb.G_k * std::pow(ne / static_cast<double>(d), 1 / (2 * mb.k)));
  const double beta = 2 * s.C * s.T / ne;
  const auto dd = static_cast<double>(d);
  s.eta = o.step_size.value_or(D / (std::sqrt(s.C * s.C + dd * (dd + 1) * beta * beta) *
                                    std::sqrt(static_cast<double>(s.T))));
  check_positive(s.C, "clip");
  check_positive(s.eta, "step_size");
  return s;
}

// The one mechanism of T clipped-GD steps on m records: l2-Laplace at epsilon/T or the Gaussian
// at rho/T, on the clipped mean gradient (sensitivity: the exact sum's, over m). Built once its
// clip is known; its entry (count T) is presented before the first step draws.
struct GdMechanism {
  std::optional<GaussianMechanism> gaussian;
  std::optional<L2LaplaceMechanism> laplace;
  int steps = 0;
  LedgerEntry entry(const std::string& purpose) const {
    LedgerEntry e = gaussian ? gaussian->ledger_entry(purpose) : laplace->ledger_entry(purpose);
    e.count = steps;
    return e;
  }
  double scale() const { return gaussian ? gaussian->sigma() : laplace->beta(); }
  Vector apply(const Vector& v, Rng& rng) const {
    return gaussian ? Vector(gaussian->apply(v, rng)) : Vector(laplace->apply(v, rng));
  }
};

GdMechanism gd_mechanism(std::int64_t m, std::int64_t d, const GdSchedule& s, double epsilon,
                         double rho, bool gaussian, NoiseMode noise) {
  const double sens = ClippedVectorSum(d, s.C, m).sensitivity() / static_cast<double>(m);
  const auto dim = static_cast<std::size_t>(d);
  GdMechanism g;
  g.steps = s.T;
  if (gaussian) g.gaussian.emplace(GaussianMechanism::from_rho(sens, rho / s.T, dim, noise));
  else g.laplace.emplace(sens, epsilon / s.T, dim, noise);
  return g;
}

// What a plan charges for T steps before the clip is known (the same losses).
LedgerEntry gd_reserved_entry(int steps, double epsilon, double rho, bool gaussian,
                              const std::string& purpose) {
  return gaussian ? GaussianMechanism::reserved_entry(rho / steps, purpose, steps)
                  : L2LaplaceMechanism::reserved_entry(epsilon / steps, purpose, steps);
}

struct GdRun {
  Vector w;
  double sensitivity = 0, scale = 0;
};

// Where this process's rows sit among all ranks' rows (options.run.comm): local row i is global
// row offset + i. One process: offset 0, the communicator is single_process().
struct Shard {
  Communicator& comm;
  std::int64_t offset = 0;
};

// The exact lattice sum (ClippedVectorSum) of the clipped per-record gradients at w over the
// global rows [begin, begin + m), from this rank's rows among them: cut into parts on `threads`,
// one partial lattice sum per part, added exactly, then over ranks by allreduce_exact. Integer
// sums: the same total for any thread count, any cut and any number of ranks.
Vector clipped_gradient_sum(const ConstMatrixRef& X, const Vector& y, std::int64_t begin,
                            std::int64_t m, const GlmEnvelope& env, const Vector& w, double C,
                            int threads, const Shard& shard, ClippedVectorSum& probe) {
  const std::int64_t d = X.cols();
  const std::int64_t lo = std::clamp<std::int64_t>(begin - shard.offset, 0, X.rows());
  const std::int64_t hi = std::clamp<std::int64_t>(begin + m - shard.offset, 0, X.rows());
  constexpr std::int64_t kGrain = 2048;  // rows per part at least (a part's sum costs O(d))
  const std::int64_t parts = std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(1, (hi - lo) / kGrain));
  std::vector<Vector> partial(static_cast<std::size_t>(parts), Vector::Zero(d));
  const double inf = std::numeric_limits<double>::infinity();
  parallel_ranges(hi - lo, static_cast<int>(parts), kGrain, [&](int p, std::int64_t b, std::int64_t e) {
    ClippedVectorSum sum(d, C, m);
    Vector g(d);  // one buffer per part: no allocation per record
    for (std::int64_t i = lo + b; i < lo + e; ++i) {
      g.noalias() = env.derivative(X.row(i).dot(w), y[i], inf) * X.row(i).transpose();
      sum.add(g);
    }
    partial[static_cast<std::size_t>(p)] = sum.lattice_sum();
  });
  Vector lattice = Vector::Zero(d);
  for (const Vector& v : partial) lattice += v;  // exact integers below 2^53 (capacity m)
  allreduce_exact(shard.comm, lattice);
  return probe.value_of(lattice);
}

// T projected steps on rows [begin, begin + m) from x0, each releasing the clipped mean gradient
// through `mech` (gd_mechanism, its entry already presented); returns the average iterate. The
// noise is drawn once, on rank 0, and every rank continues from its value.
GdRun gd_core(const ConstMatrixRef& X, const Vector& y, std::int64_t begin, std::int64_t m,
              const GlmEnvelope& env, const Vector& x0, const GdSchedule& s,
              const GdMechanism& mech, double radius, const RunControl& run, const Shard& shard,
              bool noiseless, Rng& rng) {
  const std::int64_t d = X.cols();
  GdRun out;
  Vector w = x0, avg = Vector::Zero(d);
  ClippedVectorSum probe(d, s.C, m);
  const double dn = static_cast<double>(m);
  out.sensitivity = probe.sensitivity() / dn;
  out.scale = mech.scale();
  for (int t = 0; t < s.T; ++t) {
    Vector noisy =
        clipped_gradient_sum(X, y, begin, m, env, w, s.C, run.threads, shard, probe) / dn;
    if (!noiseless) noisy = on_root(shard.comm, [&] { return mech.apply(noisy, rng); });
    w -= s.eta * noisy;
    project_to_ball(w, radius);
    avg += w;
  }
  out.w = avg / s.T;
  return out;
}

}  // namespace

namespace {

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


// ---------------------------------------------------------------------------------------------
// fit_heavy_tailed: validate -> plan (the centring, an absent G_k, the method) -> charge -> run
// (the centring, the estimate, the method) -> seal (docs/proofs/heavy-tailed.md).

namespace {

struct Problem {  // what every method reads
  const ConstMatrixRef& X;
  const Vector& y;
  const HeavyTailedOptions& o;
  GlmEnvelope env;
  Scale scale;
  bool noiseless = false;
  bool standardized = false;  // features centred and scaled privately (with the constant column)
  Shard shard{single_process()};
  std::int64_t n = 0;         // rows over all ranks (X holds this rank's shard)
};

struct MethodRun {
  Vector w;
  std::optional<std::string> abstained;
  nlohmann::json diagnostics = nlohmann::json::object();
};

const char* const kGdPurpose = "clipped mean gradient";

MethodRun noisy_gd(const Problem& p, ReleaseBudget& account, Rng& rng) {
  const std::int64_t n = p.n, d = p.X.cols();
  const GdSchedule s = gd_schedule(n, d, p.o, p.scale.mb, p.scale.epsilon, p.standardized);
  const bool gaussian = p.o.method == HeavyTailedMethod::dp_sgd;
  const GdMechanism mech = gd_mechanism(n, d, s, p.scale.epsilon, p.scale.rho, gaussian, p.o.run.noise);
  account.claim(mech.entry(kGdPurpose));
  const GdRun run = gd_core(p.X, p.y, 0, n, p.env, Vector::Zero(d), s, mech, p.o.domain_radius,
                            p.o.run, p.shard, p.noiseless, rng);
  const bool short_schedule = p.standardized && p.o.profile == Profile::practical &&
                              p.o.method == HeavyTailedMethod::clipped_gd;
  return {run.w, std::nullopt,
          {{"steps", s.T}, {"clip", s.C}, {"step_size", s.eta}, {"noise_scale", run.scale},
           {"schedule", short_schedule ? "practical: T = 16, clip 1.09 G_k, step 1.45 min(D, 4) / "
                                         "G_2 (standardised features)"
                                       : "card: T = min(n eps / d, 1000), clip G_k (n eps / d)^(1/2k)"}}};
}

MethodRun non_private(const Problem& q) {
  const RowMatrix A = q.X;
  GlmErmProblem p;
  p.A = &A;
  p.y = &q.y;
  p.begin = 0;
  p.end = A.rows();
  p.env = q.env;
  p.C = std::numeric_limits<double>::infinity();
  p.lambda = 1e-9 * q.scale.mb.G_k / q.o.domain_radius;
  p.w0 = Vector::Zero(A.cols());
  p.center = Vector::Zero(A.cols());
  p.radius = q.o.domain_radius;
  p.threads = q.o.run.threads;
  // Non-private reference (Huber-smoothed to width 10^-6), not a private release.
  return {solve_glm_erm_reference(p), std::nullopt, {{"private", false}}};
}

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

// Whether the fit centres: public values only (options, n, d, the budget). `share` is what the
// centring (or, below its threshold with an unknown scale, the offset check) may spend: pure
// epsilon, or rho for dp-sgd; 0 when neither runs.
struct CentrePlan {
  double share = 0;
  bool check = false;     // too few records to centre an unknown scale: run the offset check
  std::size_t need = 0;   // records the private centring needs (public)
  std::string why_not;
};

CentrePlan plan_centring(const ConstMatrixRef& X, std::int64_t n, const HeavyTailedOptions& o) {
  CentrePlan p;
  if (o.centre == false) return p.why_not = "centre = false", p;
  const bool unknown = !o.moment_bound && !o.clip && !o.lambda && !o.step_size &&
                       o.method != HeavyTailedMethod::non_private && 2 * o.scale_share < 1;
  if (!o.centre && !unknown) {
    return p.why_not = "the feature scale is public (moment_bound, clip, lambda or step_size "
                       "given) or the method is not private", p;
  }
  const bool gaussian = o.method == HeavyTailedMethod::dp_sgd;
  p.share = o.scale_share * (gaussian ? epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta)
                                      : o.privacy.epsilon);
  const LocationOptions lo =
      centring_options(gaussian ? PrivacyLoss::zcdp(p.share) : PrivacyLoss::pure(p.share));
  const std::size_t d = static_cast<std::size_t>(X.cols()) + (binary_labels(o.loss) ? 0 : 1);
  const auto shortfall = private_location_shortfall(lo, static_cast<std::size_t>(n), d);
  if (shortfall && !o.centre) {
    p.check = true;  // the offset check spends the share the centring would have
    p.need = centring_units_needed(lo, d);
    p.why_not = "too few records for a private centring (" + *shortfall +
                "): no intercept, features in the data's units";
  }
  return p;  // centre = true with a shortfall abstains after the estimate
}

// What the centring (or the offset check) spends: pure epsilon, or rho for dp-sgd; 0 without.
double centring_spend(const CentrePlan& p, bool gaussian) {
  if (p.share == 0) return 0;
  return p.check ? (gaussian ? kOffsetCheckZcdpFraction : 1.0) * p.share : p.share;
}

PrivacyLoss share_loss(double share, bool gaussian) {
  return gaussian ? PrivacyLoss::zcdp(share) : PrivacyLoss::pure(share);
}

// Runs the private centring when it applies: fills `st` and Z = the standardised rows with the
// constant column; below its threshold runs the offset check instead. States either in `diag`
// (with "abstained" when the release must abstain), and returns what it spent.
// `n`: the records over every rank (X holds this rank's).
double centre_features(const ConstMatrixRef& X, const Vector& y, std::int64_t n,
                       const HeavyTailedOptions& o, ReleaseBudget& account, Rng& rng,
                       nlohmann::json& diag, std::optional<Standardization>& st, RowMatrix& Z) {
  const CentrePlan p = plan_centring(X, n, o);
  const bool gaussian = o.method == HeavyTailedMethod::dp_sgd;
  const PrivacyLoss share = share_loss(p.share, gaussian);
  const Vector* labels = binary_labels(o.loss) ? nullptr : &y;
  if (p.share == 0 || p.check) diag = {{"applied", false}, {"reason", p.why_not}};
  if (p.share == 0) return 0;
  if (p.check) {  // are the columns (and a regression label) far from 0?
    const double spend = centring_spend(p, gaussian);
    const OffsetCheck oc = offset_check(X, 1, labels, share_loss(spend, gaussian), o.run.noise,
                                        account, rng, o.run.comm);
    diag["offset_check"] = oc.diagnostics;
    diag["offset_check"]["share"] = (gaussian ? kOffsetCheckZcdpFraction : 1.0) * o.scale_share;
    if (oc.blocks())
      diag["abstained"] = offset_abstention(oc, static_cast<std::size_t>(n), p.need, "records");
    return spend;
  }
  // Regression losses standardise the label too: the weights and domain_radius are unit-free.
  Centring c = private_centring(X, share, account, rng, labels, o.run.comm);
  diag = c.standardization.diagnostics;
  diag["share"] = o.scale_share;
  if (c.abstained) {
    diag["abstained"] = *c.abstained;
  } else {
    Z = c.standardization.apply(X);
    st = std::move(c.standardization);
  }
  return p.share;
}

// The held-out records (solvers/holdout.hpp: a keyed hash of each record's values and label)
// and the others, labels as mapped for the fit.
struct HeldRows {
  bool active = false;
  RowMatrix train_X, held_X;
  Vector train_y, held_y;
};

HeldRows hold_out_rows(const ConstMatrixRef& X, const Vector& y, const HeavyTailedOptions& o,
                       Rng& rng) {
  HeldRows h;
  if (!o.holdout) return h;
  h.active = true;
  const HoldoutSplit split(*o.holdout, rng, o.run.comm);
  std::vector<Eigen::Index> keep, out;
  std::vector<double> row(static_cast<std::size_t>(X.cols() + 1));
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    for (Eigen::Index j = 0; j < X.cols(); ++j) row[static_cast<std::size_t>(j)] = X(i, j);
    row.back() = y[i];
    (split.held_out(row) ? out : keep).push_back(i);
  }
  auto take = [&](const std::vector<Eigen::Index>& rows, RowMatrix& A, Vector& b) {
    A.resize(static_cast<Eigen::Index>(rows.size()), X.cols());
    b.resize(static_cast<Eigen::Index>(rows.size()));
    for (std::size_t k = 0; k < rows.size(); ++k) {
      A.row(static_cast<Eigen::Index>(k)) = X.row(rows[k]);
      b[static_cast<Eigen::Index>(k)] = y[rows[k]];
    }
  };
  take(keep, h.train_X, h.train_y);
  take(out, h.held_X, h.held_y);
  return h;
}

// Each held-out record's loss of the released model x . w (+ b, when centred) in the user's
// units, released by `mechanism` (non-private: the exact mean of the clipped losses).
nlohmann::json held_out_loss(const HeldRows& split, const Vector& w, const HeavyTailedOptions& o,
                             const GlmEnvelope& env, const std::optional<HoldoutLoss>& mechanism,
                             Rng& rng) {
  const Eigen::Index d = split.held_X.cols();
  const double b = w.size() > d ? w[d] : 0.0;
  std::vector<double> losses(static_cast<std::size_t>(split.held_X.rows()));
  for (Eigen::Index i = 0; i < split.held_X.rows(); ++i)
    losses[static_cast<std::size_t>(i)] = env.phi(split.held_X.row(i).dot(w.head(d)) + b,
                                                  split.held_y[i]);
  nlohmann::json j;
  if (mechanism) {  // the held-out count is private (issue 28): n (public) x fraction
    const std::int64_t n = allreduce_count(comm_or_single(o.run.comm),
                                           split.train_X.rows() + split.held_X.rows());
    j = mechanism->release(losses, rng, o.run.comm, {n, *o.holdout, n});
  } else {
    double sum = 0;
    for (double v : losses) sum += std::clamp(v, 0.0, o.holdout_loss_bound);
    j = {{"units", losses.size()}, {"loss_bound", o.holdout_loss_bound}, {"private", false},
         {"loss", losses.empty() ? nlohmann::json(nullptr) : nlohmann::json(sum / losses.size())}};
  }
  j.update({{"fraction", *o.holdout}, {"unit", "record"},
            {"loss_name", fmt::format("the record's {} loss of the released model (the user's "
                                      "units), clipped to loss_bound", name_of(o.loss))}});
  return j;
}

// The release's plan: every charge, from public values (options, n, d), before any noise. The
// method's mechanisms are built once the moment bound (and the centring) are released: their
// entries are reserved here with the same losses.
Ledger heavy_tailed_plan(std::int64_t n, Eigen::Index d, const HeavyTailedOptions& o,
                         const CentrePlan& cp) {
  const bool gaussian = o.method == HeavyTailedMethod::dp_sgd;
  const Eigen::Index cols = d + (binary_labels(o.loss) ? 0 : 1);  // a regression label too
  Ledger l;
  if (cp.share > 0 && cp.check)
    l.push_back(offset_check_entry(cols, share_loss(centring_spend(cp, gaussian), gaussian), o.run.noise));
  else if (cp.share > 0)
    l = private_location_entries(centring_options(share_loss(cp.share, gaussian)),
                                 static_cast<std::size_t>(cols));
  const MethodShares m = method_shares(o, centring_spend(cp, gaussian));
  if (m.estimate > 0) {
    const Ledger q = private_norm_quantile_entries(moment_quantile_options(o, m.estimate));
    l.insert(l.end(), q.begin(), q.end());
  }
  const bool standardized = cp.share > 0 && !cp.check;
  switch (o.method) {
    case HeavyTailedMethod::non_private: break;
    case HeavyTailedMethod::clipped_gd:
    case HeavyTailedMethod::dp_sgd: {
      const int T = gd_steps(n, d + (standardized ? 1 : 0), o, m.epsilon, standardized);
      l.push_back(gd_reserved_entry(T, m.epsilon, m.rho, gaussian, kGdPurpose));
      break;
    }
    default: l.push_back(localize_composite(o, m.epsilon).planned());
  }
  if (const auto h = holdout_mechanism(o)) l.push_back(h->ledger_entry());
  return l;
}

// Pop-Localize's certificates decide from the data whether a phase aborts, and that bit is not
// covered by the epsilon-DP statement (docs/threat-model.md; the audit measured epsilon >= 5.5):
// those releases are not certified. clipped-gd and dp-sgd never abort on the data.
SealFacts seal_facts(const HeavyTailedOptions& o, bool priv, bool noiseless, const MethodRun& run,
                     nlohmann::json& diag) {
  const bool abort_bit = o.method == HeavyTailedMethod::lipschitz_extension ||
                         o.method == HeavyTailedMethod::output_perturbation;
  if (priv && abort_bit) {
    diag["certified"] = "false: whether a phase's certificate aborts depends on the data and is "
                        "not covered by the epsilon-DP statement (docs/proofs/heavy-tailed.md "
                        "\"Abort bit\"); the default clipped-gd has no such bit";
  }
  SealFacts facts(priv && !abort_bit);
  facts.noise = o.run.noise;
  facts.noiseless = noiseless;
  facts.abstained = run.abstained;
  return facts;
}

}  // namespace

Release<Vector> fit_heavy_tailed(const ConstMatrixRef& X_in, const Eigen::Ref<const Vector>& y_in,
                                 const HeavyTailedOptions& o, Rng& rng, Budget* budget,
                                 HeavyTailedTrace* trace) {
  validate_options(o);
  Communicator& comm = comm_or_single(o.run.comm);
  check_distributed(o, comm.size());
  check_agreement(comm, fingerprint(o, X_in.cols()), "the heavy-tailed fit's options and columns");
  const ShardRows all = shard_rows(comm, X_in.rows());
  validate_data(X_in, y_in, all.total);
  bool mapped = false;
  const Vector y_all = global_labels(comm, y_in, o.loss, &mapped);
  const HeldRows split = hold_out_rows(X_in, y_all, o, rng);  // rows the fit skips
  const ConstMatrixRef X = split.active ? ConstMatrixRef(split.train_X) : X_in;
  const Vector& y = split.active ? split.train_y : y_all;
  const ShardRows rows = split.active ? shard_rows(comm, X.rows()) : all;
  require(rows.total >= 1, "holdout: no row is left to fit on");
  const bool priv = o.method != HeavyTailedMethod::non_private;
  const bool gaussian = o.method == HeavyTailedMethod::dp_sgd;
  ReleaseBudget account = priv ? ReleaseBudget(o.privacy.loss(),
                                               gaussian ? Accountant::zcdp : Accountant::basic, budget)
                               : ReleaseBudget::non_private();
  GlmEnvelope env;
  env.kind = o.loss;
  env.huber_kappa = o.huber_kappa;
  // plan and charge: the centring (decided from public values), the moment bound's estimate and
  // the method, all at once before any noise (the budget lives on rank 0).
  if (priv) {
    const Ledger plan = heavy_tailed_plan(rows.total, X.cols(), o, plan_centring(X, rows.total, o));
    all_or_none(comm, [&] { account.charge(plan); });
  }
  // run, part 0: private centring (or the offset check).
  nlohmann::json centring;
  std::optional<Standardization> st;
  RowMatrix Z;
  const double spent = centre_features(X, y, rows.total, o, account, rng, centring, st, Z);
  const ConstMatrixRef Xw = st ? ConstMatrixRef(Z) : X;
  const Vector yz = st ? st->apply_labels(y) : Vector();
  const Vector& yw = st ? yz : y;
  const bool centring_failed = centring.contains("abstained");
  Problem q{Xw, yw, o, env, centring_failed ? Scale{} : resolve_scale(Xw, yw, o, spent, account, rng),
            trace && trace->noiseless, st.has_value(), Shard{comm, rows.offset}, rows.total};
  MethodRun run;
  std::optional<HoldoutLoss> holdout;
  if (centring_failed) {
    run.abstained = centring["abstained"].get<std::string>();  // only the centring was charged
  } else if (q.scale.abstained) {
    run.abstained = q.scale.abstained;  // nothing but the estimates was charged or run
  } else {
    holdout = holdout_mechanism(o);  // its entry is in the plan, final
    switch (o.method) {
      case HeavyTailedMethod::clipped_gd:
      case HeavyTailedMethod::dp_sgd: run = noisy_gd(q, account, rng); break;
      case HeavyTailedMethod::non_private: run = non_private(q); break;
      default: run = pop_localize(q, account, rng, trace);
    }
  }
  nlohmann::json diag = {{"method", name_of(o.method)}, {"profile", name_of(o.profile)},
                         {"loss", name_of(o.loss)}, {"scale", q.scale.diagnostics}};
  if (priv) diag["centring"] = std::move(centring);
  if (st) {
    diag["intercept"] = true;
    run.w = st->to_user_units(run.w);  // post-processing
  }
  if (mapped) diag["labels"] = "mapped {0, 1} -> {-1, +1}";
  if (split.active && !run.abstained)
    diag["holdout"] = held_out_loss(split, run.w, o, env, holdout, rng);
  diag.update(run.diagnostics);
  diag["stated_error"] = fit_stated_error();
  return seal(std::move(run.w), account, seal_facts(o, priv, q.noiseless, run, diag), rng,
              std::move(diag));
}

}  // namespace dpstats::optimize
