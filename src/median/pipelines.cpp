// The three geometric-median pipelines, each stage charged on the release's account before it
// draws noise (docs/proofs/median.md §2–§6 for the stages' privacy).
#include <fmt/format.h>

#include <cmath>

#include "dpstats/median/boosting.hpp"
#include "dpstats/median/fast_center.hpp"
#include "dpstats/median/radius.hpp"
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

// A zCDP stage inside the paper profile's basic composition: (epsilon, delta) charged on the
// release, converted to the largest rho it covers for the stage's own zcdp Budget (the CKS20
// conversion is a theorem about the composed rho, docs/proofs/median.md §6).
LedgerEntry converted_stage_entry(const std::string& purpose, double epsilon, double delta,
                                  double rho) {
  LedgerEntry e;
  e.mechanism = "zcdp_composition";
  e.purpose = purpose + fmt::format(" (rho = {:.6g} converted)", rho);
  e.loss = PrivacyLoss::approximate(epsilon, delta);
  return e;
}

}  // namespace

PipelineOutput run_practical(const ConstMatrixRef& X, const GeometricMedianOptions& o, double R,
                             const MedianPlan& plan, ReleaseBudget& account, Rng& rng,
                             const RowShard& shard) {
  const double rho = plan.rho_main;
  const double rho_r = rho * o.radius_share;
  const double eps_r = std::sqrt(2 * rho_r) * (1 - 1e-12);  // ε²/2 ≤ ρ_r despite rounding
  const double rho_loc = rho * o.localization_share;
  const double rho_b = remainder_after(remainder_after(rho, rho_r), rho_loc) * (1 - 1e-9);
  const std::int64_t n = total_rows(X, shard), d = static_cast<std::int64_t>(X.cols());
  // 1. radius
  account.charge(permuted_radius_ledger(eps_r));
  PermutedRadiusOptions po;
  po.subsample = o.subsample;
  po.threads = o.run.threads;
  po.shard = shard;
  const RadiusResult rad = fast_radius_permuted(X, r_min_of(o, R), R, eps_r, rng, po);
  // 2. localization
  GeometricLocalizationOptions lo;
  lo.rho = rho_loc;
  lo.subsample = o.subsample;
  lo.noise = o.run.noise;
  lo.threads = o.run.threads;
  lo.shard = shard;
  const Vector c = run_charged(account, geometric_localize_entries(n, d, R, rad.r_hat, lo),
                               [&](Budget& b) { return geometric_localize(X, R, rad.r_hat, lo, b, rng); });
  // 3. boosting
  DpgdOptions go;
  go.rho = rho_b;
  go.steps = o.dpgd_steps;
  go.radius = rad.r_hat;
  go.eta = rad.r_hat / std::sqrt(static_cast<double>(o.dpgd_steps));
  go.average = false;
  go.noise = o.run.noise;
  go.threads = o.run.threads;
  go.shard = shard;
  go.weiszfeld_step = o.weiszfeld_step;
  PipelineOutput out;
  out.estimate = run_charged(account, dpgd_entries(n, d, go),
                             [&](Budget& b) { return dpgd(X, c, go, b, rng); });
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
    account.charge(fast_center_entry(X.rows(), X.cols(), R, r_c, eps / 4, delta / 4));
    const FastCenterResult fc = fast_center(X, R, r_c, eps / 4, delta / 4, rng);
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
  account.charge(converted_stage_entry("hsu24 localization", eps / 4, delta / 4, rho_loc));
  Budget loc_budget(PrivacyLoss::zcdp(rho_loc), Accountant::zcdp);
  HsuLocalizationOptions lo;
  lo.rho = rho_loc;
  lo.inner_steps = o.localization_steps;
  lo.noise = o.run.noise;
  lo.threads = o.run.threads;
  out.c = hsu24_localize(X, R, r_hat, lo, loc_budget, rng);
  return out;
}

}  // namespace

