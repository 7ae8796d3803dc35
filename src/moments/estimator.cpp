#include "dpstats/moments/estimator.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats::moments {
namespace {

using Index = Eigen::Index;

// One block of coordinates sharing a strategy C: computes row t of C·Y from the inputs, and row t
// of C^{-1}·W from the released rows, in O(history · dim) per step. Each call works on the
// coordinates [b, e) of dim-long rows, so disjoint ranges may run on different threads; advance()
// once all of them have.
class Channel {
 public:
  Channel(const Factorization& C, std::size_t dim, bool need_inverse)
      : C_(C), need_inverse_(need_inverse) {
    const auto D = static_cast<Index>(dim);
    if (C.kind() == FactorizationKind::output) {
      out_state_.emplace(*C.workload(), dim);
      if (need_inverse) {
        a_ = C.workload()->coefficients(C.steps());
        hist_v_ = RowMatrix::Zero(static_cast<Index>(C.steps()), D);
      }
    } else if (C.kind() == FactorizationKind::blt) {
      const auto m = static_cast<Index>(C.theta().size());
      buf_s_ = RowMatrix::Zero(m, D);
      buf_r_ = RowMatrix::Zero(m, D);
      y_prev_ = v_prev_ = Vector::Zero(D);
    } else if (C.kind() != FactorizationKind::input) {
      cap_ = C.coefficients().size() - 1;
      if (cap_ > 0) {
        hist_y_ = RowMatrix::Zero(static_cast<Index>(cap_), D);
        hist_v_ = RowMatrix::Zero(static_cast<Index>(cap_), D);
      }
    }
    p_ = Vector::Zero(D);
  }

  // Writes (C Y)_t for the input row y_t, on [b, e).
  void transform(const double* y, double* cy, Index b, Index e) {
    const Index len = e - b;
    Eigen::Map<const Vector> yt(y + b, len);
    Eigen::Map<Vector> out(cy + b, len);
    switch (C_.kind()) {
      case FactorizationKind::input: out = yt; return;
      case FactorizationKind::output:
        out_state_->push(y, cy, static_cast<std::size_t>(b), static_cast<std::size_t>(e));
        return;
      case FactorizationKind::blt: {
        // s_i <- theta_i s_i + y_{t-1};  (C y)_t = kappa (y_t + sum_i omega_i s_i).
        out = yt;
        for (Index i = 0; i < buf_s_.rows(); ++i) {
          const auto k = static_cast<std::size_t>(i);
          auto s = buf_s_.row(i).segment(b, len);
          s = C_.theta()[k] * s + y_prev_.segment(b, len).transpose();
          out += C_.omega()[k] * s.transpose();
        }
        out *= C_.kappa();
        y_prev_.segment(b, len) = yt;
        return;
      }
      default: {
        const auto& c = C_.coefficients();
        out = c[0] * yt;
        const std::size_t top = std::min(t_, cap_);
        for (std::size_t j = 1; j <= top; ++j)
          out += c[j] * hist_y_.row(static_cast<Index>((t_ - j) % cap_)).segment(b, len).transpose();
        if (cap_ > 0) hist_y_.row(static_cast<Index>(t_ % cap_)).segment(b, len) = yt.transpose();
      }
    }
  }

