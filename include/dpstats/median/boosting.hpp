// Private optimisation of the geometric-median objective (docs/proofs/median.md §3–§5), on a
// domain ball fixed by earlier private outputs.
//
// Every function spends its planned privacy loss on the given Budget before drawing any noise
// (BudgetExceeded leaves the budget untouched and draws nothing). The *_entries functions return
// exactly what the matching function spends, from public values only, so that a driver can charge
// a stage on its ReleaseBudget before running it (geometric_median.cpp).
//
// Floating point. The noisy full gradient (DPGD, localizations) is released from the one exact
// integer sum (exact/exact_sum.hpp, its ball convention): each unit subgradient coordinate is
// rounded to a multiple of 2^-b (b = min(30, 52 − ⌈log2(n+1)⌉)) and the integers are added
// exactly (|sum| < 2^53). Replacing one row moves the
// integer sum by at most 2·(1 + (d+4)·2^-52)·2^b + sqrt(d) in l2 (two unit vectors, their
// computed norms at most 1 + (d+4)·2^-52, plus half a step of rounding per coordinate for each of
// the two rows), plus 2^-49 for the final division by n·2^b (gradient_sensitivity), and that is
// the sensitivity the Gaussian is calibrated to.
// The phased DP-SGD methods release averages of floating-point iterates. Lemma 11 bounds the
// distance between the two runs' exact iterates by max(D, 3η) per shared step and D + 2η per
// differing step; a computed step differs from the exact step at the computed point by at most
// E = 8(d+4)·2^-53·B with B = ||c_k|| + rad_k + η_k (public: every iterate is projected into
// B(c_k, rad_k)), and the computed average by at most 2^-53·T_k·sqrt(d)·B. So the phase output's
// sensitivity is at most (2m+1)η_k + 2·T_k·E + 2·2^-53·T_k·sqrt(d)·B, which is what is used.
#pragma once
#include <cstdint>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/geometry/ball.hpp"
#include "dpstats/median/row_shard.hpp"
#include "dpstats/names.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats {

// (1/n) Σ u_i(z) exactly as released before noise: the quantised exact sum divided by n·2^b.
// Also returns the l2 sensitivity of that mean (the integer-sum sensitivity divided by n·2^b).
//
// With tau > 0 the same pass also returns the curvature h = (1/n) Σ tau/max(‖z − x_i‖, tau) in
// [0, 1], quantised and summed exactly the same way (l2 sensitivity curvature_sensitivity(n)):
// Weiszfeld's step is 1/H with H = h/tau.
struct MeanGradient {
  Vector g;
  double sensitivity = 0;
  double curvature = 0;  // h, when tau > 0
};
// `threads` cuts the rows into parts merged by exact integer addition: the result does not depend
// on it.
// With a shard, X is this rank's part and n = shard.total: the integer sums are merged over ranks.
MeanGradient mean_unit_gradient(const ConstMatrixRef& X, const Vector& z, double tau = 0,
                                int threads = 1, const RowShard& shard = {});
double gradient_sensitivity(std::int64_t n, std::int64_t d);
double curvature_sensitivity(std::int64_t n);

struct DpgdOptions {
  double rho = 0;       // zCDP of the whole run; ρ/T per step
  int steps = 1;        // T (passes over the data)
  double eta = 0;       // step size
  double radius = 0;    // domain B(x0, radius)
  bool average = true;  // HSU24: average of the post-update iterates; false: last iterate
  NoiseMode noise = NoiseMode::secure;
  double sigma_scale = 1;  // test hook: 0 disables the noise (and the spend); never in a release
  // Private Weiszfeld steps (ours, not the paper's; docs/results/geometric-median.md): each step
  // also releases the noisy curvature ĥ (share `curvature_share` of its ρ) and moves by
  // η_t = min(eta, tau/ĥ), Weiszfeld's 1/H capped at `eta`. tau = weiszfeld_tau_fraction·radius.
  bool weiszfeld_step = false;
  double curvature_share = 0.1;
  double weiszfeld_tau_fraction = 1.0 / 64;
  int threads = 1;  // the gradient passes' threads (RunControl::threads; any value, same output)
  RowShard shard;   // the ranks holding the rows (issue 18)
};
// HSU24 DP-GD (docs/proofs/median.md §3): θ ← Π(θ − η(ĝ)), ĝ the noisy mean unit gradient.
Vector dpgd(const ConstMatrixRef& X, const Vector& x0, const DpgdOptions& options, Budget& budget,
            Rng& rng);
// What dpgd spends for n rows of d columns (empty with sigma_scale = 0).
Ledger dpgd_entries(std::int64_t n, std::int64_t d, const DpgdOptions& options);