PipelineOutput run_paper(const ConstMatrixRef& X, const GeometricMedianOptions& o, double R,
                         const MedianPlan& plan, ReleaseBudget& account, Rng& rng) {
  const double eps = plan.epsilon_main, delta = o.privacy.delta;
  const auto n = static_cast<std::int64_t>(X.rows());
  // 1. FastRadius (Alg. 2) at (ε/4, δ/4).
  account.charge(fast_radius_ledger(eps / 4, delta / 4));
  const RadiusResult rad = fast_radius(X, r_min_of(o, R), R, eps / 4, delta / 4, rng, o.run.threads);
  // 2. The centre at (ε/4, δ/4).
  const Centre centre = paper_centre(X, o, R, rad.r_hat, eps, delta, account, rng);
  // 3. phased DP-SGD at (ε/2, δ/2) on B(c, rad1).
  PhasedSgdOptions so;
  so.K = K_for_passes(o.passes, n);
  const double T = std::ldexp(1.0, so.K) - 1;
  so.radius = centre.boosting_radius;
  so.delta = delta / 2;
  so.noise = o.run.noise;
  so.fixed_order = o.boosting == PaperBoosting::fixed_order;
  PhasedSgdResult res;
  if (so.fixed_order) {
    so.rho = epsilon_delta_to_zcdp(eps / 2, delta / 2);
    so.eta = o.eta_multiplier.value_or(0.3) * so.radius / std::sqrt(T);
    account.charge(converted_stage_entry("fixed-order dpsgd", eps / 2, delta / 2, so.rho));
    Budget b(PrivacyLoss::zcdp(so.rho), Accountant::zcdp);
    res = phased_dpsgd(X, centre.c, so, b, rng);
  } else {
    so.rho = eps * eps / (32 * std::log(4 / delta));  // Thm 4: Lemma 12's ε' ≤ ε/2
    so.eta = o.eta_multiplier.value_or(0.1) * so.radius / std::sqrt(T);
    res = run_charged(account, {stable_dpsgd_entry(so.rho, so.delta)},
                      [&](Budget& b) { return phased_dpsgd(X, centre.c, so, b, rng); });
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
  const double rho = plan.rho_main;
  const std::int64_t n = total_rows(X, shard), d = static_cast<std::int64_t>(X.cols());
  const auto nn = static_cast<double>(n), dd = static_cast<double>(d);
  const double eps_rf = std::sqrt(2 * (rho / 4)) * (1 - 1e-12);
  account.charge(radius_finder_ledger(eps_rf));
  const RadiusResult rad = radius_finder(X, r_min_of(o, R), R, eps_rf, 0.05, rng, 0.75,
                                          o.run.threads, shard);
  HsuLocalizationOptions lo;
  lo.rho = rho / 4;
  lo.inner_steps = o.localization_steps;
  lo.noise = o.run.noise;
  lo.threads = o.run.threads;
  lo.shard = shard;
  const Vector c = run_charged(account, hsu24_localize_entries(n, d, R, rad.r_hat, lo),
                               [&](Budget& b) { return hsu24_localize(X, R, rad.r_hat, lo, b, rng); });
  DpgdOptions go;
  go.rho = remainder_after(remainder_after(rho, rho / 4), rho / 4) * (1 - 1e-9);
  go.steps = std::max(1, static_cast<int>(std::floor(nn * nn * rho / (256 * dd))));
  go.radius = 25 * rad.r_hat;
  go.eta = 50 * rad.r_hat * std::sqrt(dd / (6 * rho * nn * nn));
  go.noise = o.run.noise;
  go.threads = o.run.threads;
  go.shard = shard;
  PipelineOutput out;
  out.estimate = run_charged(account, dpgd_entries(n, d, go),
                             [&](Budget& b) { return dpgd(X, c, go, b, rng); });
  radius_diagnostics(out.diagnostics, rad);
  out.diagnostics["boosting"] = "dpgd";
  out.diagnostics["boosting_steps"] = go.steps;
  out.diagnostics["passes"] = go.steps;
  return out;
}

}  // namespace dpstats::median_detail
