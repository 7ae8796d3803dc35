// fit_heavy_tailed's scale step: the moment bound G_k (given, or estimated privately) and the
// budget's shares.
#include "dpstats/heavy_tailed/heavy_tailed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/l2_laplace.hpp"
#include "dpstats/solvers/adaptive_subgradient.hpp"
#include "dpstats/heavy_tailed/certificate.hpp"
#include "dpstats/solvers/exact_sum.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_clip.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_lens.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/geometry/ball.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/solvers/holdout.hpp"
#include "dpstats/solvers/standardize.hpp"

#include "heavy_tailed_internal.hpp"

namespace dpstats::optimize::heavy_tailed_detail {

constexpr double kMomentQuantile = 0.75;  // an absent G_k: private 0.75-quantile of the record bounds

// sup_W ‖∇f(w; a, y)‖ for one record (W = Ball(0, R)): |φ'| <= 1 (absolute, hinge, logistic),
// <= κ (huber), <= ‖a‖R + |y| (squared). Depends on this record alone.
double record_bound(GlmKind kind, double kappa, double norm, double y, double R) {
  switch (kind) {
    case GlmKind::huber: return kappa * norm;
    case GlmKind::squared: return norm * (norm * R + std::abs(y));
    default: return norm;
  }
}

// The held-out loss release (solvers/holdout.hpp), planned with the rest and taken from what the
// method has left: pure methods a Laplace at holdout_share x epsilon (basic composition), dp-sgd
// a Gaussian at holdout_share x rho. Non-private, or no holdout: none (the statement is exact).
std::optional<HoldoutLoss> holdout_mechanism(const HeavyTailedOptions& o) {
  if (!o.holdout || o.method == HeavyTailedMethod::non_private) return std::nullopt;
  if (o.method == HeavyTailedMethod::dp_sgd) {
    const double rho = o.holdout_share * epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta);
    return HoldoutLoss::gaussian(o.holdout_loss_bound, rho, o.run.noise);
  }
  return HoldoutLoss::laplace(o.holdout_loss_bound, o.holdout_share * o.privacy.epsilon,
                              o.run.noise);
}

// What the method keeps once the held-out loss release (when planned) has its share.
MethodShares less_holdout(MethodShares m, const HeavyTailedOptions& o) {
  if (!holdout_mechanism(o)) return m;
  if (o.method == HeavyTailedMethod::dp_sgd)
    m.rho -= o.holdout_share * epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta);
  else
    m.epsilon = remainder_after(m.epsilon, o.holdout_share * o.privacy.epsilon);
  return m;
}

// `centring`: what the centring spends before (pure epsilon, or rho for dp-sgd; 0 without).
MethodShares method_shares(const HeavyTailedOptions& o, double centring) {
  MethodShares m;
  const bool gaussian = o.method == HeavyTailedMethod::dp_sgd;
  m.epsilon = centring > 0 && !gaussian ? remainder_after(o.privacy.epsilon, centring)
                                        : o.privacy.epsilon;
  if (gaussian) m.rho = epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta);
  const double rho_total = m.rho;
  if (gaussian) m.rho -= centring;
  if (o.moment_bound || o.method == HeavyTailedMethod::non_private) return less_holdout(m, o);
  // Pure: basic composition, scale_share of epsilon. dp-sgd: scale_share of rho (pure eps is
  // eps^2/2-zCDP).
  m.estimate = gaussian ? std::sqrt(2 * o.scale_share * rho_total)
                        : o.scale_share * o.privacy.epsilon;
  if (gaussian) {
    m.rho = rho_total * (1 - o.scale_share) - centring;
  } else {
    m.epsilon = remainder_after(m.epsilon, m.estimate);
  }
  return less_holdout(m, o);
}

NormQuantileOptions moment_quantile_options(const HeavyTailedOptions& o, double epsilon) {
  NormQuantileOptions nq;
  nq.comm = o.run.comm;  // every rank's records: exact counts, rank 0 draws
  nq.loss = PrivacyLoss::pure(epsilon);
  nq.q = kMomentQuantile;
  return nq;
}

std::optional<std::string> planned_scale_abstention(const HeavyTailedOptions& o, std::int64_t n,
                                                    nlohmann::json& diag) {
  const double eps_s = method_shares(o, 0).estimate;  // the estimate's share: not the centring's
  if (eps_s == 0) return std::nullopt;
  const NormQuantileOptions q = moment_quantile_options(o, eps_s);
  if (q.neighbouring != Neighbouring::replace_one) return std::nullopt;
  const SelectionFacts f = planned_norm_quantile_facts(q, static_cast<double>(n));
  Reliability r = assess(f, fmt::format("the {} quantile of the norms", format_number(q.q)),
                         "moment_bound (--moment-bound)");
  r.estimate = "moment_bound (" + r.estimate + ")";  // as resolve_scale names it
  if (r.usable) return std::nullopt;
  diag["moment_bound"] = {{"estimated", true}, {"status", "insufficient_data"},
                          {"rank_error", f.rank_error}, {"epsilon", eps_s},
                          {"reliability", r.json()}};
  return r.reason();
}

Scale resolve_scale(const ConstMatrixRef& X, const Vector& y, const HeavyTailedOptions& o,
                    double centring, ReleaseBudget& account, Rng& rng) {
  Scale s;
  s.mb.k = o.moment_order;
  s.mb.G_2 = o.moment_bound_2;
  const MethodShares shares = method_shares(o, centring);
  s.epsilon = shares.epsilon;
  s.rho = shares.rho;
  if (shares.estimate == 0) {
    s.mb.G_k = o.moment_bound.value_or(1);
    s.diagnostics["moment_bound"] = {{"value", s.mb.G_k}, {"estimated", false}};
    return s;
  }
  // The scale layer's selection on its log grid over every double (claims its planned entry).
  const double eps_s = shares.estimate;
  std::vector<double> values(static_cast<std::size_t>(X.rows()));
  parallel_ranges(X.rows(), o.run.threads, 4096, [&](int, std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {  // per record: no reduction, any cut
      values[static_cast<std::size_t>(i)] = std::min(
          record_bound(o.loss, o.huber_kappa, X.row(i).norm(), y[i], o.domain_radius),
          std::numeric_limits<double>::max());
    }
  });
  const NormQuantile pb =
      private_value_quantile(values, moment_quantile_options(o, eps_s), account, rng);
  s.mb.G_k = pb.value;
  Reliability r = reliability(pb, "moment_bound");
  r.estimate = "moment_bound (" + r.estimate + ")";
  s.diagnostics["moment_bound"] = pb.diagnostics();
  s.diagnostics["moment_bound"].update(
      {{"value", pb.value}, {"estimated", true}, {"epsilon", eps_s}, {"reliability", r.json()},
       {"rule", fmt::format("private {}-quantile of sup_W |grad f(w; z)| per record (scale layer, "
                            "log grid over every double)", kMomentQuantile)}});
  if (!r.usable) s.abstained = r.reason();
  return s;
}

}  // namespace dpstats::optimize::heavy_tailed_detail
