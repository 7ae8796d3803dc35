// Synthetic heavy-tailed GLM tasks for the heavy-tailed study (docs/proofs/heavy-tailed.md §5,
// docs/results/heavy-tailed.md "Setup"), with their exact or Monte-Carlo excess risk.
//  * l1_student_t: L1 regression y = ⟨w*, x⟩ + ξ, x with i.i.d. Student-t(ν) coordinates, ξ ~ t(ν)
//    (symmetric; ν odd), w* = w_norm·1/√d. A(z) = ‖x‖, so k < ν moments exist. Excess risk
//    E_x ψ(⟨x, w − w*⟩), ψ(c) = ∫_0^|c| (2F_ν(s) − 1) ds, integrated exactly in ξ (Gauss–Legendre
//    on the closed-form odd-ν CDF) over a fixed public sample of x.
//  * l1_misspecified: the same features; y = ⟨w*, x⟩ + 0.2·x_1|x_1| + ξ: an odd, superlinear
//    misspecification, so the best linear L1 fit depends on how much weight the large-‖x‖ records
//    get, and clipping them at a fixed C biases the solution (for symmetric noise and a linear
//    model every weighting is unbiased). Excess risk by Monte Carlo on a fixed public evaluation
//    sample (F* from a non-private solve on it).
//  * hinge_student_t: hinge classification, y = sign⟨w*, x⟩ flipped with probability 0.1.
//    Monte Carlo excess risk like l1_misspecified.
#pragma once
#include <cstdint>
#include <string>

#include "dpstats/data/matrix.hpp"
#include "dpstats/heavy_tailed/heavy_tailed.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::optimize {

enum class HeavyTailedTaskKind { l1_student_t, l1_misspecified, hinge_student_t };

struct HeavyTailedTask {
  HeavyTailedTaskKind kind = HeavyTailedTaskKind::l1_student_t;
  std::int64_t d = 5;
  int nu = 5;            // odd degrees of freedom of the features (and noise)
  double w_norm = 0.8;   // ‖w*‖
  double radius = 2;     // W = Ball(0, radius)
  std::string loss() const;
};

struct HeavyTailedSample {
  RowMatrix X;
  Vector y;
};

// n records from the task (floating-point simulation; the data, not the noise).
HeavyTailedSample generate_heavy_tailed(const HeavyTailedTask& t, std::int64_t n, Rng& rng);
Vector heavy_tailed_w_star(const HeavyTailedTask& t);
// Student-t(ν) CDF for odd ν (closed form).
double student_t_cdf(double x, int nu);

// Excess population risk evaluator over a fixed public evaluation sample.
class HeavyTailedRisk {
 public:
  HeavyTailedRisk(const HeavyTailedTask& t, std::int64_t eval_size, std::uint64_t seed);
  double excess(const Vector& w) const;
  double risk_at_zero() const { return excess(Vector::Zero(task_.d)); }

 private:
  HeavyTailedTask task_;
  HeavyTailedSample eval_;
  Vector w_ref_;     // the minimiser (w* or the eval-sample ERM)
  double f_ref_ = 0;
  double risk(const Vector& w) const;
};

// Public moment bound for the task at order k: G_k = (E‖x‖^k)^{1/k} estimated on a public sample
// of 10^6 feature vectors drawn with a fixed seed (a property of the public model, not of the
// private data); G_2 likewise.
MomentBound heavy_tailed_moment(const HeavyTailedTask& t, double k);

}  // namespace dpstats::optimize
