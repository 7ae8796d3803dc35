#include "dpstats/geometry/ball.hpp"

namespace dpstats {

void project_to_ball(Vector& y, const Vector& centre, double radius) {
  const double dist = (y - centre).norm();
  if (dist > radius) y = centre + (y - centre) * (radius / dist);
}

void project_to_ball(Vector& y, double radius) {
  const double norm = y.norm();
  if (norm > radius) y *= radius / norm;
}

}  // namespace dpstats
