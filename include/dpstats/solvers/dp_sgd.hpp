// Gradient methods on per-user data (docs/proofs/user-level.md §3 baselines; docs/results/user-level.md B0, B1),
// general enough for the heavy-tailed solvers: projected SGD, and DP-GD / DP-SGD whose noisy
// gradient is an exact sum of clipped per-unit gradients (exact_sum.hpp) released by the secure
// Gaussian mechanism in zCDP.
//
// Privacy (replace-one neighbours; the unit is a user unless stated):
//  * user_dp_gd: every step releases Σ_u clip_c(∇F̂(x, Z_u)) + N(0, σ²I), the per-user mean gradient
//    clipped to c; the sum's sensitivity is ~2c (exact, see ClippedVectorSum); T adaptive steps at
//    ρ/T each compose to ρ-zCDP.
//  * user_dp_sgd: one pass over disjoint batches of users (a data-independent permutation); each
//    user's data enters one step only, so by parallel composition the run is ρ-zCDP with ρ per step.
//  * item_dp_sgd_group: one pass over disjoint batches of items with per-item clipping: ρ/m²-zCDP
//    at item level, hence ρ-zCDP for a user's m items by zCDP group privacy (Bun & Steinke 2016,
//    Prop. 1.9: k²ρ for groups of k).
// The caller spends the planned loss on its Budget before these draw noise (they take the
// mechanism's ρ as given).
#pragma once
#include <functional>
#include <optional>

#include "dpstats/solvers/domain.hpp"
#include "dpstats/solvers/loss.hpp"
#include "dpstats/user_level/user_data.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats {
class Communicator;
}

#include "dpstats/seam.hpp"

namespace dpstats::optimize {

// Instrumentation for tests (the disjointness of docs/proofs/user-level.md §3): called with (step or phase, group, user)
// every time a user's data is read. Not part of any release.
using UserHook = std::function<void(std::int64_t, std::int64_t, std::int64_t)>;

struct GradientOptions {
  int steps = 20;            // DP-GD: gradient steps; DP-SGD: number of disjoint batches
  double step_size = 1.0;    // η
  double clip = 1.0;         // c: per-user (or per-item) gradient clip
  double rho = 0;            // zCDP of the whole run (see the header)
  bool average = true;       // return the average of x_{⌊T/2⌋+1}..x_T (else the last)
  NoiseMode noise = NoiseMode::secure;
  double sigma_scale = 1;    // test hook: 0 disables the noise (never in a release)
  UserHook hook;
  int threads = 1;           // the per-user gradient passes (any value, the same output)
  // user_dp_gd and user_dp_sgd on several ranks (null: one process; user_dp_sgd's batch
  // permutation of the global user order is drawn on rank 0): each rank holds its home users
  // (home_rank.hpp), the per-step lattice sums are added exactly over ranks (capacity
  // data.total_users()) and rank 0 draws the noise, so the run is the one-process run.
  Communicator* comm = nullptr;
  // A release's account (null: none): the run builds its one mechanism before the first step and
  // claims its planned entry (the *_planned functions below) with the mechanism's own.
  ReleaseBudget* account = nullptr;
};

// What each run charges, planned before its clip is known (the same losses; seam.hpp):
// user_dp_gd the Gaussian at rho/T, T times; user_dp_sgd a parallel composite of T disjoint user
// batches at rho; item_dp_sgd_group group privacy over a user's m items of a parallel composite
// of T disjoint item batches at rho/m^2 (privacy/composite.hpp).
LedgerEntry user_dp_gd_planned(const GradientOptions& o);
LedgerEntry user_dp_sgd_planned(const GradientOptions& o);
LedgerEntry item_dp_sgd_group_planned(const GradientOptions& o, std::int64_t items_per_user);

// Result of a run: the iterate, the noise standard deviation on the released gradient sum, and
// the number of noisy releases.
struct GradientRun {
  Vector x;
  double sigma = 0;
  double sensitivity = 0;
  int releases = 0;
};

// (1/m) Σ_k ∇f(x; z_{u,k}) for user u.
Vector user_mean_gradient(const UserDataset& data, const Loss& loss, const Vector& x,
                          std::int64_t user, GradientCounter& counter);

GradientRun user_dp_gd(const UserDataset& data, const Loss& loss, const Domain& domain,
                       const Vector& x0, const GradientOptions& o, Rng& rng,
                       GradientCounter& counter);
GradientRun user_dp_sgd(const UserDataset& data, const Loss& loss, const Domain& domain,
                        const Vector& x0, const GradientOptions& o, Rng& rng,
                        GradientCounter& counter);
GradientRun item_dp_sgd_group(const UserDataset& data, const Loss& loss, const Domain& domain,
                              const Vector& x0, const GradientOptions& o, Rng& rng,
                              GradientCounter& counter);

// One-pass projected SGD over the given items in the given order, from y0: returns the average of
// y_0..y_{T−1} (the points where gradients were taken; docs/proofs/user-level.md §2.2 SGD subroutine). Non-private.
Vector projected_sgd(const UserDataset& data, const Loss& loss, const Domain& domain,
                     const Vector& y0, double eta,
                     const std::vector<std::pair<std::int64_t, std::int64_t>>& items,
                     GradientCounter& counter);

// Non-private one-pass SGD on all n·m items in a random order (baseline B3).
Vector non_private_sgd(const UserDataset& data, const Loss& loss, const Domain& domain,
                       const Vector& x0, double eta, Rng& rng, GradientCounter& counter);

// Empirical risk (1/(nm)) Σ f(x; z) (evaluation only; not counted as gradients).
double empirical_risk(const UserDataset& data, const Loss& loss, const Vector& x);

// A uniformly random permutation of {0..n−1} (Fisher–Yates with exact uniform draws).
std::vector<std::int64_t> random_permutation(std::int64_t n, Rng& rng);

}  // namespace dpstats::optimize