  // Writes v_t = (C^{-1} W)_t for the released row w_t, on [b, e).
  void invert(const double* w, double* v, Index b, Index e) {
    const Index len = e - b;
    Eigen::Map<const Vector> wt(w + b, len);
    Eigen::Map<Vector> out(v + b, len);
    auto p = p_.segment(b, len);
    switch (C_.kind()) {
      case FactorizationKind::input: out = wt; break;
      case FactorizationKind::output: {
        require(need_inverse_, "internal: output factorization inverted without history");
        // C = D T(a): v = T(a)^{-1} D^{-1} w by forward substitution over the full history.
        p = wt / C_.workload()->row_scale(t_);
        for (std::size_t j = 1; j <= t_; ++j)
          if (a_[j] != 0)
            p -= a_[j] * hist_v_.row(static_cast<Index>(t_ - j)).segment(b, len).transpose();
        out = p / a_[0];
        hist_v_.row(static_cast<Index>(t_)).segment(b, len) = out.transpose();
        break;
      }
      case FactorizationKind::blt: {
        // r_i <- theta_i r_i + v_{t-1};  v_t = w_t / kappa - sum_i omega_i r_i.
        p = wt / C_.kappa();
        for (Index i = 0; i < buf_r_.rows(); ++i) {
          const auto k = static_cast<std::size_t>(i);
          auto r = buf_r_.row(i).segment(b, len);
          r = C_.theta()[k] * r + v_prev_.segment(b, len).transpose();
          p -= C_.omega()[k] * r.transpose();
        }
        out = p;
        v_prev_.segment(b, len) = out;
        break;
      }
      default: {
        const auto& c = C_.coefficients();
        p = wt;
        const std::size_t top = std::min(t_, cap_);
        for (std::size_t j = 1; j <= top; ++j)
          p -= c[j] * hist_v_.row(static_cast<Index>((t_ - j) % cap_)).segment(b, len).transpose();
        out = p / c[0];
        if (cap_ > 0) hist_v_.row(static_cast<Index>(t_ % cap_)).segment(b, len) = out.transpose();
      }
    }
  }

  void advance() {
    if (out_state_) out_state_->advance();
    ++t_;
  }

 private:
  Factorization C_;
  std::size_t t_ = 0, cap_ = 0;
  bool need_inverse_;
  std::optional<WorkloadState> out_state_;
  std::vector<double> a_;
  RowMatrix hist_y_, hist_v_;
  RowMatrix buf_s_, buf_r_;  // BLT buffers of C·Y and C^{-1}·W
  Vector y_prev_, v_prev_;
  Vector p_;
};

// Q_tt = (C^{-1} C^{-T})_tt streamed (card §4.1: a running sum of squared inverse coefficients).
class QDiagStream {
 public:
  explicit QDiagStream(const Factorization& C) : C_(C) {}
  double next() {
    double q = 1;
    switch (C_.kind()) {
      case FactorizationKind::input: break;
      case FactorizationKind::output: {
        // C^{-1} = T(a)^{-1} D^{-1}: row t = (a'_{t-j} / D_j)_j.
        const auto& A = *C_.workload();
        push_inverse(A.coefficients(std::min(t_ + 1, A.steps())));
        q = 0;
        for (std::size_t j = 0; j <= t_; ++j) {
          const double v = y_[t_ - j] / A.row_scale(j);
          q += v * v;
        }
        break;
      }
      default:
        push_inverse(C_.coefficients());
        running_ += y_[t_] * y_[t_];
        q = running_;
    }
    ++t_;
    return q;
  }

