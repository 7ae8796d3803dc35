// Alg 2/3 (docs/proofs/user-level.md §2.3–2.5): user-level DP accelerated minibatch SGD
// (restarted AC-SA) inside phased, regularised ERM on disjoint user blocks, with outlier-gradient
// removal (paper profile: AboveThreshold gate + P6 coin filter) or exact clipped sums (practical
// profile), and the non-smooth variant through randomized smoothing (smoothing.hpp). The schedule
// comes from plan_accelerated (user_level.hpp); fit_user_level calls run_alg3.
#pragma once
#include <cstdint>
#include <vector>

#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/solvers/domain.hpp"
#include "dpstats/solvers/loss.hpp"
#include "dpstats/user_level/user_data.hpp"
#include "dpstats/user_level/user_level.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::optimize {

// AC-SA of Ghadimi & Lan (docs/proofs/user-level.md §2.3, Euclidean prox) for a μ-strongly convex, L_f-smooth
// objective on X: query() gives x^md_t, step(G) takes the stochastic gradient there, output() is
// x^ag. restart() starts a new stage from x^ag (the restarted multi-stage wrapper).
class Acsa {
 public:
  Acsa(const Vector& start, double mu, double L_f, const Domain& X);
  const Vector& query();
  void step(const Vector& G);
  void restart();
  const Vector& output() const { return xag_; }
  std::int64_t stage_step() const { return t_ - 1; }  // steps taken in this stage

 private:
  double alpha() const { return 2.0 / static_cast<double>(t_ + 1); }
  double gamma() const;
  double mu_, L_f_;
  const Domain* X_;
  std::int64_t t_ = 1;
  Vector x_, xag_, xmd_;
};

// Concentration degrees of P6 at radius r (docs/proofs/user-level.md §2.3–2.4): h_j = #{k : ‖q_j − q_k‖ <= r}, computed by
// the Gram trick with an exact recomputation of every pair within 1e−9 relative of r (§4.3).
std::vector<std::int64_t> concentration_degrees(const RowMatrix& Q, double r);

struct Alg3Result {
  Vector x;
  bool halted = false;
  std::int64_t halted_phase = 0, halted_step = 0;
  std::int64_t steps_run = 0;     // noisy-gradient steps executed (<= Σ T_i)
};

// Runs the planned schedule (P from plan_accelerated on the same public sizes) from x0. The
// caller has charged the privacy budget. `smoothing_radius` > 0 for the non-smooth variant.
// The Gaussian of one noisy step of phase `ph` (paper: sigma_i on the filtered mean; practical:
// rho/T_i on the clipped sum): public given the plan, so a release presents its entries before
// run_alg3 draws with it.
GaussianMechanism alg3_step_mechanism(const Alg3Plan& P, const Alg3Phase& ph, std::int64_t d,
                                      NoiseMode noise);

Alg3Result run_alg3(const UserDataset& data, const Loss& loss, const Domain& X, const Vector& x0,
                    const Alg3Plan& P, const UserLevelOptions& o, Rng& rng,
                    GradientCounter& counter, UserLevelTrace* trace = nullptr);

}  // namespace dpstats::optimize
