#include "dpstats/median/geometric_median.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/median/boosting.hpp"
#include "dpstats/median/fast_center.hpp"
#include "dpstats/median/radius.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats {

const char* to_string(MedianMethod m) { return m == MedianMethod::fast ? "fast" : "hsu24"; }
const char* to_string(MedianProfile p) {
  return p == MedianProfile::practical ? "practical" : "paper";
}
const char* to_string(RadiusMethod m) {
  switch (m) {
    case RadiusMethod::fast_radius: return "fast-radius";
    case RadiusMethod::fast_radius_permuted: return "fast-radius-permuted";
    case RadiusMethod::radius_finder: return "radius-finder";
  }
  return "?";
}

namespace {

constexpr double kDefaultReportDelta = 1e-6;

struct Plan {
  double rho_total = 0;  // zCDP budget (zcdp accountant)
  double report_delta = 0;
};

void fill_privacy(Release<Vector>& r, const Budget& b, const Plan& plan) {
  if (b.accountant() == Accountant::basic) {
    const PrivacyLoss s = b.spent_epsilon_delta();
    r.privacy.epsilon = s.epsilon;
    r.privacy.delta = s.delta;
  } else {
    const PrivacyLoss s = b.spent_epsilon_delta(plan.report_delta);
    r.privacy.epsilon = s.epsilon;
    r.privacy.delta = s.delta;
    r.privacy.rho = b.spent().rho;
  }
  r.ledger = b.ledger();
}

// Spends `outer` on the outer (basic) budget and returns a zCDP sub-budget of rho for the step.
Budget sub_budget(Budget& outer, const std::string& purpose, double epsilon, double delta,
                  double* rho) {
  *rho = epsilon_delta_to_zcdp(epsilon, delta);
  LedgerEntry e;
  e.mechanism = "zcdp_composition";
  e.purpose = purpose + fmt::format(" (rho = {:.6g} converted)", *rho);
  e.loss = PrivacyLoss::approximate(epsilon, delta);
  outer.spend(e);
  return Budget(PrivacyLoss::zcdp(*rho), Accountant::zcdp);
}

Release<Vector> practical(const ConstMatrixRef& X, const GeometricMedianOptions& o, double r_min,
                          Budget& budget, const Plan& plan, Rng& rng, Release<Vector> r) {
  const double rho = plan.rho_total;
  const double rho_r = rho * o.radius_share;
  const double eps_r = std::sqrt(2 * rho_r) * (1 - 1e-12);  // ε²/2 ≤ ρ_r despite rounding
  const double rho_loc = rho * o.localization_share;
  const double rho_b = remainder_after(remainder_after(rho, rho_r), rho_loc) * (1 - 1e-9);
  // 1. radius
  budget.spend(permuted_radius_ledger(eps_r));
  PermutedRadiusOptions po;
  po.subsample = o.subsample;
  const RadiusResult rad = fast_radius_permuted(X, r_min, o.radius, eps_r, rng, po);
  // 2. localization
  GeometricLocalizationOptions lo;
  lo.rho = rho_loc;
  lo.subsample = o.subsample;
  lo.noise = o.noise;
  const Vector c = geometric_localize(X, o.radius, rad.r_hat, lo, budget, rng);
  // 3. boosting
  DpgdOptions go;
  go.rho = rho_b;
  go.steps = o.dpgd_steps;
  go.radius = rad.r_hat;
  go.eta = rad.r_hat / std::sqrt(static_cast<double>(o.dpgd_steps));
  go.average = false;
  go.noise = o.noise;
  go.weiszfeld_step = o.weiszfeld_step;
  r.estimate = dpgd(X, c, go, budget, rng);
  r.diagnostics["r_hat"] = rad.r_hat;
  r.diagnostics["radius_step"] = rad.step;
  r.diagnostics["radius_fell_back"] = rad.fell_back;
  r.diagnostics["budget_shares"] = {{"radius", o.radius_share},
                                    {"localization", o.localization_share},
                                    {"boosting", 1 - o.radius_share - o.localization_share}};
  r.diagnostics["boosting"] = o.weiszfeld_step ? "dpgd-weiszfeld-step" : "dpgd";
  r.diagnostics["boosting_steps"] = o.dpgd_steps;
  r.diagnostics["passes"] = o.dpgd_steps;
  return r;
}

Release<Vector> paper(const ConstMatrixRef& X, const GeometricMedianOptions& o, double r_min,
                      Budget& budget, Rng& rng, Release<Vector> r) {
  const double eps = *o.epsilon, delta = *o.delta;
  const auto n = static_cast<std::int64_t>(X.rows());
  // 1. FastRadius (Alg. 2) at (ε/4, δ/4).
  budget.spend(fast_radius_ledger(eps / 4, delta / 4));
  const RadiusResult rad = fast_radius(X, r_min, o.radius, eps / 4, delta / 4, rng);
  // 2. The centre at (ε/4, δ/4): HSU24 localization (card §4.1(a)) or FastCenter (Alg. 3).
  double rho_loc = 0;
  Vector c;
  // Boosting domain after the HSU24 localization: B(c, r̂), the domain of the paper's §5.2
  // experiments and of the addendum's measured card pipeline. (4r̂ was measured too: its 4× larger
  // η makes FixedOrder's output noise 4× larger; docs/results/geometric-median.md.)
  double rad1 = rad.r_hat;
  if (o.center == PaperCenter::fast_center) {
    const double r_c = o.center_radius_multiplier * rad.r_hat;
    LedgerEntry e;
    e.mechanism = "fast_center";
    e.purpose = "fast_center (KLTY Alg. 3)";
    e.loss = PrivacyLoss::approximate(eps / 4, delta / 4);
    budget.spend(e);
    const FastCenterResult fc = fast_center(X, r_c, eps / 4, delta / 4, rng);
    r.privacy.certified = false;  // fast_center.hpp: no written proof covers the lattice version
    r.diagnostics["center_failed"] = fc.failed;
    if (fc.failed) {  // card §2.4: the failure flag is a DP output; fall back to B(0, R)
      c = Vector::Zero(X.cols());
      rad1 = o.radius;
    } else {
      c = fc.centre;
      rad1 = 3 * r_c + 3 * fc.sigma * std::sqrt(static_cast<double>(X.cols()) * std::log(16 / delta));
    }
  } else {
    Budget loc_budget = sub_budget(budget, "hsu24 localization", eps / 4, delta / 4, &rho_loc);
    HsuLocalizationOptions lo;
    lo.rho = rho_loc;
    lo.inner_steps = o.localization_steps;
    lo.noise = o.noise;
    c = hsu24_localize(X, o.radius, rad.r_hat, lo, loc_budget, rng);
  }
  // 3. phased DP-SGD at (ε/2, δ/2) on B(c, rad1).
  PhasedSgdOptions so;
  so.K = K_for_passes(o.passes, n);
  const double T = std::ldexp(1.0, so.K) - 1;
  so.radius = rad1;
  so.delta = delta / 2;
  so.noise = o.noise;
  PhasedSgdResult out;
  if (o.boosting == PaperBoosting::fixed_order) {
    double rho_b = 0;
    Budget b = sub_budget(budget, "fixed-order dpsgd", eps / 2, delta / 2, &rho_b);
    so.fixed_order = true;
    so.rho = rho_b;
    so.eta = o.eta_multiplier.value_or(0.3) * rad1 / std::sqrt(T);
    out = phased_dpsgd(X, c, so, b, rng);
  } else {
    so.fixed_order = false;
    so.rho = eps * eps / (32 * std::log(4 / delta));  // Thm 4
    so.eta = o.eta_multiplier.value_or(0.1) * rad1 / std::sqrt(T);
    out = phased_dpsgd(X, c, so, budget, rng);  // spends Lemma 12's (ε', δ/2), ε' ≤ ε/2
  }
  r.estimate = out.x;
  r.diagnostics["r_hat"] = rad.r_hat;
  r.diagnostics["radius_step"] = rad.step;
  r.diagnostics["radius_fell_back"] = rad.fell_back;
  r.diagnostics["boosting"] = o.boosting == PaperBoosting::fixed_order ? "fixed-order-dpsgd"
                                                                       : "stable-dpsgd";
  r.diagnostics["boosting_steps"] = out.T;
  r.diagnostics["passes"] = static_cast<double>(out.T) / static_cast<double>(n);
  r.diagnostics["boosting_rho"] = so.rho;
  r.diagnostics["center"] = o.center == PaperCenter::fast_center ? "fast-center" : "hsu24-localization";
  r.diagnostics["boosting_radius"] = rad1;
  return r;
}

Release<Vector> hsu24(const ConstMatrixRef& X, const GeometricMedianOptions& o, double r_min,
                      Budget& budget, const Plan& plan, Rng& rng, Release<Vector> r) {
  const double rho = plan.rho_total;
  const auto n = static_cast<double>(X.rows());
  const auto d = static_cast<double>(X.cols());
  const double eps_rf = std::sqrt(2 * (rho / 4)) * (1 - 1e-12);
  budget.spend(radius_finder_ledger(eps_rf));
  const RadiusResult rad = radius_finder(X, r_min, o.radius, eps_rf, 0.05, rng);
  HsuLocalizationOptions lo;
  lo.rho = rho / 4;
  lo.inner_steps = o.localization_steps;
  lo.noise = o.noise;
  const Vector c = hsu24_localize(X, o.radius, rad.r_hat, lo, budget, rng);
  DpgdOptions go;
  go.rho = remainder_after(remainder_after(rho, rho / 4), rho / 4) * (1 - 1e-9);
  go.steps = std::max(1, static_cast<int>(std::floor(n * n * rho / (256 * d))));
  go.radius = 25 * rad.r_hat;
  go.eta = 50 * rad.r_hat * std::sqrt(d / (6 * rho * n * n));
  go.noise = o.noise;
  r.estimate = dpgd(X, c, go, budget, rng);
  r.diagnostics["r_hat"] = rad.r_hat;
  r.diagnostics["radius_step"] = rad.step;
  r.diagnostics["radius_fell_back"] = rad.fell_back;
  r.diagnostics["boosting"] = o.weiszfeld_step ? "dpgd-weiszfeld-step" : "dpgd";
  r.diagnostics["boosting_steps"] = go.steps;
  r.diagnostics["passes"] = go.steps;
  return r;
}

}  // namespace