 private:
  // Appends y_t, the next coefficient of the inverse Toeplitz, from c.
  void push_inverse(const std::vector<double>& c) {
    if (t_ == 0) {
      y_.push_back(1 / c[0]);
      return;
    }
    double acc = 0;
    const std::size_t top = std::min(t_, c.size() - 1);
    for (std::size_t j = 1; j <= top; ++j) acc += c[j] * y_[t_ - j];
    y_.push_back(-acc / c[0]);
  }
  Factorization C_;
  std::size_t t_ = 0;
  std::vector<double> y_;
  double running_ = 0;
};

// The l2 norm of x, after checking that every value is finite (a NaN or infinity makes the sum
// of squares non-finite). Summed in kChunk pieces in order, so the value never depends on
// `threads`; clip_factor's margin covers any summation order.
double checked_norm(std::span<const double> x, std::size_t step, int threads) {
  constexpr std::size_t kChunk = GaussianMechanism::kChunk;
  const std::size_t n = x.size(), chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(chunks);
  parallel_tasks(chunks, threads, [&](std::size_t k) {
    double sum = 0;
    for (std::size_t i = k * kChunk; i < std::min(n, (k + 1) * kChunk); ++i) sum += x[i] * x[i];
    partial[k] = sum;
  });
  double sum = 0;
  for (double p : partial) sum += p;
  if (std::isfinite(sum)) return std::sqrt(sum);
  for (double v : x) require(std::isfinite(v), "x at step {} holds a NaN or infinite value", step);
  return Eigen::Map<const Vector>(x.data(), static_cast<Index>(n)).stableNorm();  // overflowed
}

// The factor that brings x to l2 norm <= zeta provably (card §4.2); 1 when it already is. For
// any summation order the computed norm is within (1 ± (d/2 + 2)u) of ||x|| (u = 2^-53; Higham
// 2002 §3.1 for d non-negative products, then the square root; no underflow matters for
// zeta >= 2^-400), and the scaling adds three roundings. margin = (d + 16)u covers both, with
// room for the second moment's two roundings (x_i x_j, then times scale2): the clipped row and
// its square stay within the sensitivity the noise is calibrated to. A fixed margin of 2^-50
// does not: it is below (d/2)u from d = 16 on. Rows less than the margin below zeta are scaled
// by at least 1 - 2 margin.
double clip_factor(double norm, double zeta, std::size_t d) {
  const double margin = (static_cast<double>(d) + 16) * 0x1p-53;
  return norm > zeta * (1 - margin) ? zeta / norm * (1 - margin) : 1.0;
}

bool is_pp(Method m) { return m == Method::pp || m == Method::pp_debiased; }

// The step's output is the released row itself when B = A C^{-1} = I (output factorization of
// the same workload).
bool direct(const Factorization& C, const Workload& A) {
  return C.kind() == FactorizationKind::output && *C.workload() == A;
}

}  // namespace

MomentsConfig make_config(const MomentsOptions& o) {
  MomentsConfig c = make_config(o.steps, o.dim, o.method, o.workload, o.factorization, o.diagonal);
  c.zeta = o.clip;
  c.epsilon = o.epsilon;
  c.delta = o.delta;
  c.rho = o.rho;
  c.noise_multiplier = o.noise_multiplier;
  c.lambda = o.lambda;
  c.alpha = o.alpha;
  c.tau = o.tau;
  require(o.on_norm == "clip" || o.on_norm == "reject",
          fmt::format("on_norm must be 'clip' or 'reject', got '{}'", o.on_norm));
  c.on_norm = o.on_norm == "reject" ? NormPolicy::reject : NormPolicy::clip;
  require(o.neighbouring == "replace-one" || o.neighbouring == "add-remove",
          fmt::format("neighbouring must be 'replace-one' or 'add-remove', got '{}'",
                      o.neighbouring));
  c.neighbouring =
      o.neighbouring == "add-remove" ? Neighbouring::add_remove : Neighbouring::replace_one;
  require(o.threads >= 1 && o.threads <= 256, fmt::format("threads must be in [1, 256], got {}", o.threads));
  c.threads = o.threads;
  return c;
}

MomentsConfig make_config(std::size_t steps, std::size_t dim, const std::string& method,
                          const std::string& workload, const std::string& factorization,
                          bool diagonal) {
  require(steps >= 1, "steps must be >= 1, got 0");
  require(dim >= 1, "dim must be >= 1, got 0");
  MomentsConfig c;
  c.steps = steps;
  c.dim = dim;
  c.method = parse_method(method);
  c.form = diagonal ? SecondMomentForm::diagonal : SecondMomentForm::full;
  c.A1 = c.A2 = Workload::parse(workload, steps);
  c.C1 = c.C2 = Factorization::parse(factorization, c.A1);
  return c;
}

struct MomentEstimator::Impl {
  MomentsConfig cfg;
  Rng& rng;
  std::size_t d = 0, D2 = 0;
  NoiseParameters np;
  NoiseScales sc;
  double sigma = 0;  // effective noise multiplier
  std::optional<GaussianMechanism> mech1, mech2;
  std::optional<Budget> budget;
  std::optional<Channel> ch1, ch2;
  std::optional<WorkloadState> A1s, A2s, debias_state;
  std::optional<QDiagStream> qdiag;
  bool direct1 = false, direct2 = false;
  double scale2 = 1;
  Vector x, sec, cy1, cy2, w1, w2, v1, v2, first, second;
  std::size_t t = 0;
  MomentsTrace* trace = nullptr;

