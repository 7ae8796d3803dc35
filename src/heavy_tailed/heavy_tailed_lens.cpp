#include "dpstats/heavy_tailed/heavy_tailed_lens.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "dpstats/error.hpp"

namespace dpstats::optimize {
namespace {

constexpr int kMaxProbes = 80;  // public cap on certified solves (bisection halvings + 2)

struct Probe {
  CertifiedSolution s;
  double dist = 0;   // ‖w − c‖
  bool feasible = false;
  double slack = 0;  // (μ/2)(r² − ‖w − c‖²), long double, >= 0 when feasible
};

}  // namespace

LensSolution solve_certified_lens_glm_erm(const GlmErmProblem& p, const Vector& c, double r,
                                          double alpha) {
  check_positive(r, "lens radius");
  check_positive(alpha, "alpha");
  require(c.size() == p.w0.size(), "lens centre has the wrong dimension");
  require((c - p.center).norm() <= p.radius, "lens centre must lie in W");
  const double ulp = 4 * static_cast<double>(c.size() + 4) * 0x1p-52;
  LensSolution out;
  out.solution.gap = std::numeric_limits<double>::infinity();
  const auto probe = [&](double mu) {
    GlmErmProblem q = p;
    q.lambda = p.lambda + mu;
    q.w0 = (p.lambda * p.w0 + mu * c) / (p.lambda + mu);
    Probe pr;
    pr.s = solve_certified_glm_erm(q, alpha / 2);
    ++out.probes;
    out.solution.newton_steps += pr.s.newton_steps;
    const Vector e = pr.s.w - c;
    pr.dist = e.norm();
    // Strictly inside (relative margin for the rounding of ‖w − c‖).
    pr.feasible = pr.s.certified && pr.dist <= r * (1 - 0x1p-40);
    const long double sl = 0.5L * mu * (static_cast<long double>(r) * r - e.squaredNorm());
    pr.slack = static_cast<double>(sl) + ulp * mu * (r + pr.dist) * (r + pr.dist);
    return pr;
  };
  const auto accept = [&](const Probe& pr, double mu) {
    if (!pr.feasible) return false;
    const double gap = pr.s.gap + pr.slack;
    if (gap <= alpha) {
      out.solution.w = pr.s.w;
      out.solution.gap = gap;
      out.solution.certified = true;
      out.multiplier = mu;
      return true;
    }
    return false;
  };
  // μ = 0: the ball constraint may be inactive (then the W solution certifies the lens problem).
  const Probe p0 = probe(0);
  if (!p0.s.certified) return out;
  if (accept(p0, 0)) return out;
  double lo = 0, hi = 2 * (p.C + p.lambda * (p.w0 - c).norm()) / r;
  Probe ph = probe(hi);
  if (!ph.s.certified || !ph.feasible) return out;  // cannot happen in exact arithmetic
  if (accept(ph, hi)) return out;
  // Illinois regula falsi on φ(μ) = ‖w(μ) − c‖ − r (non-increasing in μ), bisection as a guard.
  double f_lo = p0.dist - r, f_hi = ph.dist - r;
  int side = 0;
  while (out.probes < kMaxProbes && hi - lo > hi * 0x1p-50) {
    double mid = hi - f_hi * (hi - lo) / (f_hi - f_lo);
    if (!(mid > lo + 1e-3 * (hi - lo) && mid < hi - 1e-3 * (hi - lo))) mid = 0.5 * (lo + hi);
    const Probe pm = probe(mid);
    if (!pm.s.certified) return out;
    if (pm.feasible) {
      if (accept(pm, mid)) return out;
      hi = mid, f_hi = pm.dist - r;
      if (side == 1) f_lo *= 0.5;
      side = 1;
    } else {
      lo = mid, f_lo = pm.dist - r;
      if (side == -1) f_hi *= 0.5;
      side = -1;
    }
  }
  return out;
}

}  // namespace dpstats::optimize
