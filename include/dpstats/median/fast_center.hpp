// FastCenter (KLTY Alg. 3), certified (docs/proofs/median.md §6): a subsampled FriendlyCore-style
// weighted mean whose every data-dependent quantity is an exact integer.
//
//   * rows: projected onto the input domain B(0, R) and quantised to the lattice g·Z^d
//     (g = 2^e a power of two, |q_ic| <= 2^b) — a deterministic function of each row;
//   * scores f_i: counts of the k sampled partners j with ‖q_i − q_j‖² <= T (integers, computed
//     exactly in doubles below 2^53); the indicator is exactly ‖y_i − y_j‖ <= 2 r_eff for the
//     quantised rows y = g·q, r_eff = g·sqrt(T)/2 <= r̂;
//   * weights: k is a multiple of 4 and w_i = clamp(f_i − k/2, 0, k/4) = p_i·(k/4), an integer;
//   * Z·(k/4) = W = Σ w_i, an integer; the gate adds a discrete Laplace of scale t >= 24(k/4)/ε
//     conditioned on |ξ| <= τ (the lattice BoundedLaplace) and passes iff
//     20(W + ξ − τ) > 11·n·(k/4) — the paper's Z + ξ − L > 0.55 n in integers;
//   * the weighted sum Σ w_i q_i is one exact integer sum (exact/exact_sum.hpp), divided once
//     by W (one rounding, covered by the sensitivity's slack);
//   * the centre noise: the secure Gaussian calibrated to (ε/2, δ/6) for the l2 sensitivity
//     19·(k/4)·8 r_eff / W_min + slack, W_min the least W a pass admits (the data-dependent
//     denominator min(W, W') bounded by the gate), about 276 r̂/n (the paper's 400 r̂/n is looser).
// The whole is (ε, δ)-DP for n >= 20 (the gate's failure, the sampled-score events and both noises
// accounted in the proof); releases that use it are certified.
#pragma once
#include <cstdint>

#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

inline constexpr double kFastCenterSampleConstant = 600;   // k >= 600 ln(18n/δ)
inline constexpr double kFastCenterGateScale = 24;         // t = 24 (k/4)/ε in weight units
inline constexpr double kFastCenterGateFraction = 0.55;    // pass when Z + ξ − τ > 0.55 n

// Everything FastCenter uses that is a function of public quantities (n, d, R, r̂, ε, δ) only.
struct FastCenterPlan {
  std::int64_t n = 0, d = 0;
  std::int64_t k = 0;                 // partners per row: ⌈600 ln(18n/δ)⌉ rounded up to 4ℤ
  std::int64_t quarter = 0;           // k/4, the largest integer weight
  int bits = 0;                       // |q_ic| <= 2^bits
  int exponent = 0;                   // the lattice step g = 2^exponent >= R·2^-bits
  double quantum = 0;                 // g
  std::int64_t threshold = 0;         // T: a pair counts when Σ_c (q_ic − q_jc)² <= T
  double r_eff = 0;                   // g·sqrt(T)/2, rounded up: the radius the proof uses
  std::int64_t gate_sensitivity = 0;  // 12·(k/4) >= the true 9·(k/4) (proofs §6)
  std::int64_t gate_scale = 0;        // t >= gate_sensitivity/(ε/2), weight units
  std::int64_t gate_bound = 0;        // τ = ⌈t ln(24/δ)⌉: ξ is conditioned on |ξ| <= τ
  double gate_delta = 0;              // δ of the bounded lattice Laplace (<= δ/6, checked)
  std::int64_t min_weight = 0;        // W_min = ⌊11 n (k/4)/20⌋ + 1: a pass implies W >= W_min
  double sensitivity = 0;             // l2 sensitivity of the computed weighted mean, given a pass
};

struct FastCenterResult {
  Vector centre;          // 0_d when the gate failed
  bool failed = false;    // the gate's outcome (a DP output)
  double sigma = 0;       // the secure Gaussian's σ (0 when the gate failed)
  std::int64_t k = 0;     // partners per row
  double quantum = 0;     // the rows' lattice step g
  double sensitivity = 0; // the weighted mean's l2 sensitivity the Gaussian is calibrated to
  LedgerEntry ledger;     // (ε, δ), with the entries of the mechanisms that drew
};

// k: ⌈600 ln(18n/δ)⌉ rounded up to a multiple of 4.
std::int64_t fast_center_partners(std::int64_t n, double delta);

// The public plan; InvalidArgument for n < 20, a non-positive or non-finite R or r̂, R outside
// [1e-290, 1e300], a bad ε or δ, an ε for which the gate's δ exceeds δ/6 (about ε > 2.7), or n·k
// or d beyond the exact integer range.
FastCenterPlan fast_center_plan(std::int64_t n, std::int64_t d, double domain_radius, double r_hat,
                                double epsilon, double delta);

// What fast_center spends: (ε, δ) by Lemma 9, planned (before R and r̂ are known). A run's
// FastCenterResult::ledger is this loss as a proved composite (privacy/composite.hpp) of the
// mechanisms that drew: the gate, and the Gaussian when the gate passed.
LedgerEntry fast_center_entry(double epsilon, double delta);

// The gate (lines 8–11) for the integer weight total W: draws ξ ~ discrete Laplace(t) conditioned
// on |ξ| <= τ and returns whether 20(W + ξ − τ) > 11·n·(k/4). (ε/2, gate_delta)-DP in W for
// |W − W'| <= gate_sensitivity (proofs §6).
bool fast_center_gate(std::int64_t W, const FastCenterPlan& plan, Rng& rng);

// Alg. 3 on the rows of X projected onto B(0, domain_radius). O(n·k·d) time, single-threaded.
FastCenterResult fast_center(const ConstMatrixRef& X, double domain_radius, double r_hat,
                             double epsilon, double delta, Rng& rng);

}  // namespace dpstats