  Impl(MomentsConfig c, Rng& r) : cfg(std::move(c)), rng(r) {}
};

MomentEstimator::MomentEstimator(MomentsConfig config, Rng& rng)
    : impl_(std::make_unique<Impl>(std::move(config), rng)) {
  Impl& m = *impl_;
  const MomentsConfig& c = m.cfg;
  require(c.steps >= 1, "steps must be >= 1, got 0");
  require(c.dim >= 1, "dim must be >= 1, got 0");
  check_positive(c.zeta, "clip");
  require(c.zeta >= 0x1p-400 && c.zeta <= 0x1p400,
          fmt::format("clip must be in [2^-400, 2^400], got {}", format_number(c.zeta)));
  for (const auto* w : {&c.A1, &c.A2})
    require(w->steps() == c.steps,
            fmt::format("workload {} has {} steps, the estimator {}", w->name(), w->steps(),
                        c.steps));
  for (const auto* f : {&c.C1, &c.C2})
    require(f->steps() == c.steps,
            fmt::format("factorization {} has {} steps, the estimator {}", f->name(), f->steps(),
                        c.steps));
  const int budgets = c.epsilon.has_value() + c.rho.has_value() + c.noise_multiplier.has_value();
  require(budgets == 1, "give exactly one of (epsilon, delta), rho or a noise multiplier");
  check_delta_positive(c.delta);
  if (c.epsilon) check_epsilon(*c.epsilon);
  if (c.rho) check_positive(*c.rho, "rho");
  if (c.noise_multiplier) check_positive(*c.noise_multiplier, "noise multiplier");

  m.d = c.dim;
  m.D2 = c.form == SecondMomentForm::full ? c.dim * c.dim : c.dim;
  const bool cs = c.method == Method::cs, pp = is_pp(c.method);
  m.np = {.method = c.method, .d = c.dim, .form = c.form, .zeta = c.zeta,
          .c1_norm = c.C1.norm_1_to_2(), .c2_norm = (cs || pp ? c.C1 : c.C2).norm_1_to_2(),
          .lambda = c.lambda, .alpha = c.alpha, .tau = c.tau, .neighbouring = c.neighbouring};
  if (c.method != Method::lambda_jme)
    require(!c.lambda.has_value(), "lambda applies to method lambda-jme only");
  const NoiseScales unit = noise_scales(m.np, 1.0);  // sensitivities; validates alpha, tau, lambda

  // The mechanisms, calibrated from public parameters only.
  const double n = static_cast<double>(c.steps);
  auto make = [&](double sens, double share, double dim, const char* kind) {
    const auto dims = static_cast<std::size_t>(dim);
    if (c.noise_multiplier)
      return GaussianMechanism::from_sigma(sens, *c.noise_multiplier / std::sqrt(share) * sens,
                                           dims, c.noise);
    if (c.rho) return GaussianMechanism::from_rho(sens, *c.rho * share, dims, c.noise);
    if (share == 1.0)
      return GaussianMechanism::from_epsilon_delta(sens, *c.epsilon, c.delta, dims, c.noise);
    (void)kind;
    return GaussianMechanism::from_rho(sens, epsilon_delta_to_zcdp(*c.epsilon, c.delta) * share,
                                       dims, c.noise);
  };
  const double d = static_cast<double>(m.d), D2 = static_cast<double>(m.D2);
  // Floating point: C·X is computed in doubles, so neighbouring streams' computed values can differ
  // by more than the exact sensitivity. Each computed coordinate is within (len + 2) 2^-53 L1 B of
  // the exact one (a sum of len products, L1 = sum |c_k| or A's largest row sum, B the entry
  // bound); the l2 sensitivity handed to the lattice mechanism is enlarged by twice that over all
  // n·D coordinates of the block (about 1e-4 relative at n = 10^5, d = 100 with blt; far less
  // at small n).
  const Factorization& C2used = cs ? c.C1 : c.C2;
  auto margin = [&](const Factorization& C, double entry_bound, double coords) {
    double l1 = 0, len = 1;
    switch (C.kind()) {
      case FactorizationKind::input: return 0.0;  // C·x = x exactly
      case FactorizationKind::output: {
        const Workload& A = *C.workload();
        for (std::size_t k = 0; k < A.steps(); ++k) l1 += std::abs(A.coefficient(k));
        l1 *= A.row_scale(0);  // the row scale is non-increasing
        len = 2.0 * static_cast<double>(A.steps());  // running sums and EMAs
        break;
      }
      default:
        for (double v : C.coefficients()) l1 += std::abs(v);
        len = C.kind() == FactorizationKind::blt ? 2.0 * static_cast<double>(C.steps())
                                                 : static_cast<double>(C.coefficients().size());
    }
    return 2 * std::sqrt(coords) * (len + 2) * 0x1p-53 * l1 * entry_bound;
  };
  const double second_bound = pp ? 0.0 : second_input_scale(m.np, unit) * c.zeta * c.zeta;
  const double margin1 = margin(c.C1, c.zeta, n * d);
  const double margin2 = pp ? 0.0 : margin(C2used, second_bound, n * D2);
  if (c.method == Method::ime) {
    m.mech1 = make(unit.s1 + margin1, c.alpha, n * d, "first");
    m.mech2 = make(unit.s2 + margin2, 1 - c.alpha, n * D2, "second");
  } else {
    m.mech1 = make(unit.s1 + std::hypot(margin1, margin2), 1.0, n * (pp ? d : d + D2), "joint");
  }
  // Budget: the whole stream is one mechanism (two for IME), charged before any noise is drawn.
  const bool approximate_entry = m.mech1->loss().kind == LossKind::approximate;
  PrivacyLoss total;
  if (c.epsilon) {
    total = PrivacyLoss::approximate(*c.epsilon, c.delta);
  } else if (c.rho) {
    total = PrivacyLoss::zcdp(*c.rho);
  } else {
    total = PrivacyLoss::zcdp(m.mech1->rho() + (m.mech2 ? m.mech2->rho() : 0.0));
  }
  m.budget.emplace(total, approximate_entry ? Accountant::basic : Accountant::zcdp);
  const char* purpose = c.method == Method::ime ? "first moment stream"
                        : pp                    ? "first moment stream (second by post-processing)"
                                                : "joint first and second moment stream";
  m.budget->spend(m.mech1->ledger_entry(purpose));
  if (m.mech2) m.budget->spend(m.mech2->ledger_entry("second moment stream"));

  // The noise as it runs: the mechanisms' own sigma (>= the requested one).
  m.sc = unit;
  m.sigma = m.mech1->sigma() / unit.s1 * (c.method == Method::ime ? std::sqrt(c.alpha) : 1.0);
  m.sc.sigma1 = m.mech1->sigma() / unit.s1;
  m.sc.g1 = m.mech1->sigma();
  if (c.method == Method::ime) {
    m.sc.sigma2 = m.mech2->sigma() / unit.s2;
    m.sc.g2 = m.mech2->sigma();
  } else if (!pp) {
    m.sc.sigma2 = m.sc.sigma1;
    m.sc.g2 = m.mech1->sigma() / second_input_scale(m.np, unit);
  }
  m.scale2 = second_input_scale(m.np, unit);

  const Factorization& C2 = C2used;
  m.direct1 = direct(c.C1, c.A1);
  m.direct2 = !pp && direct(C2, c.A2);
  m.ch1.emplace(c.C1, m.d, pp || !m.direct1);
  if (!pp) m.ch2.emplace(C2, m.D2, !m.direct2);
  if (!m.direct1) m.A1s.emplace(c.A1, m.d);
  if (pp || !m.direct2) m.A2s.emplace(c.A2, m.D2);
  if (c.method == Method::pp_debiased) {
    m.debias_state.emplace(c.A2, 1);
    m.qdiag.emplace(c.C1);
  }
  const auto di = static_cast<Index>(m.d), Di = static_cast<Index>(m.D2);
  m.x = m.cy1 = m.w1 = m.v1 = m.first = Vector::Zero(di);
  m.sec = m.cy2 = m.w2 = m.v2 = m.second = Vector::Zero(Di);
}

