// The geometric-median driver: validate -> plan -> charge -> run -> seal (dpstats/seam.hpp).
#include "dpstats/median/geometric_median.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/error.hpp"
#include "dpstats/median/median_command.hpp"
#include "dpstats/median/radius.hpp"
#include "dpstats/option_fields.hpp"
#include "dpstats/options.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/scale/share.hpp"
#include "dpstats/seam.hpp"
#include "pipeline.hpp"

namespace dpstats {

namespace {

// The median's methods: the shared options each reads named here, its own from their
// declarations' `methods` (options.hpp).
const std::array<MethodInfo, 3>& median_registry() {
  static const std::array<MethodInfo, 3> methods{{
      declared_method("median", "fast",
                      "KLTY's pipeline: private radius, localization and boosting (profile "
                      "practical or paper)",
                      {"epsilon", "delta", "scale_share", "profile", "seed", "budget"}),
      declared_method("median", "hsu24",
                      "the HSU24 baseline: RadiusFinder, localization, DP-GD fine-tuning "
                      "(O(n^2 d))",
                      {"epsilon", "delta", "scale_share", "seed", "budget"}),
      declared_method("median", "weiszfeld", "the non-private solver (no privacy; a reference)",
                      {}),
  }};
  return methods;
}

const std::array<MethodInfo, 3> kQuantileRadiusMethods{{
    {"fast-radius", "KLTY Alg. 2 ((epsilon, delta)-DP)",
     {"epsilon", "delta", "min_radius", "domain_radius", "seed"}},
    {"fast-radius-permuted", "the permutation design (pure epsilon-DP)",
     {"epsilon", "min_radius", "domain_radius", "seed"}},
    {"radius-finder", "HSU24 RadiusFinder (pure epsilon-DP, O(n^2 d))",
     {"epsilon", "min_radius", "domain_radius", "beta", "seed"}},
}};

void check_share(double share, double lo, bool lo_open, double hi, bool hi_open,
                 std::string_view name) {
  const bool ok = (lo_open ? share > lo : share >= lo) && (hi_open ? share < hi : share <= hi);
  require(ok, fmt::format("{} must be in {}{}, {}{}, got {}", name, lo_open ? "(" : "[", lo, hi,
                          hi_open ? ")" : "]", format_number(share)));
}

// Every option, strings included, before any data is read or noise drawn.
void validate(const ConstMatrixRef& X, const GeometricMedianOptions& o, const GeometricMedianTrace* trace) {
  validate(o.privacy, DeltaRule::positive);
  validate(o.run);
  require(!(trace && trace->noiseless), "noiseless is not supported by the geometric median");
  if (o.domain_radius) {
    // Beyond 1e300 the squared distances and the noise of the radius step overflow a double.
    require(*o.domain_radius > 0 && *o.domain_radius <= 1e300,
            "domain_radius must be in (0, 1e300], got {}", format_number(*o.domain_radius));
  }
  if (o.scale_share) check_share(*o.scale_share, 0, true, 0.5, false, "scale_share");
  check_share(o.bound_check_share, 0, false, 0.5, true, "bound_check_share");
  if (o.min_radius) check_positive(*o.min_radius, "min_radius");
  require(o.radius_share > 0 && o.localization_share > 0 &&
              o.radius_share + o.localization_share < 1,
          "radius_share and localization_share must be > 0 with a sum below 1");
  require(o.dpgd_steps >= 1 && o.dpgd_steps <= 100000, "dpgd_steps must be in [1, 100000]");
  require(o.subsample >= 1, "subsample must be >= 1");
  require(o.localization_steps >= 1, "localization_steps must be >= 1");
  require(o.passes > 0 && o.passes <= 1000, "passes must be in (0, 1000]");
  if (o.eta_multiplier) check_positive(*o.eta_multiplier, "eta_multiplier");
  check_positive(o.center_radius_multiplier, "center_radius_multiplier");
  require(o.center == PaperCenter::hsu24_localization ||
              (o.method == MedianMethod::fast && o.profile == Profile::paper),
          "center = fast-center applies to method fast with profile paper only");
  check_data(X);
}

nlohmann::json plan_diagnostics(const GeometricMedianOptions& o, const median_detail::DomainRadius& dr,
                                double r_min) {
  nlohmann::json d = dr.diagnostics;
  d["method"] = name_of(o.method);
  d["profile"] = name_of(o.profile);
  d["domain_radius"] = dr.R;
  d["min_radius"] = r_min;
  return d;
}

// Several ranks (issue 18): method fast with profile practical, and method hsu24, are
// distributed, with a given domain_radius or its private estimate (the scale layer's selections
// count over every rank). The paper profile is refused, with the reason, before any collective
// (every rank has the same options, so every rank refuses). Then every rank checks the
// parameters and the column count against rank 0's and learns its global row offset.
RowShard distributed_shard(const ConstMatrixRef& X, const GeometricMedianOptions& o) {
  Communicator* comm = o.run.comm;
  if (!comm || comm->size() == 1) return {};
  require(o.method == MedianMethod::hsu24 || o.profile == Profile::practical,
          "the geometric median on several ranks runs method fast with profile practical, or "
          "method hsu24: the paper profile's FastRadius (Alg. 2) draws each row's partners from "
          "every rank in blocks whose count is decided by the noise as it goes, and its phased "
          "DP-SGD walks the rows one at a time in one global order; neither is a sum over shards");
  check_agreement(*comm, fingerprint_of("median", o, X.cols()),
                  "the median's parameters and column count");
  const ShardRows rows = shard_rows(*comm, X.rows());
  return {comm, rows.offset, rows.total};
}

}  // namespace

namespace median_detail {

namespace {

// `scale_share`: the estimate's share, resolved (given or planned).
void fill_shares(MedianPlan& p, const GeometricMedianOptions& o, double scale_share) {
  p.estimate_radius = !o.domain_radius.has_value();
  p.check_radius = o.domain_radius.has_value() && o.bound_check_share > 0;
  const double share = p.estimate_radius ? scale_share : p.check_radius ? o.bound_check_share : 0;
  if (o.method == MedianMethod::fast && o.profile == Profile::paper) {
    p.accountant = Accountant::basic;
    p.epsilon_pre = o.privacy.epsilon * share;
    p.epsilon_main = share > 0 ? remainder_after(o.privacy.epsilon, p.epsilon_pre) : o.privacy.epsilon;
    return;
  }
  p.rho_total = epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta);
  p.rho_pre = p.rho_total * share;
  p.rho_main = share > 0 ? remainder_after(p.rho_total, p.rho_pre) : p.rho_total;
}

}  // namespace

// Every charge of the release, from public values: the stages' shares never depend on the data,
// only their mechanisms' sensitivities and step counts do (docs/proofs/median.md §0).
MedianPlan plan_median(const GeometricMedianOptions& o, std::int64_t n, std::int64_t d) {
  MedianPlan p;
  double share = o.scale_share.value_or(0);
  if (!o.domain_radius && o.scale_share) {
    p.scale_share = {{"value", share}, {"source", "given"}};
  } else if (!o.domain_radius) {  // planned from n, d and the target (docs/proofs/scale.md §9)
    const PlannedShare planned = plan_share([&](double s) {
      MedianPlan at;
      fill_shares(at, o, s);
      return planned_radius_reliability(o, at, n, d);
    });
    share = planned.share;
    p.scale_share = planned.json();
    if (!planned.usable)
      p.abstained = planned_abstention(planned);
  }
  fill_shares(p, o, share);
  p.entries = domain_radius_entries(o, p, d);
  const Ledger pipeline = o.method == MedianMethod::hsu24 ? hsu24_entries(p)
                          : o.profile == Profile::paper  ? paper_entries(o, p, n)
                                                         : practical_entries(o, p);
  p.entries.insert(p.entries.end(), pipeline.begin(), pipeline.end());
  return p;
}

PrivacyLoss pre_share(const MedianPlan& plan) {
  return plan.accountant == Accountant::basic ? PrivacyLoss::pure(plan.epsilon_pre)
                                              : PrivacyLoss::zcdp(plan.rho_pre);
}

}  // namespace median_detail

