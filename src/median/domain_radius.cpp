// The geometric median's domain radius (plan step): the given R, checked by a private count of
// the rows beyond it, or a private estimate from the scale layer (docs/proofs/median.md §1).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/scale/reliability.hpp"
#include "pipeline.hpp"

namespace dpstats::median_detail {
namespace {

constexpr double kNormQuantile = 0.8;     // r covers 80% of the rows around c0
constexpr double kRadiusMultiplier = 6;   // R = 6r: holds x* while r covers ≥ 60% (proofs §1)
constexpr double kWarnFraction = 0.05;    // warn when more than 5% of rows lie beyond R

nlohmann::json cost_json(const PrivacyLoss& share) {
  if (share.kind == LossKind::zcdp) return {{"rho", share.rho}};
  return {{"epsilon", share.epsilon}};
}

// #{i : ‖x_i‖ > R}, the rows cut into parts counted in parallel (an exact integer sum).
std::int64_t rows_beyond(const ConstMatrixRef& X, double R, int threads) {
  std::vector<std::int64_t> part(static_cast<std::size_t>(std::max(threads, 1)), 0);
  parallel_ranges(X.rows(), threads, 65536, [&](int p, std::int64_t begin, std::int64_t end) {
    std::int64_t c = 0;
    for (std::int64_t i = begin; i < end; ++i) c += X.row(i).norm() > R;
    part[static_cast<std::size_t>(p)] = c;
  });
  std::int64_t total = 0;
  for (auto c : part) total += c;
  return total;
}

// The check's count of the rows with ‖x_i‖ > R (sensitivity 1 under replace-one), at the plan's
// pre-stage share: Gaussian (zcdp accountant) or Laplace (basic).
struct CheckMechanism {
  std::optional<LaplaceMechanism> laplace;
  std::optional<GaussianMechanism> gaussian;
  LedgerEntry entry() const {
    const char* purpose = "rows beyond domain_radius";
    return laplace ? laplace->ledger_entry(purpose) : gaussian->ledger_entry(purpose);
  }
  double apply(double v, Rng& rng) const {
    return laplace ? laplace->apply(v, rng) : gaussian->apply(v, rng);
  }
};

CheckMechanism check_mechanism(const MedianPlan& plan, NoiseMode noise) {
  CheckMechanism m;
  if (plan.accountant == Accountant::basic)
    m.laplace.emplace(1, plan.epsilon_pre, 1, noise);
  else
    m.gaussian.emplace(GaussianMechanism::from_rho(1, plan.rho_pre, 1, noise));
  return m;
}

DomainRadius check_given(const ConstMatrixRef& X, const GeometricMedianOptions& o,
                         const MedianPlan& plan, ReleaseBudget& account, Rng& rng,
                         const RowShard& shard) {
  DomainRadius dr;
  dr.R = *o.domain_radius;
  dr.diagnostics["domain_radius_source"] = "given";
  if (!plan.check_radius) return dr;
  Communicator& comm = comm_or_single(shard.comm);
  const auto beyond = static_cast<double>(allreduce_count(comm, rows_beyond(X, dr.R, o.run.threads)));
  const CheckMechanism m = check_mechanism(plan, o.run.noise);
  account.claim(m.entry());
  const double noisy = on_root(comm, [&] { return m.apply(beyond, rng); });
  const double fraction =
      std::clamp(noisy / static_cast<double>(total_rows(X, shard)), 0.0, 1.0);
  dr.diagnostics["domain_radius_check"] = {{"rows_beyond", noisy}, {"fraction_beyond", fraction},
                                           {"cost", cost_json(pre_share(plan))}};
  if (fraction > kWarnFraction)
    dr.diagnostics["domain_radius_warning"] = fmt::format(
        "about {:.1f}% of the rows lie beyond domain_radius = {} (a private count): the median is "
        "sought in B(0, domain_radius); omit domain_radius to estimate it privately",
        100 * fraction, format_number(dr.R));
  return dr;
}


// The centre only has to sit among the data's central ranks (the radius is measured about it),
// so a degenerate spread -- most values equal -- does not make it unusable here.
Reliability centre_reliability(SelectionFacts f, std::size_t j) {
  f.degenerate = false;
  return assess(f, fmt::format("the location of column {}", j + 1), "--domain-radius");
}

// A degenerate radius (most rows at c0 up to the grid's resolution) is no failure here: when
// more than half the rows sit at one point, that point is the geometric median, and the
// pipeline then returns c0 up to the tiny R = 6r. The rank error still has to fit.
Reliability radius_reliability(SelectionFacts f) {
  f.degenerate = false;
  return assess(f, "the 0.8 quantile of the norms", "--domain-radius");
}

// The pre-stage share split over the 3d + 1 selections: 3d for the per-coordinate location
// (private_scale), one for the norm quantile.
std::pair<PrivacyLoss, PrivacyLoss> split_share(const PrivacyLoss& share, std::int64_t d) {
  const double k = 3.0 * static_cast<double>(d) + 1;
  if (share.kind == LossKind::zcdp) {
    const double a = share.rho * (k - 1) / k;
    return {PrivacyLoss::zcdp(a), PrivacyLoss::zcdp(remainder_after(share.rho, a))};
  }
  const double a = share.epsilon * (k - 1) / k;
  return {PrivacyLoss::pure(a), PrivacyLoss::pure(remainder_after(share.epsilon, a))};
}

// The estimate's two selections' options (public: the plan's share, d, the run control).
struct EstimateOptions {
  ScaleOptions scale;
  NormQuantileOptions norm;
};

EstimateOptions estimate_options(const GeometricMedianOptions& o, const MedianPlan& plan,
                                 std::int64_t d, Communicator* comm) {
  const auto [location_share, norm_share] = split_share(pre_share(plan), d);
  EstimateOptions e;
  e.scale.loss = location_share;
  e.scale.threads = o.run.threads;
  e.scale.comm = comm;
  e.norm.loss = norm_share;
  e.norm.q = kNormQuantile;
  e.norm.alpha = 0;  // the quantile of all rows, corrupted ones included (Lemma 4 counts them all)
  e.norm.threads = o.run.threads;
  e.norm.comm = comm;
  return e;
}

// shard.comm: the selections count every rank's rows (the scale layer's ranks overloads), so the
// estimate is the one-process estimate on the union of the rows.
DomainRadius estimate(const ConstMatrixRef& X, const GeometricMedianOptions& o,
                      const MedianPlan& plan, ReleaseBudget& account, Rng& rng,
                      const RowShard& shard) {
  EstimateOptions eo = estimate_options(o, plan, X.cols(), shard.comm);
  const ScaleOptions& so = eo.scale;
  const ScaleEstimate scale = private_scale(X, so, account, rng);  // claims its planned entries
  DomainRadius dr;
  dr.diagnostics["domain_radius_source"] = "estimated";
  nlohmann::json est = {{"location_cost", cost_json(so.loss)},
                        {"norm_quantile_cost", cost_json(eo.norm.loss)},
                        {"q", kNormQuantile}, {"multiplier", kRadiusMultiplier}};
  // The scale layer's one rule (scale/reliability.hpp): the pipeline never runs on a centre or a
  // radius it calls unusable; the reason names the cause and what would suffice.
  for (std::size_t j = 0; j < scale.columns.size() && !dr.abstained; ++j) {
    const Reliability centre = centre_reliability(scale.columns[j].facts, j);
    if (!centre.usable) dr.abstained = centre.reason();
  }
  NormQuantileOptions& no = eo.norm;
  no.centre = scale.location();
  const NormQuantile r = private_norm_quantile(X, no, account, rng);  // claims its planned entries
  const Reliability radius = radius_reliability(r.facts);
  if (!radius.usable && !dr.abstained) dr.abstained = radius.reason();
  dr.offset = scale.location();
  dr.R = std::max(kRadiusMultiplier * r.value, 0x1p-1000);
  const Vector loc = dr.offset;
  est["location"] = std::vector<double>(loc.data(), loc.data() + loc.size());
  est["norm_quantile"] = r.value;
  est["domain_radius"] = dr.R;
  dr.diagnostics["domain_radius_estimate"] = est;
  return dr;
}

}  // namespace

Reliability planned_radius_reliability(const GeometricMedianOptions& o, const MedianPlan& plan,
                                       std::int64_t n, std::int64_t d) {
  const EstimateOptions e = estimate_options(o, plan, d, nullptr);
  const double rows = static_cast<double>(n);
  const Reliability parts[] = {
      centre_reliability(planned_scale_facts(e.scale, static_cast<std::size_t>(d), rows), 0),
      radius_reliability(planned_norm_quantile_facts(e.norm, rows))};
  return first_unusable(parts, "the domain radius");
}

Ledger domain_radius_entries(const GeometricMedianOptions& o, const MedianPlan& plan,
                             std::int64_t d) {
  if (plan.check_radius) return {check_mechanism(plan, o.run.noise).entry()};
  if (!plan.estimate_radius) return {};
  const EstimateOptions e = estimate_options(o, plan, d, nullptr);
  Ledger l = private_scale_entries(e.scale, static_cast<std::size_t>(d));
  const Ledger norm = private_norm_quantile_entries(e.norm);
  l.insert(l.end(), norm.begin(), norm.end());
  return l;
}

DomainRadius domain_radius(const ConstMatrixRef& X, const GeometricMedianOptions& o,
                           const MedianPlan& plan, ReleaseBudget& account, Rng& rng,
                           const RowShard& shard) {
  if (o.domain_radius) return check_given(X, o, plan, account, rng, shard);
  return estimate(X, o, plan, account, rng, shard);
}


}  // namespace dpstats::median_detail
