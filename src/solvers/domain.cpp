#include "dpstats/solvers/domain.hpp"

#include <cmath>

#include "dpstats/error.hpp"

namespace dpstats::optimize {

Ball::Ball(Vector center, double radius) : center_(std::move(center)), radius_(radius) {
  check_positive(radius, "domain radius");
  require(center_.size() >= 1 && center_.allFinite(), "domain centre must be finite, d >= 1");
}

void Ball::project(Vector& x) const {
  const double dist = (x - center_).norm();
  if (dist > radius_) x = center_ + (x - center_) * (radius_ / dist);
}

bool Ball::contains(const Vector& x, double tol) const {
  return (x - center_).norm() <= radius_ * (1 + tol);
}

Box::Box(Vector lower, Vector upper) : lower_(std::move(lower)), upper_(std::move(upper)) {
  require(lower_.size() == upper_.size() && lower_.size() >= 1,
          "box bounds must have the same dimension d >= 1");
  require(lower_.allFinite() && upper_.allFinite() && (lower_.array() <= upper_.array()).all(),
          "box bounds must be finite with lower <= upper");
}

void Box::project(Vector& x) const { x = x.cwiseMax(lower_).cwiseMin(upper_); }

double Box::max_norm() const { return lower_.cwiseAbs().cwiseMax(upper_.cwiseAbs()).norm(); }

bool Box::contains(const Vector& x, double tol) const {
  const Vector slack = (upper_ - lower_) * tol;
  return (x.array() >= (lower_ - slack).array()).all() &&
         (x.array() <= (upper_ + slack).array()).all();
}

}  // namespace dpstats::optimize
