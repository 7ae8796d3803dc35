// Certified FastCenter (KLTY Alg. 3); the proof is docs/proofs/median.md §6.
#include "dpstats/median/fast_center.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/exact/exact_sum.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/bounded_laplace.hpp"

namespace dpstats {
namespace {

// The largest b <= 40 for which (a) every weighted term w·q (|w| <= quarter, |q| <= 2^b) and the
// n-row sum stay in exact::row_sums' exact range and (b) every squared lattice distance
// Σ_c (q_ic − q_jc)² <= d·2^(2b+2) is an exact integer in a double (<= 2^53).
int lattice_bits(std::int64_t n, std::int64_t d, std::int64_t quarter) {
  for (int b = 40; b >= 1; --b) {
    const double term = static_cast<double>(quarter) * std::ldexp(1.0, b);
    const bool sum_ok = term <= exact::kMaxTerm && static_cast<double>(n) * term < exact::kMaxSum;
    const bool dist_ok = static_cast<double>(d) * std::ldexp(1.0, 2 * b + 2) <= exact::kMaxSum;
    if (sum_ok && dist_ok) return b;
  }
  throw InvalidArgument(fmt::format(
      "FastCenter: n = {} rows with k/4 = {} (or d = {}) leave no exact integer lattice", n,
      quarter, d));
}

// The gate's mechanism (lines 8–11): the bounded lattice Laplace in weight units.
BoundedLaplaceMechanism gate_mechanism(const FastCenterPlan& plan) {
  return BoundedLaplaceMechanism(plan.gate_scale, plan.gate_bound, plan.gate_sensitivity);
}

// Row i projected onto B(0, R), scaled by 2^-e, rounded to integers and clamped to ±2^b.
void quantise_row(const double* x, std::int64_t d, double R, int e, int b, double* q) {
  double s = 0;
  for (std::int64_t c = 0; c < d; ++c) s += x[c] * x[c];
  const double norm = std::sqrt(s);
  const double f = norm > R ? R / norm : 1.0;
  const double cap = std::ldexp(1.0, b);
  for (std::int64_t c = 0; c < d; ++c)
    q[c] = std::clamp(exact::nearest(std::ldexp(x[c] * f, -e)), -cap, cap);
}

}  // namespace

std::int64_t fast_center_partners(std::int64_t n, double delta) {
  check_delta_positive(delta);
  require(n >= 1, "n must be >= 1");
  const auto k = static_cast<std::int64_t>(
      std::ceil(kFastCenterSampleConstant * std::log(18.0 * static_cast<double>(n) / delta)));
  return (k + 3) / 4 * 4;
}

FastCenterPlan fast_center_plan(std::int64_t n, std::int64_t d, double domain_radius,
                                double r_hat, double epsilon, double delta) {
  check_positive(r_hat, "r_hat");
  check_finite(r_hat, "r_hat");
  check_epsilon(epsilon);
  check_delta_positive(delta);
  require(domain_radius >= 1e-290 && domain_radius <= 1e300,
          "domain_radius must be in [1e-290, 1e300], got {}", domain_radius);
  require(n >= 20, "FastCenter needs n >= 20 rows (KLTY Lemma 9), got n = {}", n);
  require(d >= 1, "FastCenter needs d >= 1 columns, got d = {}", d);
  FastCenterPlan p;
  p.n = n, p.d = d;
  p.k = fast_center_partners(n, delta);
  p.quarter = p.k / 4;
  p.bits = lattice_bits(n, d, p.quarter);
  int ex = 0;
  std::frexp(domain_radius, &ex);  // R < 2^ex
  p.exponent = ex - p.bits;
  p.quantum = std::ldexp(1.0, p.exponent);
  // T = ⌊(2r̂/g)²⌋, capped at 2^53 (no lattice distance exceeds d·2^(2b+2) <= 2^53).
  const double t2 = std::ldexp(2 * r_hat, -p.exponent);
  p.threshold = t2 >= 0x1p26 ? std::int64_t{1} << 53
                             : static_cast<std::int64_t>(std::floor(t2 * t2));
  p.r_eff = p.quantum * std::sqrt(static_cast<double>(p.threshold)) / 2 * (1 + 0x1p-50);
  // The gate (weight units): Δ_W = 12·(k/4), t >= Δ_W/(ε/2), τ = ⌈t ln(24/δ)⌉.
  p.gate_sensitivity = 12 * p.quarter;
  p.gate_scale = static_cast<std::int64_t>(
      std::ceil(kFastCenterGateScale * static_cast<double>(p.quarter) / epsilon * (1 + 0x1p-50)));
  require(p.gate_scale < (std::int64_t{1} << 56), "FastCenter: epsilon = {} is too small", epsilon);
  p.gate_bound = static_cast<std::int64_t>(
      std::ceil(static_cast<double>(p.gate_scale) * std::log(24 / delta)));
  require(20 * (static_cast<double>(n) * static_cast<double>(p.quarter) +
                2 * static_cast<double>(p.gate_bound)) < 0x1p62,
          "FastCenter: epsilon = {} is too small for the gate's 64-bit integer test", epsilon);
  p.gate_delta = gate_mechanism(p).delta();
  require(p.gate_bound > p.gate_sensitivity && p.gate_delta <= delta / 6,
          "FastCenter: epsilon = {} is too large for the bounded Laplace gate (its delta {} "
          "exceeds delta/6 = {}); use epsilon <= 2.5",
          epsilon, p.gate_delta, delta / 6);
  p.min_weight = 11 * n * p.quarter / 20 + 1;
  // ‖x̄ − x̄'‖ <= 8 r_eff (|W−W'| + Σ_{i<n}|w_i−w'_i| + w_n + w'_n)/min(W, W')
  //           <= 8 r_eff (9 + 8 + 2)(k/4)/W_min, plus the division's rounding on both sides.
  const double rows = 19 * static_cast<double>(p.quarter) * 8 * p.r_eff /
                      static_cast<double>(p.min_weight);
  const double rounding = std::ldexp(std::sqrt(static_cast<double>(d)), p.bits + p.exponent - 52);
  p.sensitivity = (rows + rounding) * (1 + 0x1p-40);
  return p;
}

namespace {

constexpr const char* kTheorem = "KLTY Lemma 9, docs/proofs/median.md §6.1";
constexpr const char* kPurpose = "fast_center (KLTY Alg. 3, certified: integer scores, weights and sum)";

// Line 14's Gaussian: (epsilon/2, delta/6) at the plan's sensitivity.
GaussianMechanism output_mechanism(const FastCenterPlan& p, double epsilon, double delta,
                                   std::int64_t d) {
  return GaussianMechanism::from_epsilon_delta(p.sensitivity, epsilon / 2, delta / 6,
                                               static_cast<std::size_t>(d));
}

}  // namespace

LedgerEntry fast_center_entry(double epsilon, double delta) {
  check_epsilon(epsilon);
  check_delta_positive(delta);
  return proved_entry(PrivacyLoss::approximate(epsilon, delta), kTheorem, kPurpose);
}

bool fast_center_gate(std::int64_t W, const FastCenterPlan& plan, Rng& rng) {
  const std::int64_t xi = gate_mechanism(plan).noise(rng);
  // |W + ξ − τ| <= n·(k/4) + 2τ < 2^62/20 (the plan checks it): exact in 64-bit integers.
  return 20 * (W + xi - plan.gate_bound) > 11 * plan.n * plan.quarter;
}

FastCenterResult fast_center(const ConstMatrixRef& X, double domain_radius, double r_hat,
                             double epsilon, double delta, Rng& rng) {
  check_data(X);
  const auto n = static_cast<std::int64_t>(X.rows()), d = static_cast<std::int64_t>(X.cols());
  const FastCenterPlan p = fast_center_plan(n, d, domain_radius, r_hat, epsilon, delta);
  FastCenterResult res;
  res.k = p.k;
  res.quantum = p.quantum;
  res.sensitivity = p.sensitivity;
  // The quantised rows (exact integers in doubles).
  RowMatrix Q(n, d);
  for (std::int64_t i = 0; i < n; ++i)
    quantise_row(X.data() + i * X.outerStride(), d, domain_radius, p.exponent, p.bits,
                 Q.data() + i * d);
  // Lines 2–7: integer scores, integer weights, their integer total W = Z·(k/4).
  std::vector<std::int64_t> w(static_cast<std::size_t>(n));
  std::int64_t W = 0;
  {
    RandomBits bits(rng);
    const auto thr = static_cast<double>(p.threshold);
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t f = 0;
      const double* qi = Q.data() + i * d;
      for (std::int64_t s = 0; s < p.k; ++s) {
        const auto j = static_cast<std::int64_t>(bits.uniform_below(static_cast<std::uint64_t>(n)));
        const double* qj = Q.data() + j * d;
        double acc = 0;  // every partial sum is an integer <= 2^53: exact
        for (std::int64_t c = 0; c < d; ++c) acc += (qi[c] - qj[c]) * (qi[c] - qj[c]);
        f += acc <= thr;
      }
      const std::int64_t wi = std::clamp<std::int64_t>(f - 2 * p.quarter, 0, p.quarter);
      w[static_cast<std::size_t>(i)] = wi;
      W += wi;
    }
  }
  // The entry is the (ε, δ) Lemma 9 proves for the mechanisms that drew: the gate, then the
  // Gaussian when the gate passed.
  const LedgerEntry whole = fast_center_entry(epsilon, delta);
  Ledger ran = {gate_mechanism(p).ledger_entry("fast_center gate")};
  // Lines 8–11: the lattice BoundedLaplace gate, in integers.
  if (!fast_center_gate(W, p, rng)) {
    res.failed = true;
    res.centre = Vector::Zero(d);
    res.ledger = proved_entry(whole.loss, kTheorem, kPurpose, std::move(ran));
    return res;
  }
  // Lines 12–14: Σ w_i q_i exactly, divided once by W (W >= W_min > 0 here), then the Gaussian.
  const Vector sums = exact::row_sums(
      n, d, static_cast<double>(p.quarter) * std::ldexp(1.0, p.bits), 1,
      [&](int, std::int64_t begin, std::int64_t end, std::uint64_t* words) {
        const std::int64_t dd = d;
        for (std::int64_t i = begin; i < end; ++i) {
          const double wi = static_cast<double>(w[static_cast<std::size_t>(i)]);
          const double* qi = Q.data() + i * dd;
          for (std::int64_t c = 0; c < dd; ++c) exact::add(words[c], wi * qi[c]);
        }
      });
  Vector mean(d);
  for (std::int64_t c = 0; c < d; ++c)
    mean[c] = std::ldexp(sums[c] / static_cast<double>(W), p.exponent);
  const GaussianMechanism g = output_mechanism(p, epsilon, delta, d);
  ran.push_back(g.ledger_entry("fast_center output"));
  res.ledger = proved_entry(whole.loss, kTheorem, kPurpose, std::move(ran));
  res.sigma = g.sigma();
  res.centre = g.apply(mean, rng);
  return res;
}

}  // namespace dpstats
