#include "dpstats/heavy_tailed/certificate.hpp"

#include <Eigen/Cholesky>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/ordered_chunks.hpp"
#include "dpstats/parallel.hpp"

namespace dpstats::optimize {
namespace {

using LD = long double;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kMaxNewton = 60;        // per smoothing level / multiplier (public cap)
constexpr int kMaxBallSearch = 80;    // bisection steps on the ball multiplier
constexpr double kMuStart = 1.0, kMuFactor = 0.1, kMuEnd = 1e-14;  // smoothing levels (§2.12)

struct Block {
  const GlmErmProblem& p;
  std::int64_t m;
  std::vector<double> L;  // C/‖a_i‖
  Block(const GlmErmProblem& q) : p(q), m(q.end - q.begin), L(static_cast<std::size_t>(m)) {
    for (std::int64_t i = 0; i < m; ++i) {
      const double n = p.A->row(p.begin + i).norm();
      L[static_cast<std::size_t>(i)] = n > 0 ? p.C / n : kInf;
    }
  }
  auto row(std::int64_t i) const { return p.A->row(p.begin + i); }
  double label(std::int64_t i) const { return (*p.y)[p.begin + i]; }
  double Li(std::int64_t i) const { return L[static_cast<std::size_t>(i)]; }
};

// Rows per chunk of the row passes (ordered_chunks.hpp): a block of at most this many rows is
// summed exactly as a serial loop.
constexpr std::int64_t kChunkRows = 4096;

// Per-term model used by Newton: ψ (μ = 0) or its Huber smoothing of width μ (PL losses).
struct Term {
  double value, slope, curv;
};
Term term(const Block& b, std::int64_t i, double u, double mu) {
  const GlmEnvelope& env = b.p.env;
  const double y = b.label(i), L = b.Li(i);
  if (mu > 0 && env.piecewise_linear()) {
    double k, l, r;
    env.two_slope(y, L, &k, &l, &r);
    const double e = u - k, t = e / mu;
    if (t > l && t < r) return {e * e / (2 * mu), t, 1 / mu};
    const double th = t <= l ? l : r;
    return {th * e - mu * th * th / 2, th, 0};
  }
  return {env.value(u, y, L), env.derivative(u, y, L), env.curvature(u, y, L)};
}

double smoothed_objective(const Block& b, const Vector& w, double mu, double nu) {
  LD s = 0;
  ordered_chunks(
      b.m, kChunkRows, b.p.threads, [] { return LD{0}; },
      [&](LD& acc, std::int64_t lo, std::int64_t hi) {
        for (std::int64_t i = lo; i < hi; ++i) acc += term(b, i, b.row(i).dot(w), mu).value;
      },
      [&](const LD& acc) { s += acc; });
  const double reg = 0.5 * b.p.lambda * (w - b.p.w0).squaredNorm() +
                     0.5 * nu * (w - b.p.center).squaredNorm();
  return static_cast<double>(s / b.m) + reg;
}

// Damped Newton on the smoothed objective + (ν/2)‖w − c‖² (unconstrained), from w.
int newton(const Block& b, Vector& w, double mu, double nu) {
  const auto d = w.size();
  int steps = 0;
  double f = smoothed_objective(b, w, mu, nu);
  for (; steps < kMaxNewton; ++steps) {
    Vector g = Vector::Zero(d);
    Eigen::MatrixXd H = Eigen::MatrixXd::Zero(d, d);
    struct GH {
      Vector g;
      Eigen::MatrixXd H;
    };
    ordered_chunks(
        b.m, kChunkRows, b.p.threads, [&] { return GH{Vector::Zero(d), Eigen::MatrixXd::Zero(d, d)}; },
        [&](GH& acc, std::int64_t lo, std::int64_t hi) {
          for (std::int64_t i = lo; i < hi; ++i) {
            const auto a = b.row(i);
            const Term t = term(b, i, a.dot(w), mu);
            if (t.slope != 0) acc.g.noalias() += t.slope * a.transpose();
            if (t.curv != 0) acc.H.selfadjointView<Eigen::Lower>().rankUpdate(a.transpose(), t.curv);
          }
        },
        [&](const GH& acc) {
          g += acc.g;
          H.triangularView<Eigen::Lower>() += acc.H;
        });
    g /= static_cast<double>(b.m);
    H /= static_cast<double>(b.m);
    g += b.p.lambda * (w - b.p.w0) + nu * (w - b.p.center);
    H.diagonal().array() += b.p.lambda + nu;
    const Vector step = H.selfadjointView<Eigen::Lower>().ldlt().solve(g);
    const double decrement = g.dot(step);
    if (!(decrement > 1e-26 * (1 + std::abs(f)))) break;
    double t = 1;
    bool moved = false;
    for (int ls = 0; ls < 30; ++ls, t *= 0.5) {
      const Vector cand = w - t * step;
      const double fc = smoothed_objective(b, cand, mu, nu);
      if (fc <= f - 0.25 * t * decrement || (fc < f && ls > 20)) {
        w = cand, f = fc, moved = true;
        break;
      }
    }
    if (!moved) break;
  }
  return steps;
}

void project_ball(const GlmErmProblem& p, Vector& w) {
  const double n = (w - p.center).norm();
  if (n > p.radius) w = p.center + (w - p.center) * (p.radius / n);
}

// Minimiser of the smoothed objective over the ball: unconstrained Newton, then (if outside) a
// bisection on the multiplier ν of ‖w − c‖ <= R.
int solve_smoothed(const Block& b, Vector& w, double mu) {
  const GlmErmProblem& p = b.p;
  Vector start = w;
  int steps = newton(b, w, mu, 0);
  if ((w - p.center).norm() <= p.radius) return steps;
  double lo = 0, hi = std::max(1e-12, p.lambda);
  Vector wh = start;
  for (int k = 0; k < 200; ++k) {
    wh = start;
    steps += newton(b, wh, mu, hi);
    if ((wh - p.center).norm() <= p.radius) break;
    lo = hi;
    hi *= 4;
  }
  // Illinois (modified regula falsi) on φ(ν) = ‖w(ν) − c‖ − R, decreasing in ν, bracketed by
  // [lo, hi]: superlinear, so a few Newton solves instead of a bisection's dozens.
  Vector wl = start;
  if (lo > 0) steps += newton(b, wl, mu, lo);
  double flo = (wl - p.center).norm() - p.radius, fhi = (wh - p.center).norm() - p.radius;
  if (lo == 0) {
    wl = w;
    flo = (w - p.center).norm() - p.radius;
  }
  int side = 0;
  for (int k = 0; k < kMaxBallSearch && hi - lo > 1e-15 * hi && fhi < -1e-15 * p.radius; ++k) {
    double mid = (lo * fhi - hi * flo) / (fhi - flo);
    if (!(mid > lo && mid < hi)) mid = 0.5 * (lo + hi);
    Vector wm = wh;
    steps += newton(b, wm, mu, mid);
    const double fm = (wm - p.center).norm() - p.radius;
    if (fm <= 0) {
      hi = mid, wh = wm, fhi = fm;
      if (side == -1) flo /= 2;
      side = -1;
    } else {
      lo = mid, wl = wm, flo = fm;
      if (side == 1) fhi /= 2;
      side = 1;
    }
  }
  w = wh;
  project_ball(p, w);
  return steps;
}

// θ_i = ψ_i'(u_i) (smooth) or the smoothed dual clamp((u − κ)/μ, l, r) (PL, μ > 0).
Vector model_duals(const Block& b, const Vector& w, double mu) {
  Vector th(b.m);
  parallel_ranges(b.m, b.p.threads, kChunkRows, [&](int, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) th[i] = term(b, i, b.row(i).dot(w), mu).slope;
  });
  return th;
}

// The exact active-set step for abs/hinge (see the header). Returns false when it does not apply.
bool active_set_finish(const Block& b, const Vector& w_smooth, double mu, Vector* w_out,
                       Vector* theta_out) {
  const GlmErmProblem& p = b.p;
  const auto d = w_smooth.size();
  std::vector<std::int64_t> active;
  Vector theta(b.m);
  Vector G = Vector::Zero(d);
  for (std::int64_t i = 0; i < b.m; ++i) {
    double k, l, r;
    p.env.two_slope(b.label(i), b.Li(i), &k, &l, &r);
    const double t = (b.row(i).dot(w_smooth) - k) / mu;
    if (t > l && t < r) {
      active.push_back(i);
    } else {
      theta[i] = t <= l ? l : r;
      G.noalias() += theta[i] * b.row(i).transpose();
    }
  }
  G /= static_cast<double>(b.m);
  const auto na = static_cast<Eigen::Index>(active.size());
  if (na > 4 * d) return false;
  Vector w;
  if (na == 0) {
    w = p.w0 - G / p.lambda;
  } else {
    Eigen::MatrixXd AA(na, d);
    Vector kappa(na);
    for (Eigen::Index j = 0; j < na; ++j) {
      AA.row(j) = b.row(active[static_cast<std::size_t>(j)]);
      double k, l, r;
      p.env.two_slope(b.label(active[static_cast<std::size_t>(j)]), 1, &k, &l, &r);
      kappa[j] = k;
    }
    const Eigen::MatrixXd M = AA * AA.transpose();
    const Vector rhs = static_cast<double>(b.m) * p.lambda * (AA * (p.w0 - G / p.lambda) - kappa);
    const Vector phi = M.completeOrthogonalDecomposition().solve(rhs);
    w = p.w0 - (G + AA.transpose() * phi / static_cast<double>(b.m)) / p.lambda;
    for (Eigen::Index j = 0; j < na; ++j) {
      const auto i = active[static_cast<std::size_t>(j)];
      double k, l, r;
      p.env.two_slope(b.label(i), b.Li(i), &k, &l, &r);
      theta[i] = std::clamp(phi[j], l, r);
    }
  }
  if ((w - p.center).norm() > p.radius) return false;
  *w_out = w;
  *theta_out = theta;
  return true;
}

bool accept(const GlmErmProblem& p, const Vector& w, const Vector& theta, double alpha,
            double* gap) {
  *gap = glm_duality_gap(p, w, theta);
  // Rounding allowance (header): 4(d + 4)·2^-52 (a dot product's relative error, 4× over) of the
  // scale of the terms whose rounding enters the gap,
  // (1/m) Σ |θ_i|·‖a_i‖·(‖w‖ + 1) (the dot products u_i) and λ(‖w‖ + ‖w0‖ + ‖c‖ + R)².
  LD mag = 0;
  for (std::int64_t i = 0; i < p.end - p.begin; ++i) {
    mag += std::abs(theta[i]) * p.A->row(p.begin + i).norm();
  }
  const double wn = w.norm() + 1;
  const double box = w.norm() + p.w0.norm() + p.center.norm() + p.radius;
  const double ulp = 4 * static_cast<double>(w.size() + 4) * 0x1p-52;
  const double margin = ulp * (static_cast<double>(mag / (p.end - p.begin)) * wn +
                                   p.lambda * box * box);
  return *gap <= alpha * (1 - 0x1p-20) - margin;
}

}  // namespace

