// Synthetic per-user data for tests, experiments and benchmarks (docs/proofs/user-level.md §5.1,
// addendum task). Not a private computation: floating-point samplers, usually seeded.
#pragma once
#include <cstdint>

#include "dpstats/user_level/user_data.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::optimize {

struct UserTask {
  std::int64_t n = 1000, m = 20, d = 10;
  double w_norm = 4;             // ‖w*‖ (direction fixed by the seed)
  double scale_spread = 0.5;     // each user's features scaled by U(1 − s, 1 + s) (addendum)
  double heterogeneity = 0;      // G4 concept shift: w_u = w* + κ·ξ_u, ξ_u ~ N(0, I/d)
  double label_noise = 0;        // per-user label-flip rate ρ_u ~ U(0, label_noise), <= 1/2
  double feature_shift = 0;      // covariate shift: user u's raw features ~ N(μ_u, I/d) with
                                 // μ_u ~ N(0, φ²·I/d) (before the clip to norm 1 and the scale)
  bool squared = false;          // labels y = <a, w_u> + e, |e| <= 1 (G2); else logistic ±1 (G1)
  std::int64_t adversaries = 0;  // G5: the first users flip labels, features ×100 (clipped to A)
};

// Features a ~ N(0, I/d) (+ μ_u) clipped to norm 1 then scaled per user; labels from w_u (then
// flipped with probability ρ_u). Returns user-major data (feature bound A = 1 + scale_spread >=
// every honest norm; label bound 1). With every heterogeneity knob at 0 the draws are those of
// the homogeneous task (same seed, same data).
UserDataset make_user_task(const UserTask& task, const Vector& w_star, Rng& rng);
// w* of norm task.w_norm, a random direction.
Vector make_w_star(const UserTask& task, Rng& rng);

// The exact population excess risk of the logistic task, for experiments (issue 7: a test set of
// 10^5 labelled items could not resolve excesses of 1e-5). Write F(x) = E[softplus(a·x) − p(a)·a·x]
// with p(a) = P(y = 1 | a) over the mixture of honest users. At the population minimiser x*,
// E[p(a)·a] = E[σ(a·x*)·a], hence, exactly,
//     F(x) − F(x*) = E_a[ B(a·x, a·x*) ],   B(u, v) = softplus(u) − softplus(v) − σ(v)(u − v) >= 0:
// no labels are needed, and each term is a non-negative Bregman divergence, so a sample of feature
// vectors shared by every method (common random numbers) estimates the excess with relative
// standard error ≈ 1/√items, not an absolute error ≈ 1/√items as a labelled test set does.
// x*: w* when the labels are well specified (homogeneous users, feature shift). With concept shift
// or label noise, the feature law is rotation-invariant and p(a) depends on a only through a·w*
// and ‖a‖, so x* = c*·w*/‖w*‖; c* solves E[(σ(c·t) − p(a))·t] = 0 (t = a·w*/‖w*‖) by Newton on
// `minimiser_items` draws, with p(a) = ρ̄ + (1 − 2ρ̄)·E_Z σ(a·w* + κ‖a‖Z/√d) by 40-point
// Gauss–Hermite (ρ̄ = label_noise/2).
class PopulationExcess {
 public:
  PopulationExcess(const UserTask& task, const Vector& w_star, std::int64_t items, Rng& rng,
                   std::int64_t minimiser_items = 4'000'000);
  double operator()(const Vector& x) const;       // F(x) − F(x*)
  double standard_error(const Vector& x) const;   // of the sample mean above
  const Vector& minimiser() const { return x_star_; }

 private:
  RowMatrix a_;    // items × d feature draws of the population (honest users' mixture)
  Vector u_star_;  // a·x*
  Vector x_star_;
};

}  // namespace dpstats::optimize
