// Alg 2/3 (docs/proofs/user-level.md §2.3–2.5) and their data-free schedules.
//
// Paper profile, privacy as in Thm C.1 (docs/proofs/user-level.md §2.4): phases run on disjoint users of one random
// permutation (parallel composition). Within a phase the pass bits of the concentration checks
// are one AboveThreshold run (threshold 4K_i/5 + Lap(8/ε) drawn once, queries s + Lap(16/ε),
// sensitivity 2): ε/2. On the good event the P6 filter's mean has the Lemma C.2 coupling
// sensitivity ≲ τ·ln(1/ζ)/K_i, and the T_i Gaussian steps on K_i-of-n_i subsets give ε/2 by
// amplification and advanced composition. The unstated "≲" is the caveat of the paper profile.
//
// Practical profile, our proof: the released per-step quantity is the exact clipped sum
// Σ_{Z∈B_t} clip_τ(q(Z)) (exact_sum.hpp), whose l2 sensitivity under replacing one user's data is
// the exact-sum bound (≈ 2τ) whether or not the user is in B_t (B_t is drawn from public
// randomness; a user enters at most once). The secure Gaussian at ρ/T_i makes each step
// ρ/T_i-zCDP given the past; T_i adaptive steps compose to ρ; the phase start is a function of
// earlier phases' outputs, which saw other users only, so phases compose in parallel. No
// amplification by subsampling is claimed. Everything else (λ, p, q, T_i, K_i, L_f, r, τ's
// value) is utility only.
#include "dpstats/user_level/accelerated.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/above_threshold.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/solvers/dp_sgd.hpp"
#include "dpstats/solvers/exact_sum.hpp"
#include "dpstats/solvers/smoothing.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "checks.hpp"