double glm_erm_objective(const GlmErmProblem& p, const Vector& w) {
  const Block b(p);
  return smoothed_objective(b, w, 0, 0);
}

double glm_duality_gap(const GlmErmProblem& p, const Vector& w, const Vector& theta) {
  const Block b(p);
  require(theta.size() == b.m, "glm_duality_gap: one dual value per row is required");
  LD fy = 0;
  Vector S = Vector::Zero(w.size());
  bool finite = true;
  struct FS {
    LD fy;
    Vector S;
    bool finite;
  };
  ordered_chunks(
      b.m, kChunkRows, p.threads, [&] { return FS{0, Vector::Zero(w.size()), true}; },
      [&](FS& acc, std::int64_t lo, std::int64_t hi) {
        for (std::int64_t i = lo; i < hi && acc.finite; ++i) {
          const auto a = b.row(i);
          const double t = p.env.fenchel_young(a.dot(w), theta[i], b.label(i), b.Li(i));
          if (!std::isfinite(p.env.conjugate(theta[i], b.label(i), b.Li(i)))) acc.finite = false;
          acc.fy += t;
          acc.S.noalias() += theta[i] * a.transpose();
        }
      },
      [&](const FS& acc) {
        fy += acc.fy;
        S += acc.S;
        finite = finite && acc.finite;
      });
  if (!finite) return kInf;
  S /= static_cast<double>(b.m);
  Vector v = p.w0 - S / p.lambda;
  project_ball(p, v);
  const double quad = std::max(0.0, (S + p.lambda * (v - p.w0)).dot(w - v)) +
                      0.5 * p.lambda * (w - v).squaredNorm();
  return static_cast<double>(fy / b.m) + quad;
}