std::span<const MethodInfo> median_methods() { return median_registry(); }
std::span<const MethodInfo> quantile_radius_methods() { return kQuantileRadiusMethods; }

GeometricMedianOptions median_options(MedianCommand method, const MedianRequest& request,
                                      std::span<const std::string> shared) {
  std::vector<std::string> given(shared.begin(), shared.end());
  const std::vector<std::string> own = given_options(request);
  given.insert(given.end(), own.begin(), own.end());
  check_options_apply(median_methods(), find_method(median_methods(), "median", name_of(method)),
                      given);
  GeometricMedianOptions o;
  if (const auto pipeline = private_method(method)) o.method = *pipeline;
  copy_given(request, o);
  return o;
}

Release<Vector> geometric_median(const ConstMatrixRef& X, const GeometricMedianOptions& o,
                                 Rng& rng, Budget* caller, GeometricMedianTrace* trace) {
  using namespace median_detail;
  validate(X, o, trace);
  const RowShard shard = distributed_shard(X, o);
  const MedianPlan plan = plan_median(o, total_rows(X, shard), X.cols());
  ReleaseBudget account(o.privacy.loss(), plan.accountant, caller);
  if (plan.abstained) {  // decided by the plan: nothing charged, nothing drawn
    SealFacts facts(true);
    facts.noise = o.run.noise;
    facts.abstained = plan.abstained;
    return seal(Vector{}, account, facts, rng,
                {{"method", name_of(o.method)}, {"profile", name_of(o.profile)},
                 {"scale_share", plan.scale_share}});
  }
  all_or_none(comm_or_single(shard.comm), [&] { account.charge(plan.entries); });
  SealFacts facts(true);  // every stage is proved (docs/proofs/median.md); a pipeline may say otherwise
  facts.noise = o.run.noise;
  // Plan: the domain radius, given (and checked) or estimated privately.
  const DomainRadius dr = domain_radius(X, o, plan, account, rng, shard);
  if (trace) trace->domain_radius = dr.R, trace->offset = dr.offset;
  const double r_min = o.min_radius.value_or(std::ldexp(dr.R, -20));
  nlohmann::json diagnostics = plan_diagnostics(o, dr, r_min);
  if (!plan.scale_share.is_null()) diagnostics["scale_share"] = plan.scale_share;
  if (dr.abstained) {
    facts.abstained = dr.abstained;
    return seal(Vector{}, account, facts, rng, std::move(diagnostics));
  }
  // Run, on the rows x_i − c0 when the radius was estimated around c0.
  RowMatrix shifted;
  const bool shift = dr.offset.size() > 0 && !dr.offset.isZero(0);
  if (shift) shifted = X.rowwise() - dr.offset.transpose();
  const ConstMatrixRef data = shift ? ConstMatrixRef(shifted) : X;
  PipelineOutput out =
      o.method == MedianMethod::hsu24 ? run_hsu24(data, o, dr.R, plan, account, rng, shard)
      : o.profile == Profile::paper   ? run_paper(data, o, dr.R, plan, account, rng)
                                      : run_practical(data, o, dr.R, plan, account, rng, shard);
  if (shift) out.estimate += dr.offset;
  if (out.diagnostics.value("radius_fell_back", false))
    diagnostics["warning"] = fmt::format(
        "the radius search found no radius up to domain_radius = {} holding 3/4 of the row pairs: "
        "domain_radius may be too small for these data", format_number(dr.R));
  diagnostics.update(out.diagnostics);
  facts.certified = out.certified;
  return seal(std::move(out.estimate), account, facts, rng, std::move(diagnostics));
}

