#include "dpstats/solvers/adaptive_subgradient.hpp"

#include <algorithm>
#include <cmath>

#include "dpstats/error.hpp"

namespace dpstats::optimize {

Alg3Result adaptive_inexact_subgradient(
    const std::function<void(const Vector&, Vector&)>& subgradient,
    const std::function<void(const Vector&, double, Vector&)>& project, const Vector& x1,
    double diameter, double alpha, std::int64_t max_iterations) {
  check_positive(diameter, "diameter");
  check_positive(alpha, "alpha");
  require(max_iterations >= 1, "max_iterations must be >= 1");
  Alg3Result out;
  Vector x = x1, g(x1.size()), sum = Vector::Zero(x1.size()), next(x1.size());
  long double S = 0;
  for (std::int64_t t = 1; t <= max_iterations; ++t) {
    subgradient(x, g);
    sum += x;
    out.iterations = t;
    const double gn2 = g.squaredNorm();
    if (gn2 == 0) {  // line 5: x_t is optimal
      out.x = x;
      out.certified = true;
      return out;
    }
    S += gn2;
    const double rootS = std::sqrt(static_cast<double>(S));
    const double eta = diameter / rootS;
    const double xi = std::min(diameter, alpha * eta / (6 * diameter));
    project(x - eta * g, xi, next);
    if (3 * diameter * rootS <= alpha * static_cast<double>(t)) {  // line 8
      out.x = sum / static_cast<double>(t);
      out.certified = true;
      return out;
    }
    x = next;
  }
  out.x = sum / static_cast<double>(out.iterations);
  return out;
}

Vector inexact_ball_cap_projection(const std::function<void(Vector&)>& project_W, const Vector& c,
                                   double r, const Vector& y, double xi, int* calls) {
  check_positive(r, "r");
  check_positive(xi, "xi");
  int count = 1;
  Vector x = y;
  project_W(x);
  if ((x - c).norm() <= r) {
    if (calls != nullptr) *calls = count;
    return x;
  }
  const double R = (y - c).norm();
  double lo = 0, hi = R / r;
  const int N = static_cast<int>(std::ceil(std::log2(1 + R * R / (r * xi))));
  for (int k = 0; k < N; ++k) {
    const double mid = 0.5 * (lo + hi);
    x = (y + mid * c) / (1 + mid);
    project_W(x);
    ++count;
    if ((x - c).squaredNorm() - r * r > 0) lo = mid;
    else hi = mid;
  }
  x = (y + hi * c) / (1 + hi);  // the feasible side
  project_W(x);
  ++count;
  // Rounding can leave x a hair outside the ball: pull it onto the segment to c (stays in W by
  // convexity, c ∈ W).
  const double dist = (x - c).norm();
  if (dist > r) x = c + (x - c) * (r / dist);
  if (calls != nullptr) *calls = count;
  return x;
}

}  // namespace dpstats::optimize