// HSU24 localization (docs/proofs/median.md §4): J = max(1, ⌈log2(R/r̂)⌉) rounds of DPGD (ρ_loc/J each, T steps,
// η_j = D·sqrt(2d/(3ρ_j n²))) on shrinking balls D ← D/2 + 12 r̂, from c = 0, D = R.
struct HsuLocalizationOptions {
  double rho = 0;
  int inner_steps = 1000;
  NoiseMode noise = NoiseMode::secure;
  int threads = 1;  // the gradient passes' threads (any value, same output)
  RowShard shard;   // the ranks holding the rows (issue 18): every round's DP-GD over them
};
Vector hsu24_localize(const ConstMatrixRef& X, double R, double r_hat,
                      const HsuLocalizationOptions& options, Budget& budget, Rng& rng);
Ledger hsu24_localize_entries(std::int64_t n, std::int64_t d, double R, double r_hat,
                              const HsuLocalizationOptions& options);

// Practical localization (ours; docs/proofs/median.md §4): noisy subgradient descent from 0 on B(0, R) with
// geometric steps η_t = (R/4)·decay^t, T = ⌈ln(R/r̂)/ln(1/decay)⌉ + extra_steps, last iterate,
// on a data-independent subsample of min(n, subsample) rows. Noise on each gradient: ρ-zCDP for
// any step schedule (ρ/T per step).
struct GeometricLocalizationOptions {
  double rho = 0;
  double decay = 0.8;
  int extra_steps = 10;
  std::int64_t subsample = 20000;
  NoiseMode noise = NoiseMode::secure;
  int threads = 1;  // the gradient passes' threads (any value, same output)
  RowShard shard;   // the ranks holding the rows: rank 0 draws the subsample's global ids
};
Vector geometric_localize(const ConstMatrixRef& X, double R, double r_hat,
                          const GeometricLocalizationOptions& options, Budget& budget, Rng& rng);
Ledger geometric_localize_entries(std::int64_t n, std::int64_t d, double R, double r_hat,
                                  const GeometricLocalizationOptions& options);

// Phased DP-SGD (KLTY Alg. 4) and its fixed-order variant (Remark 1).
enum class LaterRadius { paper, corrected };
template <>
struct EnumNames<LaterRadius> {
  static constexpr std::string_view parameter = "later_radius";
  static constexpr std::array<std::pair<LaterRadius, std::string_view>, 2> names = {
      {{LaterRadius::paper, "paper"}, {LaterRadius::corrected, "corrected"}}};
};
struct PhasedSgdOptions {
  bool fixed_order = true;   // false: StableDPSGD (uniform index with replacement)
  double rho = 0;            // zCDP of the phases (Cor. 1); spent as (9/14)ρ·(1 − (9/16)^K)/… see below
  double delta = 1e-5;       // enters m (Stable) and the later-phase radii ln(4K/δ)
  double eta = 0;            // input step η (phase k uses 4^-k η)
  int K = 0;                 // T = 2^K − 1 ≥ n
  double radius = 0;         // phase-1 domain radius around the start
  LaterRadius later_radius = LaterRadius::paper;
  bool shuffle_order = true;   // fixed order: seeded permutation (data-independent); false: identity
  bool per_phase_m = false;    // fixed order: m_k = ⌈T_k/n⌉ (valid for a cyclic order, proofs §5)
  bool exact_budget = false;   // scale the phase noises to spend exactly ρ (ours; docs/proofs/median.md §5)
  NoiseMode noise = NoiseMode::secure;
  double sigma_scale = 1;      // test hook: 0 disables noise; never in a release
};
struct PhasedSgdResult {
  Vector x;
  std::int64_t T = 0;
  double m = 0;                    // Stable: 3(T/n + ln(8/δ)); fixed order: ⌈T/n⌉
  std::vector<double> sigma;       // σ_k actually used per phase
  std::vector<std::int64_t> phase_steps;
  std::int64_t max_index_uses = 0; // fixed order: most uses of one index (trace, public)
  Ledger entries;                  // the phases' Gaussian mechanisms' own entries, in order
};
// K_for_passes: the smallest K with 2^K − 1 ≥ max(n, passes·n).
int K_for_passes(double passes, std::int64_t n);
// Stable m (Lemma 10) and fixed-order m.
double stable_m(std::int64_t T, std::int64_t n, double delta);
// Lemma 12: StableDPSGD with parameter ρ is (ρ + sqrt(ρ² + 4ρ ln(2/δ)), δ)-DP.
double stable_dpsgd_epsilon(double rho, double delta);
// What a StableDPSGD run spends: one entry for all phases, (stable_dpsgd_epsilon(ρ, δ), δ), by
// Lemma 12 (a proved composite, privacy/composite.hpp): planned, and with the phases' entries
// (PhasedSgdResult::entries) once they ran.
LedgerEntry stable_dpsgd_entry(double rho, double delta);
LedgerEntry stable_dpsgd_entry(double rho, double delta, Ledger phases);
// The privacy loss charged for a phased run: fixed order: zCDP Σ_k ρ_k; Stable: (ε, δ) of Lemma 12.
PhasedSgdResult phased_dpsgd(const ConstMatrixRef& X, const Vector& start,
                             const PhasedSgdOptions& options, Budget& budget, Rng& rng);

}  // namespace dpstats