MomentEstimator::~MomentEstimator() = default;
MomentEstimator::MomentEstimator(MomentEstimator&&) noexcept = default;

void MomentEstimator::push(std::span<const double> x) {
  Impl& m = *impl_;
  const MomentsConfig& c = m.cfg;
  require(m.t < c.steps,
          fmt::format("push after the last step: the estimator was built for {} steps", c.steps));
  require(x.size() == m.d,
          fmt::format("x must have {} values (dim), got {}", m.d, x.size()));
  // NaN first: comparisons with NaN are false and would bypass the clip (card §4.2).
  const double norm = checked_norm(x, m.t + 1, c.threads);
  const double factor = clip_factor(norm, c.zeta, m.d);
  if (norm > c.zeta) {
    require(c.on_norm == NormPolicy::clip,
            fmt::format("x at step {} has l2 norm above the clip norm {}", m.t + 1,
                        format_number(c.zeta)));
    if (m.trace) ++m.trace->clipped_rows;
  }

  // The release, cut into blocks of coordinates: the first moment (d values) and, unless PP, the
  // second (d^2 or d). Each coordinate's input, C·Y row, noise and post-processing depend on that
  // coordinate alone (and on the whole clipped x for a full second moment), so a block's chunks run
  // in parallel. The noise is apply_each's: a block of kChunk or more values gets one generator
  // per chunk from rng.split() in order, a shorter one the stream itself, so a seeded run gives the
  // same release for any `threads`.
  const bool pp = is_pp(c.method), full = c.form == SecondMomentForm::full;
  const double scale2 = m.scale2;
  const std::size_t d = m.d;
  const double* xs = x.data();
  if (full) m.x = Eigen::Map<const Vector>(xs, static_cast<Index>(d)) * factor;
  auto first_block = [&](Index b, Index e, RandomBits& bits) {
    if (!full)
      m.x.segment(b, e - b) = Eigen::Map<const Vector>(xs + b, e - b) * factor;
    m.ch1->transform(m.x.data(), m.cy1.data(), b, e);
    const auto n = static_cast<std::size_t>(e - b);
    m.mech1->apply_each({m.cy1.data() + b, n}, {m.w1.data() + b, n}, bits);
    if (m.direct1) {
      m.first.segment(b, e - b) = m.w1.segment(b, e - b);
      if (pp) m.ch1->invert(m.w1.data(), m.v1.data(), b, e);
    } else {
      m.ch1->invert(m.w1.data(), m.v1.data(), b, e);
      m.A1s->push(m.v1.data(), m.first.data(), static_cast<std::size_t>(b),
                  static_cast<std::size_t>(e));
    }
  };
  auto second_block = [&](Index b, Index e, RandomBits& bits) {
    // The same products as (factor x)(factor x)^T, then times scale2.
    if (full) {
      const auto D = static_cast<Index>(d);
      for (Index i = b; i < e;) {  // row p of x x^T, from column i - pD on
        const Index p = i / D, stop = std::min(e, (p + 1) * D);
        for (; i < stop; ++i) m.sec[i] = m.x[p] * m.x[i - p * D] * scale2;
      }
    } else {
      for (Index i = b; i < e; ++i) {
        const double xi = xs[i] * factor;
        m.sec[i] = xi * xi * scale2;
      }
    }
    m.ch2->transform(m.sec.data(), m.cy2.data(), b, e);
    const GaussianMechanism& mech = m.mech2 ? *m.mech2 : *m.mech1;
    const auto n = static_cast<std::size_t>(e - b);
    mech.apply_each({m.cy2.data() + b, n}, {m.w2.data() + b, n}, bits);
    if (m.direct2) {
      m.second.segment(b, e - b) = m.w2.segment(b, e - b) / scale2;
    } else {
      m.ch2->invert(m.w2.data(), m.v2.data(), b, e);
      m.v2.segment(b, e - b) /= scale2;
      m.A2s->push(m.v2.data(), m.second.data(), static_cast<std::size_t>(b),
                  static_cast<std::size_t>(e));
    }
  };
  auto run = [&](bool second, Index b, Index e, RandomBits& bits) {
    second ? second_block(b, e, bits) : first_block(b, e, bits);
  };
  struct Chunk {
    bool second;
    Index begin, end;
    std::unique_ptr<Rng> rng;
  };
  std::vector<Chunk> chunks;
  constexpr auto kChunk = static_cast<Index>(GaussianMechanism::kChunk);
  for (const bool second : {false, true}) {
    if (second && pp) break;
    const auto n = static_cast<Index>(second ? m.D2 : m.d);
    auto generators = GaussianMechanism::chunk_generators(static_cast<std::size_t>(n), m.rng);
    if (generators.empty()) {
      RandomBits bits(m.rng);  // in order, on this thread
      for (Index b = 0; b < n; b += kChunk) run(second, b, std::min(n, b + kChunk), bits);
    }
    for (std::size_t k = 0; k < generators.size(); ++k) {
      const auto b = static_cast<Index>(k) * kChunk;
      chunks.push_back({second, b, std::min(n, b + kChunk), std::move(generators[k])});
    }
  }
  parallel_tasks(chunks.size(), c.threads, [&](std::size_t k) {
    RandomBits bits(*chunks[k].rng);
    run(chunks[k].second, chunks[k].begin, chunks[k].end, bits);
  });
  m.ch1->advance();
  if (!m.direct1) m.A1s->advance();
  if (!pp) {
    m.ch2->advance();
    if (!m.direct2) m.A2s->advance();
  } else {
    // x̂ = v1; PP squares it (card §2.6).
    const auto di = static_cast<Index>(d);
    if (full) {
      Eigen::Map<RowMatrix>(m.v2.data(), di, di) = m.v1 * m.v1.transpose();
    } else {
      m.v2 = m.v1.array().square().matrix();
    }
    m.A2s->push(m.v2.data(), m.second.data());
    if (c.method == Method::pp_debiased) {
      // b_t = g^2 sum_k (A2)_{t,k} Q_kk with Q = C1^{-1} C1^{-T} (row norms; card flags 1-3).
      const double q = m.qdiag->next();
      double bt = 0;
      m.debias_state->push(&q, &bt);
      bt *= m.sc.g1 * m.sc.g1;
      if (full) {
        for (Index i = 0; i < di; ++i) m.second[i * di + i] -= bt;
      } else {
        m.second.array() -= bt;
      }
    }
  }
  ++m.t;
}

