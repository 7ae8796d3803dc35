#include "dpstats/median/weiszfeld.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "dpstats/error.hpp"

namespace dpstats {

namespace {

double row_distance(const double* row, const double* x, Eigen::Index d) {
  double s = 0;
  for (Eigen::Index j = 0; j < d; ++j) {
    const double t = row[j] - x[j];
    s += t * t;
  }
  return std::sqrt(s);
}

// One pass at x: objective, the Weiszfeld numerator Σ w_i x_i and Σ w_i over points away from
// x, and how many points coincide with x.
struct Pass {
  double f = 0;
  Vector weighted_sum;
  double weight = 0;
  std::int64_t coincident = 0;
};

Pass evaluate(const ConstMatrixRef& X, const Vector& x, double zero) {
  const Eigen::Index n = X.rows(), d = X.cols();
  Pass p;
  p.weighted_sum = Vector::Zero(d);
  double* acc = p.weighted_sum.data();
  for (Eigen::Index i = 0; i < n; ++i) {
    const double* row = X.data() + i * d;
    const double dist = row_distance(row, x.data(), d);
    p.f += dist;
    if (dist <= zero) {
      ++p.coincident;
      continue;
    }
    const double w = 1.0 / dist;
    p.weight += w;
    for (Eigen::Index j = 0; j < d; ++j) acc[j] += w * row[j];
  }
  p.f /= static_cast<double>(n);
  return p;
}

}  // namespace

double objective(const ConstMatrixRef& X, const Vector& x) {
  require(x.size() == X.cols(), fmt::format("x has {} coordinates, X has {} columns", x.size(),
                                            X.cols()));
  double s = 0;
  for (Eigen::Index i = 0; i < X.rows(); ++i) s += row_distance(X.data() + i * X.cols(), x.data(), X.cols());
  return s / static_cast<double>(X.rows());
}

double quantile_radius(const ConstMatrixRef& X, const Vector& centre, double tau) {
  require(tau > 0 && tau <= 1, fmt::format("tau must be in (0, 1], got {}", tau));
  require(X.rows() >= 1, "X must have at least one row");
  require(centre.size() == X.cols(), "centre must have one coordinate per column of X");
  std::vector<double> dist(static_cast<std::size_t>(X.rows()));
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    dist[static_cast<std::size_t>(i)] = row_distance(X.data() + i * X.cols(), centre.data(), X.cols());
  auto k = static_cast<std::size_t>(std::ceil(tau * static_cast<double>(X.rows()) - 1e-9));
  k = std::clamp<std::size_t>(k, 1, dist.size());
  std::nth_element(dist.begin(), dist.begin() + static_cast<std::ptrdiff_t>(k - 1), dist.end());
  return dist[k - 1];
}

WeiszfeldResult weiszfeld(const ConstMatrixRef& X, const WeiszfeldOptions& o) {
  check_data(X);
  require(o.max_iterations >= 0, "max_iterations must be >= 0");
  require(o.rel_tol >= 0, "rel_tol must be >= 0");
  const Eigen::Index n = X.rows(), d = X.cols();
  WeiszfeldResult r;
  if (o.start) {
    require(o.start->size() == d, "start must have one coordinate per column of X");
    r.x = *o.start;
  } else {
    r.x = X.colwise().mean().transpose();
    r.reads = 1;
  }
  // Scale for "coincident": a distance below 1e-12 of the data's spread counts as zero.
  const double scale = std::max(1.0, X.cwiseAbs().maxCoeff());
  const double zero = 1e-12 * scale;
  for (;;) {
    const Pass p = evaluate(X, r.x, zero);
    ++r.reads;
    r.f = p.f;
    // Σ_{i away} (x_i − x)/||x_i − x|| = weighted_sum − x·weight; the minimum-norm subgradient
    // has norm max(0, ||R̃|| − #coincident)/n (Vardi & Zhang 2000).
    const Vector resultant = p.weighted_sum - r.x * p.weight;
    const double rv = resultant.norm();
    const auto eta0 = static_cast<double>(p.coincident);
    r.grad_norm = std::max(0.0, rv - eta0) / static_cast<double>(n);
    const double g = r.grad_norm;
    r.rel_gap_bound = g == 0 ? 0.0 : (2 * g < 1 ? 2 * g / (1 - 2 * g) : INFINITY);
    if (p.weight == 0 || rv <= eta0 || r.f == 0) {  // optimal (all points at x, or Vardi–Zhang)
      r.rel_gap_bound = 0;
      r.converged = true;
      return r;
    }
    if (r.rel_gap_bound <= o.rel_tol || (o.target_objective && r.f <= *o.target_objective)) {
      r.converged = true;
      return r;
    }
    if (r.iterations >= o.max_iterations) return r;
    const Vector t = p.weighted_sum / p.weight;
    const double beta = eta0 > 0 ? std::min(1.0, eta0 / rv) : 0.0;
    Vector next = (1 - beta) * t + beta * r.x;
    if ((next - r.x).norm() <= 1e-15 * scale) {  // the iteration no longer moves
      r.converged = true;
      return r;
    }
    r.x = std::move(next);
    ++r.iterations;
  }
}

}  // namespace dpstats