Release<double> quantile_radius_release(const ConstMatrixRef& X, const QuantileRadiusOptions& o,
                                        Rng& rng, Budget* caller) {
  const bool approximate = o.method == RadiusMethod::fast_radius;
  validate(o.privacy, approximate ? DeltaRule::positive : DeltaRule::any);
  check_positive(o.min_radius, "min_radius");
  check_positive(o.domain_radius, "domain_radius");
  check_data(X);
  const double eps = o.privacy.epsilon;
  const LedgerEntry entry = o.method == RadiusMethod::fast_radius ? fast_radius_ledger(eps, o.privacy.delta)
                            : o.method == RadiusMethod::fast_radius_permuted ? permuted_radius_ledger(eps)
                                                                             : radius_finder_ledger(eps);
  ReleaseBudget account(o.privacy.loss(), Accountant::basic, caller);
  account.charge(entry);
  RadiusResult res;
  switch (o.method) {
    case RadiusMethod::fast_radius:
      res = fast_radius(X, o.min_radius, o.domain_radius, eps, o.privacy.delta, rng);
      break;
    case RadiusMethod::fast_radius_permuted:
      res = fast_radius_permuted(X, o.min_radius, o.domain_radius, eps, rng);
      break;
    case RadiusMethod::radius_finder:
      res = radius_finder(X, o.min_radius, o.domain_radius, eps, o.beta, rng);
      break;
  }
  // Not res.distance_evaluations: FastRadius stops early on the data (issue 28), uncharged.
  const nlohmann::json d = {{"method", name_of(o.method)}, {"step", res.step},
                            {"fell_back", res.fell_back}, {"grid_size", res.grid_size}};
  return seal(res.r_hat, account, SealFacts(true), rng, d);
}

}  // namespace dpstats
