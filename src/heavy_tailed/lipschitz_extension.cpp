#include "dpstats/heavy_tailed/lipschitz_extension.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "dpstats/error.hpp"

namespace dpstats::optimize {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
double sigmoid(double x) {
  return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
}
double xlogx(double x) { return x <= 0 ? 0.0 : x * std::log(x); }

// Huber with threshold t in e: ½e² for |e| <= t, t|e| − ½t² otherwise.
double huber(double e, double t) {
  const double a = std::abs(e);
  return a <= t ? 0.5 * e * e : t * (a - 0.5 * t);
}

// Minimises a convex function on [lo, hi] by golden-section search to width tol.
template <class F>
double golden_min(F&& f, double lo, double hi, double tol) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi;
  double x1 = b - g * (b - a), x2 = a + g * (b - a);
  double f1 = f(x1), f2 = f(x2);
  for (int it = 0; it < 400 && b - a > tol; ++it) {
    if (f1 <= f2) {
      b = x2;
      x2 = x1;
      f2 = f1;
      x1 = b - g * (b - a);
      f1 = f(x1);
    } else {
      a = x1;
      x1 = x2;
      f1 = f2;
      x2 = a + g * (b - a);
      f2 = f(x2);
    }
  }
  double best = f1 <= f2 ? x1 : x2;
  // The end points can be optimal for monotone functions.
  if (f(lo) <= f(best)) best = lo;
  if (f(hi) < f(best)) best = hi;
  return best;
}

}  // namespace

double GlmEnvelope::phi(double u, double y) const { return value(u, y, kInf); }

double GlmEnvelope::dual_bound(double L) const {
  switch (kind) {
    case GlmKind::absolute:
    case GlmKind::hinge:
    case GlmKind::logistic: return std::min(1.0, L);
    case GlmKind::squared: return L;
    case GlmKind::huber: return std::min(huber_kappa, L);
  }
  return L;
}

void GlmEnvelope::two_slope(double y, double L, double* kink, double* l, double* r) const {
  const double c = std::min(1.0, L);
  if (kind == GlmKind::absolute) {
    *kink = y, *l = -c, *r = c;
  } else {  // hinge c·max(0, 1 − y u), y = ±1: kink at u = y
    *kink = y;
    *l = y > 0 ? -c : 0.0;
    *r = y > 0 ? 0.0 : c;
  }
}

double GlmEnvelope::value(double u, double y, double L) const {
  switch (kind) {
    case GlmKind::absolute: return std::min(1.0, L) * std::abs(u - y);
    case GlmKind::hinge: return std::min(1.0, L) * std::max(0.0, 1 - y * u);
    case GlmKind::squared: return std::isinf(L) ? 0.5 * (u - y) * (u - y) : huber(u - y, L);
    case GlmKind::huber: return huber(u - y, std::min(huber_kappa, L));
    case GlmKind::logistic: {
      const double v = y * u;
      if (L >= 1) return softplus(-v);
      const double v0 = std::log((1 - L) / L);  // σ(−v0) = L
      return v >= v0 ? softplus(-v) : softplus(-v0) + L * (v0 - v);
    }
  }
  return 0;
}

double GlmEnvelope::derivative(double u, double y, double L) const {
  const double b = dual_bound(L);
  switch (kind) {
    case GlmKind::absolute: return u > y ? b : (u < y ? -b : 0.0);
    case GlmKind::hinge: return y * u < 1 ? -y * b : 0.0;
    case GlmKind::squared:
    case GlmKind::huber: return std::clamp(u - y, -b, b);
    case GlmKind::logistic: return -y * std::min(b, sigmoid(-y * u));
  }
  return 0;
}

double GlmEnvelope::curvature(double u, double y, double L) const {
  const double b = dual_bound(L);
  switch (kind) {
    case GlmKind::absolute:
    case GlmKind::hinge: return 0;
    case GlmKind::squared:
    case GlmKind::huber: return std::abs(u - y) <= b ? 1.0 : 0.0;
    case GlmKind::logistic: {
      const double p = sigmoid(-y * u);
      return p <= b ? p * (1 - p) : 0.0;
    }
  }
  return 0;
}

