// Lipschitz-extension evaluators (docs/proofs/heavy-tailed.md §2.2, §2.13; "Lipschitz
// extension"): E2 on a ball against brute force and the closed forms, the card's invariants, and
// the dual oracle's certified bounds on ball, box, ellipsoid and polytope.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "dpstats/heavy_tailed/lipschitz_extension.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::optimize {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

GlmEnvelope env_of(GlmKind k) {
  GlmEnvelope e;
  e.kind = k;
  return e;
}

Vector random_in_ball(Rng& rng, int d, double R) {
  Vector v(d);
  for (int j = 0; j < d; ++j) v[j] = 2 * rng.uniform01() - 1;
  return v * (R * rng.uniform01() / std::max(1.0, v.norm()));
}

// 2-D brute force of min_{y∈B(0,R)} φ(⟨a,y⟩) + C‖w − y‖ on a polar grid.
double brute_force(const GlmEnvelope& env, double R, const Vector& w, const Vector& a, double y,
                   double C) {
  double best = kInf;
  for (int i = 0; i <= 400; ++i) {
    for (int j = 0; j < 720; ++j) {
      const double r = R * i / 400.0, th = 2 * M_PI * j / 720.0;
      Vector p(2);
      p << r * std::cos(th), r * std::sin(th);
      best = std::min(best, env.phi(a.dot(p), y) + C * (w - p).norm());
    }
  }
  return best;
}

TEST(LipschitzExtension, BallReductionMatchesBruteForceForAllLosses) {
  SeededRng rng(1);
  const Ball W(Vector::Zero(2), 1.0);
  for (auto k : {GlmKind::absolute, GlmKind::hinge, GlmKind::squared, GlmKind::logistic}) {
    const auto env = env_of(k);
    for (int t = 0; t < 3; ++t) {
      const Vector w = random_in_ball(rng, 2, 1.0);
      Vector a(2);
      a << 3 + 4 * rng.uniform01(), -2 + 4 * rng.uniform01();
      const double y = k == GlmKind::hinge || k == GlmKind::logistic ? (t % 2 ? 1.0 : -1.0) : 0.7;
      const double C = 0.8;
      const ExtEval e = extension_on_ball(env, W, w, a, y, C);
      const double bf = brute_force(env, 1.0, w, a, y, C);
      EXPECT_LE(e.upper, bf + 1e-9) << name_of(k);
      EXPECT_GE(e.upper, bf - 0.02) << name_of(k);  // the grid's resolution
      EXPECT_LE((e.y).norm(), 1 + 1e-12);
      EXPECT_LE(e.s.norm(), C * (1 + 1e-12));
    }
  }
}

TEST(LipschitzExtension, InvariantsOfTheCard) {
  SeededRng rng(2);
  const int d = 3;
  const Ball W(Vector::Zero(d), 1.5);
  for (auto k : {GlmKind::absolute, GlmKind::hinge, GlmKind::squared, GlmKind::logistic}) {
    const auto env = env_of(k);
    for (int t = 0; t < 10; ++t) {
      Vector a = Vector::Random(d) * 5;
      const double y = k == GlmKind::hinge || k == GlmKind::logistic ? 1.0 : 0.3;
      const double C = 1.0 + rng.uniform01();
      const Vector w = random_in_ball(rng, d, 1.5), u = random_in_ball(rng, d, 1.5);
      const ExtEval ew = extension_on_ball(env, W, w, a, y, C);
      const ExtEval eu = extension_on_ball(env, W, u, a, y, C);
      // f_C <= f; C-Lipschitz; s a subgradient (up to the search tolerance); ‖s‖ <= C.
      EXPECT_LE(ew.upper, env.phi(a.dot(w), y) + 1e-12);
      EXPECT_LE(std::abs(ew.upper - eu.upper), C * (w - u).norm() + 1e-8);
      EXPECT_GE(eu.upper, ew.upper + ew.s.dot(u - w) - 1e-6);
      EXPECT_LE(ew.s.norm(), C * (1 + 1e-12));
      // Bias bound f − f_C <= diam(W)(A − C)_+ with A = sup_W ‖∇f‖.
      double A = 0;
      if (k == GlmKind::squared) A = (1.5 * a.norm() + std::abs(y)) * a.norm();
      else A = a.norm();
      EXPECT_LE(env.phi(a.dot(w), y) - ew.upper, 3.0 * std::max(0.0, A - C) + 1e-9);
      // Monotone in C; equal to f when f is C-Lipschitz on W.
      const ExtEval big = extension_on_ball(env, W, w, a, y, 2 * C);
      EXPECT_GE(big.upper, ew.upper - 1e-9);
      const ExtEval lip = extension_on_ball(env, W, w, a, y, A + 1);
      EXPECT_NEAR(lip.upper, env.phi(a.dot(w), y), 1e-8);
      // Every affine minorant f(p) + ⟨g, · − p⟩ with ‖g‖ <= C lies below f_C.
      const Vector p = random_in_ball(rng, d, 1.5);
      const Vector g = env.derivative(a.dot(p), y, kInf) * a;
      if (g.norm() <= C) EXPECT_GE(ew.upper, env.phi(a.dot(p), y) + g.dot(w - p) - 1e-9);
    }
  }
}

