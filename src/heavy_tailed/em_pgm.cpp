#include "dpstats/heavy_tailed/em_pgm.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "dpstats/seam.hpp"

namespace dpstats::optimize {

Release<Vector> fit_em_pgm(const RowMatrix& X, const Vector& y, const EmPgmOptions& o, Rng& rng,
                           Budget* budget) {
  const std::int64_t n = X.rows(), d = X.cols();
  require(n >= 1 && (d == 1 || d == 2),
          fmt::format("EM-PGM is a d <= 2 reference (grid exponential in d), got d = {}", d));
  require(y.size() == n, "labels must have one entry per row");
  require(X.allFinite() && y.allFinite(), "data must be finite (got a NaN or infinite entry)");
  validate(o.privacy);
  require(o.privacy.delta == 0, "EM-PGM is pure epsilon-DP: delta must be 0");
  check_positive(o.radius, "radius");
  check_positive(o.C, "C");
  check_positive(o.gamma, "gamma");
  check_positive(o.spacing, "spacing");
  require(o.lambda >= 0, "lambda must be >= 0");
  const Vector w0 = o.w0.size() == d ? o.w0 : Vector::Zero(d);
  GlmEnvelope env;
  env.kind = o.loss;
  const auto steps = static_cast<int>(std::ceil(o.radius / o.spacing));
  require(steps <= 2000, "spacing too small for the grid (more than 2000 points per axis)");
  // Grid points of [−R, R]^d, projected onto the ball (the paper's Alg 5, App. E, line 1).
  std::vector<Vector> grid;
  for (int i = -steps; i <= steps; ++i) {
    for (int j = (d == 2 ? -steps : 0); j <= (d == 2 ? steps : 0); ++j) {
      Vector w(d);
      w[0] = i * o.spacing;
      if (d == 2) w[1] = j * o.spacing;
      const double nw = w.norm();
      if (nw > o.radius) w *= o.radius / nw;
      grid.push_back(w);
    }
  }
  std::vector<double> quality(grid.size());
  for (std::size_t g = 0; g < grid.size(); ++g) {
    const Vector& w = grid[g];
    Vector gc = Vector::Zero(d);
    for (std::int64_t i = 0; i < n; ++i) {
      Vector gi = env.derivative(X.row(i).dot(w), y[i], std::numeric_limits<double>::infinity()) *
                  X.row(i).transpose();
      const double norm = gi.norm();
      if (norm > o.C) gi *= o.C / norm;
      gc += gi;
    }
    gc /= static_cast<double>(n);
    Vector step = w - o.gamma * (gc + o.lambda * (w - w0));
    const double ns = step.norm();
    if (ns > o.radius) step *= o.radius / ns;
    quality[g] = -((w - step) / o.gamma).norm();
  }
  ExponentialMechanismOptions em;
  em.epsilon = o.privacy.epsilon;
  em.sensitivity = 2 * o.C / static_cast<double>(n);
  em.monotone = false;  // c = 2: P ∝ exp(−ε s/(2Δ))
  ReleaseBudget account(o.privacy.loss(), Accountant::basic, budget);
  account.charge(exponential_mechanism_entry(em, "EM-PGM grid point"));
  Vector w = grid[permute_and_flip(quality, em, rng)];
  SealFacts facts(false);  // floating-point score (docs/errata.md)
  return seal(std::move(w), account, facts, rng,
              {{"grid_points", grid.size()}, {"gamma", o.gamma}, {"C", o.C},
               {"note", "d <= 2 reference; floating-point score: certified = false"}});
}

}  // namespace dpstats::optimize
