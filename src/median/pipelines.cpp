// The three geometric-median pipelines. Their entries are planned with the release (the stages'
// shares are public), charged before any noise, and each stage claims its planned entries with
// its mechanisms' own (docs/proofs/median.md §0, §2–§6 for the stages' privacy).
#include <fmt/format.h>

#include <cmath>

#include "dpstats/median/boosting.hpp"
#include "dpstats/median/fast_center.hpp"
#include "dpstats/median/radius.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "pipeline.hpp"

namespace dpstats::median_detail {
namespace {

double r_min_of(const GeometricMedianOptions& o, double R) {
  return o.min_radius.value_or(std::ldexp(R, -20));
}

void radius_diagnostics(nlohmann::json& d, const RadiusResult& rad) {
  d["r_hat"] = rad.r_hat;
  d["radius_step"] = rad.step;
  d["radius_fell_back"] = rad.fell_back;
}

// The practical profile's shares of the pipeline's rho: the radius (pure epsilon with
// epsilon^2/2 <= its share despite rounding), the localization, the boosting.
struct PracticalShares {
  double eps_r = 0, rho_loc = 0, rho_b = 0;
};

PracticalShares practical_shares(const GeometricMedianOptions& o, const MedianPlan& plan) {
  const double rho = plan.rho_main;
  const double rho_r = rho * o.radius_share;
  PracticalShares s;
  s.eps_r = std::sqrt(2 * rho_r) * (1 - 1e-12);
  s.rho_loc = rho * o.localization_share;
  s.rho_b = remainder_after(remainder_after(rho, rho_r), s.rho_loc) * (1 - 1e-9);
  return s;
}

// HSU24's: a quarter of rho for RadiusFinder (as pure epsilon), a quarter for the localization,
// the rest for the DP-GD fine-tuning.
struct HsuShares {
  double eps_rf = 0, rho_loc = 0, rho_gd = 0;
};

HsuShares hsu24_shares(const MedianPlan& plan) {
  const double rho = plan.rho_main;
  return {std::sqrt(2 * (rho / 4)) * (1 - 1e-12), rho / 4,
          remainder_after(remainder_after(rho, rho / 4), rho / 4) * (1 - 1e-9)};
}

int hsu24_gd_steps(std::int64_t n, std::int64_t d, double rho) {
  const auto nn = static_cast<double>(n), dd = static_cast<double>(d);
  return std::max(1, static_cast<int>(std::floor(nn * nn * rho / (256 * dd))));
}

const char* const kLocalization = "localization: DP-GD rounds on the released radius";
const char* const kBoosting = "boosting: DP-GD from the localized centre";

}  // namespace

Ledger practical_entries(const GeometricMedianOptions& o, const MedianPlan& plan) {
  const PracticalShares s = practical_shares(o, plan);
  return {permuted_radius_ledger(s.eps_r),
          stage_entry(PrivacyLoss::zcdp(s.rho_loc), "geometric " + std::string(kLocalization)),
          stage_entry(PrivacyLoss::zcdp(s.rho_b), kBoosting)};
}

Ledger hsu24_entries(const MedianPlan& plan) {
  const HsuShares s = hsu24_shares(plan);
  return {radius_finder_ledger(s.eps_rf),
          stage_entry(PrivacyLoss::zcdp(s.rho_loc), "hsu24 " + std::string(kLocalization)),
          stage_entry(PrivacyLoss::zcdp(s.rho_gd), kBoosting)};
}

PipelineOutput run_practical(const ConstMatrixRef& X, const GeometricMedianOptions& o, double R,
                             const MedianPlan& plan, ReleaseBudget& account, Rng& rng,
                             const RowShard& shard) {
  const PracticalShares s = practical_shares(o, plan);
  const Ledger planned = practical_entries(o, plan);
  // 1. radius (its entry was final at plan time)
  PermutedRadiusOptions po;
  po.subsample = o.subsample;
  po.threads = o.run.threads;
  po.shard = shard;
  const RadiusResult rad = fast_radius_permuted(X, r_min_of(o, R), R, s.eps_r, rng, po);
  // 2. localization
  GeometricLocalizationOptions lo;
  lo.rho = s.rho_loc;
  lo.subsample = o.subsample;
  lo.noise = o.run.noise;
  lo.threads = o.run.threads;
  lo.shard = shard;
  const Vector c = run_stage(account, planned[1], [&](Budget& b) {
    return geometric_localize(X, R, rad.r_hat, lo, b, rng);
  });
  // 3. boosting
  DpgdOptions go;
  go.rho = s.rho_b;
  go.steps = o.dpgd_steps;
  go.radius = rad.r_hat;
  go.eta = rad.r_hat / std::sqrt(static_cast<double>(o.dpgd_steps));
  go.average = false;
  go.noise = o.run.noise;
  go.threads = o.run.threads;
  go.shard = shard;
  go.weiszfeld_step = o.weiszfeld_step;
  PipelineOutput out;
  out.estimate = run_stage(account, planned[2], [&](Budget& b) { return dpgd(X, c, go, b, rng); });
  radius_diagnostics(out.diagnostics, rad);
  out.diagnostics["localization_at_boundary"] = c.norm() >= R * (1 - 1e-6);
  out.diagnostics["budget_shares"] = {{"radius", o.radius_share},
                                      {"localization", o.localization_share},
                                      {"boosting", 1 - o.radius_share - o.localization_share}};
  out.diagnostics["boosting"] = o.weiszfeld_step ? "dpgd-weiszfeld-step" : "dpgd";
  out.diagnostics["boosting_steps"] = o.dpgd_steps;
  out.diagnostics["passes"] = o.dpgd_steps;
  return out;
}

namespace {

struct Centre {
  Vector c;
  double boosting_radius = 0;
  bool certified = true;
  nlohmann::json diagnostics = nlohmann::json::object();
};

// The paper profile's boosting: Stable (Lemma 12 at rho = eps^2 / (32 ln(4/delta)), whose epsilon
// is at most eps/2) or fixed-order (a zCDP stage at (eps/2, delta/2)).
PhasedSgdOptions paper_boosting(const GeometricMedianOptions& o, double eps, double delta,
                                std::int64_t n) {
  PhasedSgdOptions so;
  so.K = K_for_passes(o.passes, n);
  so.delta = delta / 2;
  so.noise = o.run.noise;
  so.fixed_order = o.boosting == PaperBoosting::fixed_order;
  so.rho = so.fixed_order ? epsilon_delta_to_zcdp(eps / 2, delta / 2)
                          : eps * eps / (32 * std::log(4 / delta));
  return so;
}

const char* const kPaperLocalization = "hsu24 localization";
const char* const kFixedOrder = "fixed-order dpsgd";

// The paper profile's centre at (ε/4, δ/4): HSU24 localization (default) or the certified
// FastCenter (Alg. 3, fast_center.hpp) on the rows projected onto B(0, R).
Centre paper_centre(const ConstMatrixRef& X, const GeometricMedianOptions& o, double R,
                    double r_hat, double eps, double delta, ReleaseBudget& account, Rng& rng) {
  Centre out;
  // Boosting domain after the HSU24 localization: B(c, r̂), the domain of the paper's §5.2
  // experiments (docs/results/geometric-median.md).
  out.boosting_radius = r_hat;
  if (o.center == PaperCenter::fast_center) {
    const double r_c = o.center_radius_multiplier * r_hat;
    const FastCenterResult fc = fast_center(X, R, r_c, eps / 4, delta / 4, rng);
    account.claim(fc.ledger);
    out.diagnostics["center_failed"] = fc.failed;
    out.diagnostics["center_partners"] = fc.k;
    if (fc.failed) {  // the failure flag is a DP output; fall back to B(0, R)
      out.c = Vector::Zero(X.cols());
      out.boosting_radius = R;
    } else {
      out.c = fc.centre;
      out.boosting_radius =
          3 * r_c + 3 * fc.sigma * std::sqrt(static_cast<double>(X.cols()) * std::log(16 / delta));
    }
    return out;
  }
  const double rho_loc = epsilon_delta_to_zcdp(eps / 4, delta / 4);
  Budget loc_budget(PrivacyLoss::zcdp(rho_loc), Accountant::zcdp);
  HsuLocalizationOptions lo;
  lo.rho = rho_loc;
  lo.inner_steps = o.localization_steps;
  lo.noise = o.run.noise;
  lo.threads = o.run.threads;
  out.c = hsu24_localize(X, R, r_hat, lo, loc_budget, rng);
  account.claim(zcdp_stage_entry(eps / 4, delta / 4, kPaperLocalization, loc_budget.ledger()));
  return out;
}

}  // namespace

// FastCenter's entry depends on R and r̂ only through its sensitivity (not its loss): the plan
// charges its (ε/4, δ/4), which the run's entry claims.
Ledger paper_entries(const GeometricMedianOptions& o, const MedianPlan& plan, std::int64_t n) {
  const double eps = plan.epsilon_main, delta = o.privacy.delta;
  const PhasedSgdOptions so = paper_boosting(o, eps, delta, n);
  Ledger l = {fast_radius_ledger(eps / 4, delta / 4)};
  if (o.center == PaperCenter::fast_center) {
    l.push_back(fast_center_entry(eps / 4, delta / 4));
  } else {
    l.push_back(zcdp_stage_entry(eps / 4, delta / 4, kPaperLocalization));
  }
  l.push_back(so.fixed_order ? zcdp_stage_entry(eps / 2, delta / 2, kFixedOrder)
                             : stable_dpsgd_entry(so.rho, so.delta));
  return l;
}

PipelineOutput run_paper(const ConstMatrixRef& X, const GeometricMedianOptions& o, double R,
                         const MedianPlan& plan, ReleaseBudget& account, Rng& rng) {
  const double eps = plan.epsilon_main, delta = o.privacy.delta;
  const auto n = static_cast<std::int64_t>(X.rows());
  // 1. FastRadius (Alg. 2) at (ε/4, δ/4).
  const RadiusResult rad = fast_radius(X, r_min_of(o, R), R, eps / 4, delta / 4, rng, o.run.threads);
  // 2. The centre at (ε/4, δ/4).
  const Centre centre = paper_centre(X, o, R, rad.r_hat, eps, delta, account, rng);
  // 3. phased DP-SGD at (ε/2, δ/2) on B(c, rad1).
  PhasedSgdOptions so = paper_boosting(o, eps, delta, n);
  const double T = std::ldexp(1.0, so.K) - 1;
  so.radius = centre.boosting_radius;
  so.eta = o.eta_multiplier.value_or(so.fixed_order ? 0.3 : 0.1) * so.radius / std::sqrt(T);
  PhasedSgdResult res;
  if (so.fixed_order) {
    Budget b(PrivacyLoss::zcdp(so.rho), Accountant::zcdp);
    res = phased_dpsgd(X, centre.c, so, b, rng);
    account.claim(zcdp_stage_entry(eps / 2, delta / 2, kFixedOrder, b.ledger()));
  } else {
    Budget b(stable_dpsgd_entry(so.rho, so.delta).loss, Accountant::basic);
    res = phased_dpsgd(X, centre.c, so, b, rng);
    account.claim(stable_dpsgd_entry(so.rho, so.delta, res.entries));
  }
  PipelineOutput out;
  out.estimate = res.x;
  out.certified = centre.certified;
  out.diagnostics = centre.diagnostics;
  radius_diagnostics(out.diagnostics, rad);
  out.diagnostics["boosting"] = so.fixed_order ? "fixed-order-dpsgd" : "stable-dpsgd";
  out.diagnostics["boosting_steps"] = res.T;
  out.diagnostics["passes"] = static_cast<double>(res.T) / static_cast<double>(n);
  out.diagnostics["boosting_rho"] = so.rho;
  out.diagnostics["center"] = name_of(o.center);
  out.diagnostics["boosting_radius"] = so.radius;
  return out;
}

PipelineOutput run_hsu24(const ConstMatrixRef& X, const GeometricMedianOptions& o, double R,
                         const MedianPlan& plan, ReleaseBudget& account, Rng& rng,
                         const RowShard& shard) {
  const std::int64_t n = total_rows(X, shard), d = static_cast<std::int64_t>(X.cols());
  const HsuShares s = hsu24_shares(plan);
  const Ledger planned = hsu24_entries(plan);
  const RadiusResult rad = radius_finder(X, r_min_of(o, R), R, s.eps_rf, 0.05, rng, 0.75,
                                          o.run.threads, shard);
  HsuLocalizationOptions lo;
  lo.rho = s.rho_loc;
  lo.inner_steps = o.localization_steps;
  lo.noise = o.run.noise;
  lo.threads = o.run.threads;
  lo.shard = shard;
  const Vector c = run_stage(account, planned[1], [&](Budget& b) {
    return hsu24_localize(X, R, rad.r_hat, lo, b, rng);
  });
  const auto nn = static_cast<double>(n), dd = static_cast<double>(d);
  const double rho = plan.rho_main;
  DpgdOptions go;
  go.rho = s.rho_gd;
  go.steps = hsu24_gd_steps(n, d, rho);
  go.radius = 25 * rad.r_hat;
  go.eta = 50 * rad.r_hat * std::sqrt(dd / (6 * rho * nn * nn));
  go.noise = o.run.noise;
  go.threads = o.run.threads;
  go.shard = shard;
  PipelineOutput out;
  out.estimate = run_stage(account, planned[2], [&](Budget& b) { return dpgd(X, c, go, b, rng); });
  radius_diagnostics(out.diagnostics, rad);
  out.diagnostics["boosting"] = "dpgd";
  out.diagnostics["boosting_steps"] = go.steps;
  out.diagnostics["passes"] = go.steps;
  return out;
}

}  // namespace dpstats::median_detail