namespace dpstats::optimize {

// ---------------------------------------------------------------------------------------------
// AC-SA (docs/proofs/user-level.md §2.3)

Acsa::Acsa(const Vector& start, double mu, double L_f, const Domain& X)
    : mu_(mu), L_f_(L_f), X_(&X), x_(start), xag_(start), xmd_(start) {
  require(mu >= 0 && std::isfinite(mu), "AC-SA: mu must be finite and >= 0");
  require(L_f > 0 && std::isfinite(L_f), "AC-SA: L_f must be finite and > 0");
  X_->project(x_);
  xag_ = x_;
  xmd_ = x_;
}

double Acsa::gamma() const {
  const double t = static_cast<double>(t_);
  return 4 * L_f_ / (t * (t + 1));
}

const Vector& Acsa::query() {
  const double a = alpha(), g = gamma();
  const double den = g + (1 - a * a) * mu_;
  xmd_ = ((1 - a) * (mu_ + g) * xag_ + a * ((1 - a) * mu_ + g) * x_) / den;
  return xmd_;
}

void Acsa::step(const Vector& G) {
  const double a = alpha(), g = gamma();
  x_ = (a * mu_ * xmd_ + ((1 - a) * mu_ + g) * x_ - a * G) / (mu_ + g);
  X_->project(x_);
  xag_ = a * x_ + (1 - a) * xag_;
  ++t_;
}

void Acsa::restart() {
  x_ = xag_;
  xmd_ = xag_;
  t_ = 1;
}

// ---------------------------------------------------------------------------------------------

std::vector<std::int64_t> concentration_degrees(const RowMatrix& Q, double r) {
  require(r > 0, "concentration radius must be > 0");
  const Eigen::Index K = Q.rows();
  const Vector sq = Q.rowwise().squaredNorm();
  const double thr = r * r;
  std::vector<std::int64_t> h(static_cast<std::size_t>(K), 0);
  for (Eigen::Index j = 0; j < K; ++j) {
    const Vector dots = Q * Q.row(j).transpose();
    std::int64_t c = 0;
    for (Eigen::Index k = 0; k < K; ++k) {
      double d2 = sq[j] + sq[k] - 2 * dots[k];
      if (std::abs(d2 - thr) <= 1e-9 * thr) d2 = (Q.row(j) - Q.row(k)).squaredNorm();
      if (d2 <= thr) ++c;
    }
    h[static_cast<std::size_t>(j)] = c;
  }
  return h;
}

// ---------------------------------------------------------------------------------------------
// Schedules (docs/proofs/user-level.md §2.4, §2.5, §2.7)

namespace {

// r = R·√d/(ε·n·√m) (Thm D.3).
double default_radius(std::int64_t n, std::int64_t m, double epsilon, const ProblemConstants& k) {
  return k.R * std::sqrt(static_cast<double>(k.d)) /
         (epsilon * static_cast<double>(n) * std::sqrt(static_cast<double>(m)));
}

// Phase i of the paper schedule (Alg 3 lines 2–7, Alg 2 line 2, Lemma C.2), public values only.
Alg3Phase paper_phase_schedule(const Alg3Plan& P, std::int64_t i, std::int64_t n, std::int64_t m,
                               std::int64_t d, double epsilon, double delta, double shrink) {
  const double nd = static_cast<double>(n), md = static_cast<double>(m),
               dd = static_cast<double>(d);
  const double lnndm = std::log(nd * dd * md);
  Alg3Phase ph;
  const double id = static_cast<double>(i);
  ph.n_i = static_cast<std::int64_t>(std::floor(shrink * nd / std::exp2(id * P.q)));
  ph.lambda_i = P.lambda * std::exp2(P.p * id);
  // Line 4: T_i = ⌈(1 + √(β/λ_i))·ln(ndm)⌉.
  ph.T_i = static_cast<std::int64_t>(std::ceil((1 + std::sqrt(P.beta / ph.lambda_i)) * lnndm));
  const double ni = static_cast<double>(ph.n_i), Ti = static_cast<double>(ph.T_i);
  // Lines 5–7.
  const double tail = 500 * std::log(ni * ni * md * md * std::exp(epsilon) / delta);
  ph.K_raw = tail * (1 / epsilon + ni * epsilon / std::sqrt(Ti * std::log(1 / delta)));
  ph.K_laplace = static_cast<std::int64_t>(std::ceil(tail / epsilon));
  const auto k_up = static_cast<std::int64_t>(std::ceil(ph.K_raw));
  const auto k_cover = static_cast<std::int64_t>(std::ceil(ni / Ti));
  ph.K_i = std::min(ph.n_i, std::max(k_up, k_cover));
  // Alg 2 line 2.
  ph.sigma_i = 1000 * P.tau * std::sqrt(Ti) * std::log(nd * dd * std::exp(epsilon) / delta) /
               (epsilon * ni);
  ph.L_f = P.beta + ph.lambda_i;
  ph.stage_length = std::min<std::int64_t>(
      ph.T_i, static_cast<std::int64_t>(std::ceil(2 * std::sqrt(2.0) * std::sqrt(ph.L_f / ph.lambda_i))));
  // Lemma C.2 with its "≲" read as 1: τ·ln(1/ζ)/K_i, ζ = δ/(10·T_i·e^ε).
  ph.sensitivity = ph.K_i > 0 ? P.tau * std::log(10 * Ti * std::exp(epsilon) / delta) /
                                    static_cast<double>(ph.K_i)
                              : 0;
  return ph;
}

Alg3Plan plan_paper(std::int64_t n, std::int64_t m, double epsilon, double delta,
                    const ProblemConstants& k, const Alg3Options& o, bool nonsmooth) {
  Alg3Plan P;
  P.profile = Profile::paper;
  P.nonsmooth = nonsmooth;
  const double nd = static_cast<double>(n), md = static_cast<double>(m),
               dd = static_cast<double>(k.d);
  if (nonsmooth) {
    P.smoothing_radius = o.smoothing_radius.value_or(default_radius(n, m, epsilon, k));
    check_positive(P.smoothing_radius, "smoothing_radius");
    P.beta = k.L * std::sqrt(dd) / P.smoothing_radius;  // β_r (Lemma D.1)
  } else {
    require(k.beta.has_value() && *k.beta > 0,
            "Alg 3 needs a smooth loss (beta > 0); use method 'nonsmooth' for hinge-type losses");
    P.beta = *k.beta;
  }
  P.q = o.q.value_or(0.1);
  check_positive(P.q, "q");
  const double shrink = 1 - std::exp2(-P.q);
  P.l = static_cast<std::int64_t>(std::floor(std::log2(nd)));
  if (o.num_phases) {
    require(*o.num_phases >= 1, "num_phases must be >= 1");
    P.l = std::min<std::int64_t>(P.l, *o.num_phases);
    P.warnings.push_back("num_phases caps l: privacy unchanged, the risk bound no longer applies");
  }
  P.n_condition_lhs = std::pow(nd, 1 - P.q);
  P.n_condition_rhs =
      100 * std::log(20 * nd * md * dd * std::exp(epsilon) / delta) / (epsilon * shrink);
  if (P.n_condition_lhs <= P.n_condition_rhs)
    P.warnings.push_back("n^(1-q) <= 100·ln(20nmde^ε/δ)/(ε(1−2^−q)): outside Thm C.1");
  if (epsilon > 10) P.warnings.push_back("epsilon > 10: outside Thm C.1");
  if (delta >= 1 / (nd * md)) P.warnings.push_back("delta >= 1/(nm): outside the utility theorem");
  // Thm C.3: p >= 3q + 2.5 + ln m/(2 ln n); λ = (L/R)(1/√(nm) + √d/(εn√m)); Thm D.3 [fix: units]
  // λ = (L/R)/√(mn) for the smoothed variant.
  P.p = o.p.value_or(3 * P.q + 2.5 + std::log(md) / (2 * std::log(nd)));
  P.lambda = o.lambda.value_or(
      nonsmooth ? k.L / k.R / std::sqrt(nd * md)
                : k.L / k.R * (1 / std::sqrt(nd * md) + std::sqrt(dd) / (epsilon * nd * std::sqrt(md))));
  check_positive(P.lambda, "lambda");
  const double lnndm = std::log(nd * dd * md);
  // τ = 2L√(2 ln(2/γ)/m), γ = 1/((nm)^{5/4}·ln(ndm)·e^{2ε}) (docs/proofs/user-level.md §2.4 [choice], Pinelis).
  P.gamma = 1 / (std::pow(nd * md, 1.25) * lnndm * std::exp(2 * epsilon));
  require(o.c_tau > 0, "c_tau must be > 0");
  P.tau = o.c_tau * 2 * k.L * std::sqrt(2 * std::log(2 / P.gamma) / md);
  std::int64_t offset = 0;
  for (std::int64_t i = 1; i <= P.l; ++i) {
    const Alg3Phase ph = paper_phase_schedule(P, i, n, m, k.d, epsilon, delta, shrink);
    const double Ti = static_cast<double>(ph.T_i);
    P.phases.push_back(ph);
    // The whole schedule is still reported (and counted) after the first refusal, so that a
    // caller sees how far from feasible it is.
    if ((ph.n_i < ph.K_laplace || ph.n_i < 1) && P.feasible) {
      P.feasible = false;
      P.refusal = "phase " + std::to_string(i) + ": n_i = " + std::to_string(ph.n_i) +
                  " < the Laplace-tail part of K_i, " + std::to_string(ph.K_laplace);
    }
    P.gradient_evaluations += Ti * static_cast<double>(ph.K_i) * md;
    offset += ph.n_i;
  }
  P.users_used = offset;
  P.certified = P.feasible;
  return P;
}

Alg3Plan plan_practical(std::int64_t n, std::int64_t m, double epsilon, double delta,
                        const ProblemConstants& k, const Alg3Options& o, bool nonsmooth) {
  Alg3Plan P;
  P.profile = Profile::practical;
  P.nonsmooth = nonsmooth;
  const double nd = static_cast<double>(n), md = static_cast<double>(m),
               dd = static_cast<double>(k.d);
  if (nonsmooth) {
    P.smoothing_radius = o.smoothing_radius.value_or(default_radius(n, m, epsilon, k));
    check_positive(P.smoothing_radius, "smoothing_radius");
    P.beta = k.L * std::sqrt(dd) / P.smoothing_radius;
  } else {
    require(k.beta.has_value() && *k.beta > 0,
            "Alg 3 needs a smooth loss (beta > 0); use method 'nonsmooth' for hinge-type losses");
    P.beta = *k.beta;
  }
  P.q = o.q.value_or(1.0);
  check_positive(P.q, "q");
  P.p = o.p.value_or(2.0);
  P.lambda = o.lambda.value_or(0.0);
  require(P.lambda >= 0 && std::isfinite(P.lambda), "lambda must be finite and >= 0");
  const int T = o.steps.value_or(20);
  require(T >= 1, "steps must be >= 1");
  P.tau = o.clip.value_or(k.L / (4 * std::sqrt(md)));
  check_positive(P.tau, "clip");
  const double Lf0 = o.smoothness.value_or(P.tau * T * T / (8 * k.R));
  check_positive(Lf0, "smoothness (AC-SA L_f)");
  P.rho = o.rho.value_or(epsilon_delta_to_zcdp(epsilon, delta));
  check_positive(P.rho, "rho");
  const std::int64_t l = o.num_phases.value_or(1);
  require(l >= 1, "num_phases must be >= 1");
  const double shrink = 1 - std::exp2(-P.q);
  std::int64_t offset = 0;
  for (std::int64_t i = 1; i <= l; ++i) {
    Alg3Phase ph;
    const double level = static_cast<double>(i - 1);
    ph.n_i = l == 1 ? n : static_cast<std::int64_t>(std::floor(shrink * nd / std::exp2(level * P.q)));
    ph.n_i = std::min(ph.n_i, n - offset);
    if (ph.n_i < 1) break;
    ph.lambda_i = P.lambda * std::exp2(P.p * level);
    ph.T_i = T;
    ph.K_i = std::min(ph.n_i, o.users_per_step.value_or(ph.n_i));
    require(ph.K_i >= 1, "users_per_step must be >= 1");
    ph.L_f = Lf0 + ph.lambda_i;
    ph.stage_length = ph.lambda_i > 0
                          ? std::min<std::int64_t>(T, static_cast<std::int64_t>(std::ceil(
                                                          2 * std::sqrt(2.0) * std::sqrt(ph.L_f / ph.lambda_i))))
                          : T;
    const ClippedVectorSum probe(k.d, P.tau, ph.K_i);
    ph.sensitivity = probe.sensitivity() / static_cast<double>(ph.K_i);
    ph.sigma_i = ph.sensitivity / std::sqrt(2 * P.rho / static_cast<double>(T));
    P.gradient_evaluations += static_cast<double>(ph.T_i) * static_cast<double>(ph.K_i) * md;
    offset += ph.n_i;
    P.phases.push_back(ph);
  }
  P.l = static_cast<std::int64_t>(P.phases.size());
  P.users_used = offset;
  if (P.phases.empty()) {
    P.feasible = false;
    P.refusal = "no phase has a user";
  }
  P.certified = P.feasible;
  return P;
}

}  // namespace

Alg3Plan plan_accelerated(std::int64_t n, std::int64_t m, double epsilon, double delta,
                          const ProblemConstants& k, const Alg3Options& o, bool nonsmooth) {
  check_problem(n, m, epsilon, delta, k, "Alg 3");
  return o.profile == Profile::paper ? plan_paper(n, m, epsilon, delta, k, o, nonsmooth)
                                              : plan_practical(n, m, epsilon, delta, k, o, nonsmooth);
}

Alg3Plan plan_alg3(std::int64_t n, std::int64_t m, double epsilon, double delta,
                   const ProblemConstants& k, std::optional<double> q) {
  Alg3Options o;
  o.profile = Profile::paper;
  o.q = q;
  return plan_accelerated(n, m, epsilon, delta, k, o, false);
}

// ---------------------------------------------------------------------------------------------
// Alg 3 with Alg 2 inside (docs/proofs/user-level.md §2.3, §2.4)

GaussianMechanism alg3_step_mechanism(const Alg3Plan& P, const Alg3Phase& ph, std::int64_t d,
                                      NoiseMode noise) {
  if (P.profile == Profile::paper) {
    return GaussianMechanism::from_sigma(ph.sensitivity, ph.sigma_i, static_cast<std::size_t>(d),
                                         noise);
  }
  return GaussianMechanism::from_rho(ph.sensitivity * static_cast<double>(ph.K_i),
                                     P.rho / static_cast<double>(ph.T_i),
                                     static_cast<std::size_t>(d), noise);
}

namespace {

// Paper lines 8–12: the gate (nullopt: halt), the coin filter and the noisy filtered mean.
std::optional<Vector> paper_step(const RowMatrix& Q, const Alg3Plan& P, const Alg3Phase& ph,
                                 std::optional<AboveThreshold>& gate,
                                 const std::optional<GaussianMechanism>& gauss, Rng& rng,
                                 UserLevelTrace* trace) {
  const std::int64_t d = Q.cols();
  // Lines 8–9: s = (1/K)Σ_j h_j at radius 2τ; halt when ŝ < Δ̂ (AboveThreshold on −s).
  const auto h = concentration_degrees(Q, 2 * P.tau);
  double s = 0;
  for (auto v : h) s += static_cast<double>(v);
  s /= static_cast<double>(ph.K_i);
  const bool halt = gate ? gate->query(-s) : s < 0.8 * static_cast<double>(ph.K_i);
  if (halt) return std::nullopt;
  // Lines 10–11: keep Z w.p. p(h) = clamp(6h/K − 3, 0, 1), drawn exactly as U < 6h − 3K
  // with U uniform on {0..K−1}; one coin per user whatever h is (coupled runs stay coupled).
  Vector g = Vector::Zero(d);
  std::int64_t kept = 0;
  for (std::int64_t j = 0; j < ph.K_i; ++j) {
    const std::int64_t w = 6 * h[static_cast<std::size_t>(j)] - 3 * ph.K_i;
    const auto coin = static_cast<std::int64_t>(
        rng.uniform_below(static_cast<std::uint64_t>(ph.K_i)));
    if (w > 0 && coin < w) {
      g += Q.row(j).transpose();
      ++kept;
    }
  }
  if (trace) trace->step_kept.push_back(kept);
  if (kept > 0) g /= static_cast<double>(kept);
  return gauss ? Vector(gauss->apply(g, rng)) : g;  // line 12
}

// Lines 6–7 of one step: K_i distinct users of the phase, uniformly (partial Fisher–Yates), and
// their (smoothed) mean gradients, K_i·m evaluations, as the rows of Q. Without smoothing (r = 0)
// the gradients draw nothing, so the users are drawn first and the K_i gradients computed on up
// to `threads` threads (each row written by one task: the same Q for any thread count); with
// smoothing every gradient draws its points from rng, in user order, on one thread.
void step_gradients(const UserDataset& data, const Loss& loss, const Vector& y, double r,
                    const Alg3Phase& ph, std::int64_t phase, std::int64_t t,
                    std::vector<std::int64_t>& users, RowMatrix& Q, int threads, Rng& rng,
                    GradientCounter& counter, UserLevelTrace* trace) {
  for (std::int64_t j = 0; j < ph.K_i; ++j) {
    if (ph.K_i < ph.n_i) {
      const auto pick = j + static_cast<std::int64_t>(
                                rng.uniform_below(static_cast<std::uint64_t>(ph.n_i - j)));
      std::swap(users[static_cast<std::size_t>(j)], users[static_cast<std::size_t>(pick)]);
    }
    const std::int64_t u = users[static_cast<std::size_t>(j)];
    if (trace && trace->on_user) trace->on_user(phase, t, u);
    if (r > 0) Q.row(j) = smoothed_user_mean_gradient(data, loss, y, u, r, rng, counter).transpose();
  }
  if (r > 0) return;
  constexpr std::int64_t kGrain = 64;  // users per part at least
  std::vector<GradientCounter> counters(static_cast<std::size_t>(std::max(threads, 1)));
  parallel_ranges(ph.K_i, threads, kGrain, [&](int p, std::int64_t begin, std::int64_t end) {
    for (std::int64_t j = begin; j < end; ++j)
      Q.row(j) = user_mean_gradient(data, loss, y, users[static_cast<std::size_t>(j)],
                                    counters[static_cast<std::size_t>(p)]).transpose();
  });
  for (const auto& c : counters) counter.evaluations += c.evaluations;
}

// Practical: the exact clipped sum of the K_i users' mean gradients, Gaussian at ρ/T_i.
std::optional<Vector> practical_step(const RowMatrix& Q, const Alg3Plan& P, const Alg3Phase& ph,
                               const std::optional<GaussianMechanism>& gauss, Rng& rng) {
  const std::int64_t d = Q.cols();
  ClippedVectorSum sum(d, P.tau, ph.K_i);
  for (std::int64_t j = 0; j < ph.K_i; ++j) sum.add(Q.row(j).transpose());
  const Vector s = sum.sum();
  return Vector((gauss ? Vector(gauss->apply(s, rng)) : s) / static_cast<double>(ph.K_i));
}

}  // namespace

Alg3Result run_alg3(const UserDataset& data, const Loss& loss, const Domain& X, const Vector& x0,
                    const Alg3Plan& P, const UserLevelOptions& o, Rng& rng,
                    GradientCounter& counter, UserLevelTrace* trace) {
  require(P.feasible, "Alg 3 cannot run: " + P.refusal);
  const bool paper = P.profile == Profile::paper;
  const std::int64_t d = data.dim();
  const auto perm = random_permutation(data.num_users(), rng);
  const double r = P.nonsmooth ? P.smoothing_radius : 0;
  const bool noisy = !(trace && trace->noiseless);
  Vector x = x0;
  X.project(x);
  Alg3Result res;
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < P.phases.size(); ++i) {
    const Alg3Phase& ph = P.phases[i];
    const auto phase = static_cast<std::int64_t>(i + 1);
    std::vector<std::int64_t> users(perm.begin() + offset, perm.begin() + offset + ph.n_i);
    offset += ph.n_i;
    const Vector anchor = x;  // x_{i−1}
    Acsa acsa(anchor, ph.lambda_i, ph.L_f, X);
    // Alg 2 line 1: the gate's threshold noise is drawn once per phase.
    std::optional<AboveThreshold> gate;
    if (paper && noisy) gate.emplace(-0.8 * static_cast<double>(ph.K_i), 2.0, o.privacy.epsilon / 2, rng);
    const std::optional<GaussianMechanism> gauss =
        noisy ? std::optional(alg3_step_mechanism(P, ph, d, o.run.noise)) : std::nullopt;
    RowMatrix Q(ph.K_i, d);
    for (std::int64_t t = 0; t < ph.T_i; ++t) {
      if (acsa.stage_step() == ph.stage_length) acsa.restart();
      const Vector y = acsa.query();
      step_gradients(data, loss, y, r, ph, phase, t, users, Q, o.run.threads, rng, counter, trace);
      const std::optional<Vector> g_hat =
          paper ? paper_step(Q, P, ph, gate, gauss, rng, trace) : practical_step(Q, P, ph, gauss, rng);
      if (!g_hat) {
        res.halted = true;
        res.halted_phase = phase;
        res.halted_step = t + 1;
        return res;
      }
      if (trace) trace->released_gradients.push_back(*g_hat);
      // Line 13: G_t = ĝ + λ_i (y_t − x_{i−1}).
      acsa.step(*g_hat + ph.lambda_i * (y - anchor));
      ++res.steps_run;
    }
    x = acsa.output();
  }
  X.project(x);
  res.x = x;
  return res;
}

}  // namespace dpstats::optimize