Release<Vector> geometric_median(const ConstMatrixRef& X, const GeometricMedianOptions& o,
                                 Rng& rng) {
  check_positive(o.radius, "radius");
  if (o.min_radius) check_positive(*o.min_radius, "min_radius");
  const double r_min = o.min_radius.value_or(std::ldexp(o.radius, -20));
  require(o.rho.has_value() != o.epsilon.has_value(),
          "give either epsilon (with delta) or rho, not both and not neither");
  if (o.epsilon) {
    check_epsilon(*o.epsilon);
    require(o.delta.has_value(), "delta must be given with epsilon");
    check_delta_positive(*o.delta);
  } else {
    check_positive(*o.rho, "rho");
    if (o.delta) check_delta_positive(*o.delta);
  }
  require(o.radius_share > 0 && o.localization_share > 0 &&
              o.radius_share + o.localization_share < 1,
          "radius_share and localization_share must be > 0 with a sum below 1");
  require(o.dpgd_steps >= 1 && o.dpgd_steps <= 100000, "dpgd_steps must be in [1, 100000]");
  require(o.subsample >= 1, "subsample must be >= 1");
  require(o.localization_steps >= 1, "localization_steps must be >= 1");
  require(o.passes > 0 && o.passes <= 1000, "passes must be in (0, 1000]");
  if (o.eta_multiplier) check_positive(*o.eta_multiplier, "eta_multiplier");
  check_positive(o.center_radius_multiplier, "center_radius_multiplier");
  check_data(X);

  Release<Vector> r;
  r.seeded = rng.seeded();
  r.noise = o.noise;
  r.privacy.certified = o.noise == NoiseMode::secure;
  r.diagnostics["method"] = to_string(o.method);
  r.diagnostics["profile"] = to_string(o.profile);
  r.diagnostics["min_radius"] = r_min;
  r.diagnostics["radius"] = o.radius;

  if (o.method == MedianMethod::fast && o.profile == MedianProfile::paper) {
    require(o.epsilon.has_value(), "the paper profile needs epsilon and delta (KLTY Thm 4)");
    Budget budget(PrivacyLoss::approximate(*o.epsilon, *o.delta), Accountant::basic);
    r = paper(X, o, r_min, budget, rng, std::move(r));
    fill_privacy(r, budget, {});
    return r;
  }
  Plan plan;
  std::optional<Budget> budget;
  if (o.epsilon) {
    plan.rho_total = epsilon_delta_to_zcdp(*o.epsilon, *o.delta);
    plan.report_delta = *o.delta;
    budget.emplace(PrivacyLoss::approximate(*o.epsilon, *o.delta), Accountant::zcdp);
  } else {
    plan.rho_total = *o.rho;
    plan.report_delta = o.delta.value_or(kDefaultReportDelta);
    budget.emplace(PrivacyLoss::zcdp(*o.rho), Accountant::zcdp);
  }
  r = o.method == MedianMethod::fast ? practical(X, o, r_min, *budget, plan, rng, std::move(r))
                                     : hsu24(X, o, r_min, *budget, plan, rng, std::move(r));
  fill_privacy(r, *budget, plan);
  return r;
}