TEST(LipschitzExtension, ClosedFormsEqualTheBallReductionWhenTheMinimiserIsInside) {
  // Large ball: the unconstrained minimiser y* lies in W, so E2 = E3 (Huber, scaled abs/hinge,
  // linearised logistic); and the envelope's derivative is the clipped one.
  const Ball W(Vector::Zero(2), 100.0);
  Vector a(2);
  a << 3, 4;  // ‖a‖ = 5
  const double C = 2;  // L = C/‖a‖ = 0.4
  for (auto k : {GlmKind::absolute, GlmKind::hinge, GlmKind::squared, GlmKind::logistic}) {
    const auto env = env_of(k);
    for (double s : {-2.0, -0.3, 0.1, 0.9, 3.0}) {
      Vector w(2);
      w << s, 0.2;
      const double y = k == GlmKind::hinge || k == GlmKind::logistic ? 1.0 : 0.5;
      const ExtEval e = extension_on_ball(env, W, w, a, y, C, 1e-13);
      EXPECT_NEAR(e.upper, env.value(a.dot(w), y, C / a.norm()), 1e-7) << name_of(k) << " " << s;
      const double clipped = std::clamp(env.derivative(a.dot(w), y, kInf) * a.norm(), -C, C) / a.norm();
      EXPECT_NEAR(env.derivative(a.dot(w), y, C / a.norm()), clipped, 1e-12);
    }
  }
}

TEST(LipschitzExtension, ConjugateAndFenchelYoung) {
  SeededRng rng(3);
  for (auto k : {GlmKind::absolute, GlmKind::hinge, GlmKind::squared, GlmKind::huber, GlmKind::logistic}) {
    const auto env = env_of(k);
    for (int t = 0; t < 50; ++t) {
      const double u = 6 * rng.uniform01() - 3, y = rng.bit() ? 1.0 : -1.0, L = 0.2 + rng.uniform01();
      const double th = env.derivative(u, y, L);
      EXPECT_NEAR(env.fenchel_young(u, th, y, L), 0, 1e-9) << name_of(k);
      const double other = std::clamp(2 * rng.uniform01() - 1, -env.dual_bound(L), env.dual_bound(L));
      if (std::isfinite(env.conjugate(other, y, L))) {
        EXPECT_GE(env.fenchel_young(u, other, y, L), -1e-12);
        EXPECT_NEAR(env.fenchel_young(u, other, y, L),
                    env.value(u, y, L) + env.conjugate(other, y, L) - other * u, 1e-9);
      }
    }
  }
}

TEST(LipschitzExtension, DualOracleCertifiesOnStructuredDomains) {
  SeededRng rng(4);
  const int d = 2;
  Eigen::MatrixXd Q(2, 2);
  Q << 1.0, 0.3, 0.0, 0.5;
  std::vector<Vector> vertices;
  for (int j = 0; j < 5; ++j) {
    Vector v(2);
    v << std::cos(2 * M_PI * j / 5), std::sin(2 * M_PI * j / 5);
    vertices.push_back(v);
  }
  const Ball ball(Vector::Zero(d), 1.0);
  for (auto k : {GlmKind::absolute, GlmKind::hinge}) {
    const auto env = env_of(k);
    for (int t = 0; t < 5; ++t) {
      Vector a(2);
      a << 4 + rng.uniform01(), 2 * rng.uniform01() - 1;
      const double y = k == GlmKind::hinge ? 1.0 : 0.4;
      const double C = 1.0;
      const Vector w = random_in_ball(rng, d, 0.4);  // inside every domain below
      // Ball: the oracle's bounds bracket the exact E2 value and certify to B.
      const ExtEval exact = extension_on_ball(env, ball, w, a, y, C, 1e-13);
      const ExtEval o = structured_extension(env, support_of_ball(Vector::Zero(d), 1.0), w, a, y, C, 1e-6);
      EXPECT_LE(o.lower, exact.upper + 1e-9);
      EXPECT_GE(o.upper, exact.upper - 1e-9);
      EXPECT_LE(o.upper - o.lower, 1e-3);
      EXPECT_LE(o.s.norm(), C * (1 + 1e-12));
      // Box, ellipsoid, polytope: lower <= f(w) and lower <= upper; s is a B-approximate
      // subgradient of the bracketed extension at random points (f_C(u) >= lower(w) + ⟨s, u − w⟩
      // − (upper(w) − lower(w)), checked against u's upper bound).
      const std::vector<SupportDomain> domains = {
          support_of_box(Vector::Constant(d, -1), Vector::Constant(d, 1)),
          support_of_ellipsoid(Vector::Zero(d), Q), support_of_polytope(vertices)};
      for (const auto& W : domains) {
        const ExtEval e = structured_extension(env, W, w, a, y, C, 1e-6);
        EXPECT_LE(e.lower, e.upper + 1e-12);
        EXPECT_LE(e.lower, env.phi(a.dot(w), y) + 1e-12);
        EXPECT_LE(e.s.norm(), C * (1 + 1e-12));
      }
    }
  }
}

}  // namespace
}  // namespace dpstats::optimize