Vector solve_glm_erm_reference(const GlmErmProblem& p, double mu) {
  require(p.A != nullptr && p.y != nullptr && p.end > p.begin, "solve_glm_erm_reference: empty block");
  const Block b(p);
  Vector w = p.w0;
  project_ball(p, w);
  if (!p.env.piecewise_linear()) {
    solve_smoothed(b, w, 0);
    return w;
  }
  // Start wide (μ = 10): at w0 = 0 every hinge residual sits at distance 1 from its kink, so a
  // width-1 start has no curvature and a tiny λ leaves Newton without a usable step.
  for (double m = 10; m >= mu * 0.999; m *= 0.1) solve_smoothed(b, w, m);
  return w;
}

CertifiedSolution solve_certified_glm_erm(const GlmErmProblem& p, double alpha) {
  require(p.A != nullptr && p.y != nullptr && p.end > p.begin, "solve_certified_glm_erm: empty block");
  check_positive(p.lambda, "lambda");
  check_positive(alpha, "alpha");
  const Block b(p);
  CertifiedSolution out;
  Vector w = p.w0;
  project_ball(p, w);
  if (!p.env.piecewise_linear()) {
    for (int round = 0; round < 3; ++round) {
      out.newton_steps += solve_smoothed(b, w, 0);
      out.w = w;
      if (accept(p, w, model_duals(b, w, 0), alpha, &out.gap)) {
        out.certified = true;
        return out;
      }
    }
    return out;
  }
  out.gap = kInf;
  for (double mu = kMuStart; mu >= kMuEnd; mu *= kMuFactor) {
    out.newton_steps += solve_smoothed(b, w, mu);
    double gap;
    if (accept(p, w, model_duals(b, w, mu), alpha, &gap)) {
      out.w = w, out.gap = gap, out.certified = true;
      return out;
    }
    if (gap < out.gap) out.w = w, out.gap = gap;
    Vector wa, th;
    if (active_set_finish(b, w, mu, &wa, &th)) {
      if (accept(p, wa, th, alpha, &gap)) {
        out.w = wa, out.gap = gap, out.certified = true;
        return out;
      }
      if (gap < out.gap) out.w = wa, out.gap = gap;
    }
  }
  return out;
}

}  // namespace dpstats::optimize