double GlmEnvelope::conjugate(double theta, double y, double L) const {
  const double b = dual_bound(L);
  if (std::abs(theta) > b * (1 + 1e-15)) return kInf;
  switch (kind) {
    case GlmKind::absolute: return theta * y;
    case GlmKind::hinge: {
      double k, l, r;
      two_slope(y, L, &k, &l, &r);
      if (theta < l - 1e-15 || theta > r + 1e-15) return kInf;
      return theta * k;
    }
    case GlmKind::squared:
    case GlmKind::huber: return theta * y + 0.5 * theta * theta;
    case GlmKind::logistic: {
      const double s = theta * y;  // dual of softplus(−v): s ∈ [−1, 0]
      if (s > 0 || s < -1) return kInf;
      return xlogx(-s) + xlogx(1 + s);
    }
  }
  return kInf;
}

double GlmEnvelope::fenchel_young(double u, double theta, double y, double L) const {
  switch (kind) {
    case GlmKind::absolute:
    case GlmKind::hinge: {
      double k, l, r;
      two_slope(y, L, &k, &l, &r);
      const double e = u - k;
      return e >= 0 ? (r - theta) * e : (l - theta) * e;
    }
    case GlmKind::squared:
    case GlmKind::huber: {
      const double b = dual_bound(L), e = u - y;
      if (std::abs(e) <= b) return 0.5 * (e - theta) * (e - theta);
      // t|e| − ½t² + ½θ² − θe = t(|e| − t) + ½(t − θ s)² ... with s = sign(e): exact rearrangement.
      const double s = e > 0 ? 1.0 : -1.0;
      return b * (std::abs(e) - b) - theta * s * (std::abs(e) - b) + 0.5 * (b - theta * s) * (b - theta * s);
    }
    case GlmKind::logistic:
      return std::max(0.0, value(u, y, L) + conjugate(theta, y, L) - theta * u);
  }
  return 0;
}

// ---- (E2): exact extension on a ball -----------------------------------------------------------

ExtEval extension_on_ball(const GlmEnvelope& env, const Ball& W, const Vector& w, const Vector& a,
                          double y, double C, double tol) {
  check_positive(C, "C");
  const Vector c = W.center();
  const double R = W.radius(), an = a.norm();
  ExtEval out;
  out.s = Vector::Zero(w.size());
  if (an == 0) {
    out.upper = out.lower = env.phi(0, y);
    out.y = w;
    return out;
  }
  const double ac = a.dot(c), aw = a.dot(w);
  const Vector e = (w - c) - ((aw - ac) / (an * an)) * a;
  const double en = e.norm();
  const auto rho = [&](double s) {
    const double t = (s - ac) / an;
    return std::sqrt(std::max(0.0, R * R - t * t));
  };
  const auto dist = [&](double s) {
    const double along = (s - aw) / an, perp = std::max(0.0, en - rho(s));
    return std::hypot(along, perp);
  };
  const auto g = [&](double s) { return env.phi(s, y) + C * dist(s); };
  const double lo = ac - R * an, hi = ac + R * an;
  const double s_star = golden_min(g, lo, hi, tol * std::max(1.0, an));
  const Vector cs = c + ((s_star - ac) / (an * an)) * a;
  const double r = rho(s_star);
  out.y = en > 0 ? Vector(cs + e * std::min(1.0, r / en)) : cs;
  out.upper = out.lower = env.phi(a.dot(out.y), y) + C * (w - out.y).norm();
  const Vector diff = w - out.y;
  const double dn = diff.norm();
  if (dn > 1e-12 * std::max(1.0, w.norm())) {
    out.s = C * diff / dn;
  } else {
    out.s = env.derivative(aw, y, kInf) * a;
    const double sn = out.s.norm();
    if (sn > C) out.s *= C / sn;
  }
  return out;
}

// ---- support functions ----------------------------------------------------------------------------

SupportDomain support_of_ball(const Vector& center, double radius) {
  return {[=](const Vector& v) { return v.dot(center) + radius * v.norm(); },
          [=](const Vector& v) {
            const double n = v.norm();
            return n > 0 ? Vector(center + radius * v / n) : center;
          },
          [=](Vector& x) {
            const double n = (x - center).norm();
            if (n > radius) x = center + (x - center) * (radius / n);
          }};
}