Release<double> quantile_radius_release(const ConstMatrixRef& X, const QuantileRadiusOptions& o,
                                        Rng& rng) {
  check_data(X);
  check_positive(o.min_radius, "min_radius");
  check_positive(o.radius, "radius");
  check_epsilon(o.epsilon);
  Release<double> r;
  r.seeded = rng.seeded();
  RadiusResult res;
  switch (o.method) {
    case RadiusMethod::fast_radius:
      check_delta_positive(o.delta);
      res = fast_radius(X, o.min_radius, o.radius, o.epsilon, o.delta, rng);
      break;
    case RadiusMethod::fast_radius_permuted:
      res = fast_radius_permuted(X, o.min_radius, o.radius, o.epsilon, rng);
      break;
    case RadiusMethod::radius_finder:
      res = radius_finder(X, o.min_radius, o.radius, o.epsilon, o.beta, rng);
      break;
  }
  r.estimate = res.r_hat;
  r.privacy.epsilon = res.ledger.loss.epsilon;
  r.privacy.delta = res.ledger.loss.delta;
  r.ledger = {res.ledger};
  r.diagnostics["method"] = to_string(o.method);
  r.diagnostics["step"] = res.step;
  r.diagnostics["fell_back"] = res.fell_back;
  r.diagnostics["grid_size"] = res.grid_size;
  r.diagnostics["distance_evaluations"] = res.distance_evaluations;
  return r;
}

}  // namespace dpstats