std::span<const double> MomentEstimator::first() const {
  return {impl_->first.data(), static_cast<std::size_t>(impl_->first.size())};
}
std::span<const double> MomentEstimator::second() const {
  return {impl_->second.data(), static_cast<std::size_t>(impl_->second.size())};
}
std::size_t MomentEstimator::step() const { return impl_->t; }
const MomentsConfig& MomentEstimator::config() const { return impl_->cfg; }
const NoiseScales& MomentEstimator::scales() const { return impl_->sc; }
double MomentEstimator::noise_multiplier() const { return impl_->sigma; }
const Ledger& MomentEstimator::ledger() const { return impl_->budget->ledger(); }
void MomentEstimator::set_trace(MomentsTrace* trace) { impl_->trace = trace; }

PrivacyGuarantee MomentEstimator::privacy() const {
  const Impl& m = *impl_;
  PrivacyGuarantee p;
  const PrivacyLoss spent = m.budget->spent();
  if (m.budget->accountant() == Accountant::basic) {
    p.epsilon = spent.epsilon;
    p.delta = spent.delta;
    p.rho = m.mech1->rho();  // the lattice release is also this rho-zCDP
  } else {
    const PrivacyLoss ed = m.budget->total().kind == LossKind::approximate
                               ? m.budget->spent_epsilon_delta()
                               : m.budget->spent_epsilon_delta(m.cfg.delta);
    p.epsilon = ed.epsilon;
    p.delta = ed.delta;
    p.rho = spent.rho;
  }
  p.certified = m.cfg.noise == NoiseMode::secure;
  p.neighbouring = m.cfg.neighbouring;
  return p;
}

