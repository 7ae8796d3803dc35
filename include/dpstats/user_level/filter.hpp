// User-level DP-GD with a certified soft filter around a private centre (method "dp-gd-filter";
// docs/proofs/user-level.md §3.1). Each of T steps makes two Gaussian releases:
//   1. the centre ĉ = (Σ_u clip_c(g_u) + Z_c)/n, g_u the user's mean gradient (sensitivity ≈ 2c);
//   2. the filtered residual Σ_u w_u·(ḡ_u − ĉ) + Z_f, ḡ_u = clip_c(g_u), with the soft weight
//      w_u = clamp(2 − ‖ḡ_u − ĉ‖/r, 0, 1): 1 within r of the centre, 0 beyond 2r, so every term
//      has norm <= 2r (sensitivity ≈ 4r, exact sum clipped to 2r).
// The step uses ĉ + (residual)/n. w_u is a function of user u's data and released values only,
// so each release has the stated sensitivity; 2T adaptive Gaussian releases at ρ_c/T and ρ_f/T
// compose to ρ_c + ρ_f = ρ (zCDP). There is no gate: nothing fails, nothing is added to δ.
// A user whose clipped gradient lies beyond 2r from the centre contributes only through ĉ
// (at most c/n), not through the residual.
#pragma once
#include <cstdint>

#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/solvers/dp_sgd.hpp"
#include "dpstats/solvers/domain.hpp"
#include "dpstats/solvers/loss.hpp"
#include "dpstats/user_level/user_data.hpp"

#include "dpstats/seam.hpp"

namespace dpstats::optimize {

// The filter's public constants (never read from the data).
inline constexpr double kFilterRadiusOverClip = 0.5;  // r = c/2: the residual's sensitivity ≈ 2c
inline constexpr double kFilterCentreShare = 0.5;     // ρ_c = ρ/2, ρ_f = ρ/2

struct FilterOptions {
  int steps = 20;
  double step_size = 1;
  double clip = 1;           // c
  double radius = 0.5;       // r
  double rho = 0;            // zCDP of the whole run
  double centre_share = kFilterCentreShare;
  NoiseMode noise = NoiseMode::secure;
  bool noiseless = false;    // test hook: no draws (never in a release)
  UserHook hook;
  // Several ranks (null: one process): each rank holds its home users (home_rank.hpp); both
  // per-step lattice sums are added exactly over ranks (capacity data.total_users()) and rank 0
  // draws both noises, so the run is the one-process run.
  Communicator* comm = nullptr;
  // A release's account (null: none): the run claims plan_filter's entries, from the mechanisms
  // it draws with, before the first step.
  ReleaseBudget* account = nullptr;
};

// The soft weight of a clipped gradient at distance `dist` from the centre.
double filter_weight(double dist, double radius);

// The two mechanisms one step uses (each entry's count is T), from public values.
Ledger plan_filter(std::int64_t n, std::int64_t d, const FilterOptions& o);
// The same charges before the clip is known (reserved: the same losses; seam.hpp).
Ledger filter_planned(const FilterOptions& o);

// Runs the T steps (the caller charges plan_filter, or filter_planned, first). Returns the tail
// average as DP-GD.
GradientRun filtered_dp_gd(const UserDataset& data, const Loss& loss, const Domain& domain,
                           const Vector& x0, const FilterOptions& o, Rng& rng,
                           GradientCounter& counter);

}  // namespace dpstats::optimize