SupportDomain support_of_box(const Vector& lower, const Vector& upper) {
  return {[=](const Vector& v) {
            double s = 0;
            for (Eigen::Index i = 0; i < v.size(); ++i) s += std::max(v[i] * lower[i], v[i] * upper[i]);
            return s;
          },
          [=](const Vector& v) {
            Vector x(v.size());
            for (Eigen::Index i = 0; i < v.size(); ++i) x[i] = v[i] >= 0 ? upper[i] : lower[i];
            return x;
          },
          [=](Vector& x) { x = x.cwiseMax(lower).cwiseMin(upper); }};
}

SupportDomain support_of_ellipsoid(const Vector& center, const Eigen::MatrixXd& Q) {
  return {[=](const Vector& v) { return v.dot(center) + (Q.transpose() * v).norm(); },
          [=](const Vector& v) {
            const Vector u = Q.transpose() * v;
            const double n = u.norm();
            return n > 0 ? Vector(center + Q * u / n) : center;
          },
          {}};
}

SupportDomain support_of_polytope(const std::vector<Vector>& vertices) {
  require(!vertices.empty(), "support_of_polytope: at least one vertex is required");
  const auto best = [vertices](const Vector& v) {
    std::size_t j = 0;
    for (std::size_t i = 1; i < vertices.size(); ++i) {
      if (vertices[i].dot(v) > vertices[j].dot(v)) j = i;
    }
    return j;
  };
  return {[=](const Vector& v) { return vertices[best(v)].dot(v); },
          [=](const Vector& v) { return vertices[best(v)]; },
          {}};
}

// ---- §2.9 dual oracle ------------------------------------------------------------------------------

ExtEval structured_extension(const GlmEnvelope& env, const SupportDomain& W, const Vector& w,
                             const Vector& a, double y, double C, double B, int iterations) {
  require(env.piecewise_linear(), "structured_extension: loss must be absolute or hinge");
  check_positive(C, "C");
  double kink, l, r;
  env.two_slope(y, kInf, &kink, &l, &r);
  const auto f = [&](const Vector& p) { return std::max(l * (a.dot(p) - kink), r * (a.dot(p) - kink)); };
  ExtEval out;
  out.y = w;
  out.upper = f(w);
  // Upper bound: projected subgradient on φ(y) = f(y) + C‖w − y‖ (when W has a projection).
  if (W.project) {
    Vector p = w;
    const double scale = std::max(1.0, a.norm() + C);
    for (int t = 1; t <= iterations; ++t) {
      const double e = a.dot(p) - kink;
      Vector g = (e >= 0 ? r : l) * a;
      const Vector d = p - w;
      const double dn = d.norm();
      if (dn > 0) g += C * d / dn;
      p -= (0.5 / (scale * std::sqrt(static_cast<double>(t)))) * g;
      W.project(p);
      const double v = f(p) + C * (w - p).norm();
      if (v < out.upper) out.upper = v, out.y = p;
    }
  }
  // Lower bound G(s, θ) = ⟨s, w⟩ − θκ − σ_W(s − θa): alternate a golden search in θ and
  // projected supergradient steps in s (‖s‖ <= C).
  const auto G = [&](const Vector& s, double th) { return s.dot(w) - th * kink - W.support(s - th * a); };
  Vector s = Vector::Zero(w.size());
  const Vector d0 = w - out.y;
  if (d0.norm() > 0) s = C * d0 / d0.norm();
  double theta = golden_min([&](double t) { return -G(s, t); }, l, r, 1e-13 * (r - l + 1));
  out.lower = G(s, theta);
  out.s = s;
  for (int t = 1; t <= iterations && out.upper - out.lower > B; ++t) {
    const Vector grad = w - W.argmax(s - theta * a);
    s += (C / std::sqrt(static_cast<double>(t))) * grad / std::max(1e-300, grad.norm());
    const double sn = s.norm();
    if (sn > C) s *= C / sn;
    theta = golden_min([&](double u) { return -G(s, u); }, l, r, 1e-13 * (r - l + 1));
    const double v = G(s, theta);
    if (v > out.lower) out.lower = v, out.s = s;
  }
  return out;
}

}  // namespace dpstats::optimize