nlohmann::json MomentEstimator::diagnostics() const {
  const Impl& m = *impl_;
  const MomentsConfig& c = m.cfg;
  nlohmann::json j = {{"method", to_string(c.method)},
                      {"workload_first", c.A1.name()},
                      {"workload_second", c.A2.name()},
                      {"factorization_first", c.C1.name()},
                      {"factorization_second", (c.method == Method::cs ? c.C1 : c.C2).name()},
                      {"second_moment", c.form == SecondMomentForm::full ? "full" : "diagonal"},
                      {"steps", c.steps},
                      {"clip", c.zeta},
                      {"c1_norm", m.np.c1_norm},
                      {"c2_norm", m.np.c2_norm},
                      {"noise_multiplier", m.sigma},
                      {"sensitivity", m.sc.s1},
                      {"first_noise_std", m.sc.g1},
                      {"second_noise_std", m.sc.g2},
                      {"clipped_rows", "not released (not private)"}};
  if (m.sc.two_mechanisms) j["second_sensitivity"] = m.sc.s2;
  if (c.method == Method::jme || c.method == Method::lambda_jme) j["lambda"] = m.sc.lambda;
  if (c.method == Method::ime) j["alpha"] = c.alpha;
  if (c.method == Method::cs) j["tau"] = c.tau;
  return j;
}

