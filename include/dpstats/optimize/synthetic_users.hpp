// Synthetic per-user data for tests, experiments and benchmarks (card user-level-dp-sco.md §5.1,
// addendum task). Not a private computation: floating-point samplers, usually seeded.
#pragma once
#include <cstdint>

#include "dpstats/optimize/user_data.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::optimize {

struct UserTask {
  std::int64_t n = 1000, m = 20, d = 10;
  double w_norm = 4;             // ‖w*‖ (direction fixed by the seed)
  double scale_spread = 0.5;     // each user's features scaled by U(1 − s, 1 + s) (addendum)
  double heterogeneity = 0;      // G4: w_u = w* + κ·ξ_u, ξ_u ~ N(0, I/d)
  bool squared = false;          // labels y = <a, w_u> + e, |e| <= 1 (G2); else logistic ±1 (G1)
  std::int64_t adversaries = 0;  // G5: the first users flip labels, features ×100 (clipped to A)
};

// Features a ~ N(0, I/d) clipped to norm 1 then scaled per user; labels from w_u. Returns
// user-major data (feature bound A = 1.5 ≥ every honest norm; label bound 1).
UserDataset make_user_task(const UserTask& task, const Vector& w_star, Rng& rng);
// w* of norm task.w_norm, a random direction.
Vector make_w_star(const UserTask& task, Rng& rng);

}  // namespace dpstats::optimize
