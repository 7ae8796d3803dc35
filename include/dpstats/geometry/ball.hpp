// The one Euclidean ball projection of the library: Π_{B(centre, radius)}(y), in place.
// Every capability that keeps an iterate inside a ball (the geometric median's DP-GD and phased
// DP-SGD, heavy-tailed optimisation's domain) projects through this function, so the rounding of
// a projected point is the same everywhere (a projected point is within radius·(1 + 4·2^-53) of
// the centre: one norm, one division, one multiply-add per coordinate).
#pragma once
#include "dpstats/data/matrix.hpp"

namespace dpstats {

// y <- centre + (y − centre)·(radius/‖y − centre‖) when ‖y − centre‖ > radius; unchanged
// otherwise. radius >= 0 (not checked: callers validate their public radius once).
void project_to_ball(Vector& y, const Vector& centre, double radius);

// The ball around the origin: y <- y·(radius/‖y‖) when ‖y‖ > radius.
void project_to_ball(Vector& y, double radius);

}  // namespace dpstats