Release<MomentSeries> estimate_moments(MomentsConfig config, const ConstMatrixRef& X, Rng& rng,
                                       MomentsTrace* trace) {
  require(X.rows() >= 1 && X.cols() >= 1, "X must have at least one row and one column");
  if (config.steps == 0) config.steps = static_cast<std::size_t>(X.rows());
  if (config.dim == 0) config.dim = static_cast<std::size_t>(X.cols());
  require(static_cast<std::size_t>(X.rows()) <= config.steps,
          fmt::format("X has {} rows, more than the {} steps", X.rows(), config.steps));
  require(static_cast<std::size_t>(X.cols()) == config.dim,
          fmt::format("X has {} columns, the estimator dim {}", X.cols(), config.dim));
  check_data(X);  // every row is checked before any noise is drawn
  if (config.on_norm == NormPolicy::reject)
    for (Index t = 0; t < X.rows(); ++t)
      if (checked_norm({X.row(t).data(), static_cast<std::size_t>(X.cols())}, 0, 1) >
          config.zeta)
        throw InvalidArgument(fmt::format("x at step {} has l2 norm above the clip norm {}", t + 1,
                                          format_number(config.zeta)));
  MomentEstimator est(std::move(config), rng);
  est.set_trace(trace);
  Release<MomentSeries> r;
  const auto n = X.rows();
  r.estimate.first.resize(n, X.cols());
  r.estimate.second.resize(n, static_cast<Index>(est.second().size()));
  Vector row;
  for (Index t = 0; t < n; ++t) {
    row = X.row(t).transpose();
    est.push({row.data(), static_cast<std::size_t>(row.size())});
    r.estimate.first.row(t) = Eigen::Map<const Vector>(est.first().data(), X.cols()).transpose();
    r.estimate.second.row(t) =
        Eigen::Map<const Vector>(est.second().data(), r.estimate.second.cols()).transpose();
  }
  r.privacy = est.privacy();
  r.seeded = rng.seeded();
  r.noise = est.config().noise;
  r.ledger = est.ledger();
  r.diagnostics = est.diagnostics();
  return r;
}

}  // namespace dpstats::moments
