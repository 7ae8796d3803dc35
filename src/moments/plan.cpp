// plan_moments (the mechanisms from public values) and the release's account.
#include "dpstats/moments/estimator.hpp"
#include "blt.hpp"
#include "detail.hpp"
#include "dpstats/moments/theory.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/privacy/neighbouring_names.hpp"
#include "dpstats/seam.hpp"

namespace dpstats::moments {

namespace {

// The floating-point margin of C·X (docs/proofs/moments.md §3): C·X is computed in doubles, so
// neighbouring streams' computed values can differ by more than the exact sensitivity. Each
// computed coordinate is within (len + 2) 2^-53 L1 B of the exact one (a sum of len products,
// L1 = sum |c_k| or A's largest row sum, B the entry bound); the l2 sensitivity handed to the
// lattice mechanism is enlarged by twice that over all n·D coordinates of the block (about 1e-4
// relative at n = 10^5, d = 100 with blt; far less at small n).
double product_margin(const Factorization& C, double entry_bound, double coords) {
  double l1 = 0, len = 1;
  switch (C.kind()) {
    case FactorizationKind::input: return 0.0;  // C·x = x exactly
    case FactorizationKind::output: {
      const Workload& A = *C.workload();
      for (std::size_t k = 0; k < A.steps(); ++k) l1 += std::abs(A.coefficient(k));
      l1 *= A.row_scale(0);  // the row scale is non-increasing
      len = 2.0 * static_cast<double>(A.steps());  // running sums and EMAs
      break;
    }
    default:
      l1 = C.column_l1();
      len = C.kind() == FactorizationKind::blt ? 2.0 * static_cast<double>(C.steps())
                                               : static_cast<double>(C.coefficients().size());
  }
  return 2 * std::sqrt(coords) * (len + 2) * 0x1p-53 * l1 * entry_bound;
}

}  // namespace

// plan: the mechanisms, calibrated from public values only (steps, dim, the clip the mechanism
// sees, the factorizations and the budget), and the ledger they will be charged.
MomentsPlan plan_moments(const MomentsConfig& c, double pre_share, std::size_t held_rows) {
  require(c.clip.has_value(), "plan_moments needs a clip (given or privately estimated)");
  require(pre_share >= 0 && pre_share < 1,
          fmt::format("pre_share must be in [0, 1), got {}", format_number(pre_share)));
  MomentsPlan p;
  const bool cs = c.method == Method::cs, pp = detail::is_pp(c.method);
  p.d = c.dim;
  p.D2 = c.form == SecondMomentForm::full ? c.dim * c.dim : c.dim;
  p.mech_clip = *c.clip;
  p.np = {.method = c.method, .d = c.dim, .form = c.form, .clip = p.mech_clip,
          .c1_norm = c.C1.norm_1_to_2(), .c2_norm = (cs || pp ? c.C1 : c.C2).norm_1_to_2(),
          .lambda = c.lambda, .alpha = c.alpha, .tau = c.tau, .neighbouring = c.neighbouring};
  const NoiseScales unit = noise_scales(p.np, 1.0);  // sensitivities; validates alpha, tau, lambda
  p.scale2 = second_input_scale(p.np, unit);
  p.rho_share = 1 - pre_share;
  const NoiseMode noise = c.run.noise;
  auto make = [&](double sens, double share, double dim) {
    const auto dims = static_cast<std::size_t>(dim);
    if (c.noise_multiplier)
      return GaussianMechanism::from_sigma(sens, *c.noise_multiplier / std::sqrt(share) * sens,
                                           dims, noise);
    const double rho = c.rho ? *c.rho : epsilon_delta_to_zcdp(c.privacy.epsilon, c.privacy.delta);
    if (!c.rho && share == 1.0 && p.rho_share == 1.0)
      return GaussianMechanism::from_epsilon_delta(sens, c.privacy.epsilon, c.privacy.delta,
                                                   dims, noise);
    return GaussianMechanism::from_rho(sens, rho * p.rho_share * share, dims, noise);
  };
  const double n = static_cast<double>(c.steps), d = static_cast<double>(p.d),
               D2 = static_cast<double>(p.D2);
  const double second_bound = pp ? 0.0 : p.scale2 * p.mech_clip * p.mech_clip;
  // A row that carries h held rows has entries up to h + 1 (C·X's rounding scales with them) and
  // is itself a sum of h + 1 terms of magnitude <= 1 (first) or scale2 (second): neighbouring
  // computed sums differ by one term plus twice gamma_{h+1} (h + 1) per coordinate, which the
  // largest column of C carries to the output (docs/proofs/moments.md §4.2).
  const double h = static_cast<double>(held_rows) + 1;
  const double gamma = held_rows ? h * 0x1p-53 / (1 - h * 0x1p-53) : 0.0;
  const Factorization& C2 = cs ? c.C1 : c.C2;
  const double margin1 = product_margin(c.C1, p.mech_clip * h, n * d) +
                         c.C1.norm_1_to_2() * 2 * gamma * h * p.mech_clip * std::sqrt(d);
  const double margin2 =
      pp ? 0.0
         : product_margin(C2, second_bound * h, n * D2) +
               C2.norm_1_to_2() * 2 * gamma * h * second_bound * std::sqrt(D2);
  if (c.method == Method::ime) {
    p.mech1 = make(unit.s1 + margin1, c.alpha, n * d);
    p.mech2 = make(unit.s2 + margin2, 1 - c.alpha, n * D2);
  } else {
    p.mech1 = make(unit.s1 + std::hypot(margin1, margin2), 1.0, n * (pp ? d : d + D2));
  }
  const char* purpose = c.method == Method::ime ? "first moment stream"
                        : pp                    ? "first moment stream (second by post-processing)"
                                                : "joint first and second moment stream";
  p.ledger.push_back(p.mech1->ledger_entry(purpose));
  if (p.mech2) p.ledger.push_back(p.mech2->ledger_entry("second moment stream"));
  // The noise as it runs: the mechanisms' own sigma (>= the requested one).
  p.sc = unit;
  p.sigma = p.mech1->sigma() / unit.s1 * (c.method == Method::ime ? std::sqrt(c.alpha) : 1.0);
  p.sc.sigma1 = p.mech1->sigma() / unit.s1;
  p.sc.g1 = p.mech1->sigma();
  if (c.method == Method::ime) {
    p.sc.sigma2 = p.mech2->sigma() / unit.s2;
    p.sc.g2 = p.mech2->sigma();
  } else if (!pp) {
    p.sc.sigma2 = p.sc.sigma1;
    p.sc.g2 = p.mech1->sigma() / p.scale2;
  }
  return p;
}

namespace {

// The release's own account: its target and accountant, from the budget option and the plan.
// `pre_rho`: what the batch API spends before the stream (counted in the target of a noise
// multiplier; an epsilon or rho target already includes it).
ReleaseBudget make_account(const MomentsConfig& c, const MomentsPlan& p, Budget* caller,
                           double pre_rho = 0) {
  const bool approximate_entry = p.mech1->loss().kind == LossKind::approximate;
  if (approximate_entry)  // one (epsilon, delta) Gaussian at the whole target
    return ReleaseBudget(c.privacy.loss(), Accountant::basic, caller);
  if (c.privacy.epsilon != 0) return ReleaseBudget(c.privacy.loss(), Accountant::zcdp, caller);
  // rho or a noise multiplier: the target is the (epsilon, delta) that rho converts to.
  double rho = 0;
  if (c.rho) {
    rho = *c.rho;
  } else {
    for (const auto& e : p.ledger) rho += e.loss.rho * e.count;
    rho += pre_rho;
  }
  return ReleaseBudget(
      PrivacyLoss::approximate(zcdp_to_epsilon(rho, c.privacy.delta), c.privacy.delta),
      Accountant::zcdp, caller);
}

}  // namespace
namespace detail {

ReleaseBudget release_account(const MomentsConfig& c, const MomentsPlan& p, Budget* caller,
                              double pre_rho) {
  return make_account(c, p, caller, pre_rho);
}

}  // namespace detail

}  // namespace dpstats::moments
