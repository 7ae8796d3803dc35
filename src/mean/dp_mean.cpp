// DP Mean, the PRIME paper's baseline (mean/dp_mean.hpp; docs/proofs/mean.md §4).
#include "dpstats/mean/dp_mean.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/clipped_sum.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/range.hpp"
#include "dpstats/seam.hpp"
#include "robust_mean_core.hpp"
#include "ranks_internal.hpp"

namespace dpstats {
namespace {

using namespace mean_detail;

void validate(const DpMeanOptions& o, Eigen::Index d) {
  validate(o.privacy, DeltaRule::positive);
  validate(o.run);
  require(o.failure_probability > 0 && o.failure_probability < 1,
          fmt::format("failure_probability must be in (0, 1), got {}", o.failure_probability));
  require(o.range_share > 0 && o.range_share < 1,
          fmt::format("range_share must be in (0, 1), got {}", o.range_share));
  require(d >= 1, fmt::format("DP Mean needs d >= 1 columns, got {}", d));
  check_units_options(o.scale, o.scale_share, o.clip_check_share, d);
  require(o.alpha >= 0 && o.alpha <= 0.25, fmt::format("alpha must be in [0, 0.25], got {}", o.alpha));
}

// Every mechanism from public values: the units' share (or the clipped-row count), q_range with
// range_share of the rest, the Gaussian mean with what remains (basic composition).
struct DpMeanPlan {
  AuxPlan aux;
  RangeOptions range;
  std::optional<GaussianMechanism> gauss;
  double quantum = 0;
  Ledger ledger() const {
    Ledger all = aux.entries;
    all.push_back(q_range_entry(range, static_cast<std::size_t>(gauss->dimension())));
    all.push_back(gauss->ledger_entry("clipped mean"));
    return all;
  }
};

DpMeanPlan plan_dp_mean(std::int64_t n, std::int64_t d, const DpMeanOptions& o) {
  DpMeanPlan p;
  p.aux = plan_aux(aux_share(o.scale.has_value(), o.scale_share, o.clip_check_share), false,
                   o.privacy.epsilon, d, 0, o.run.noise);
  const double epsilon = p.aux.remaining;
  p.range.epsilon = epsilon * o.range_share;
  p.range.delta = o.privacy.delta * o.range_share;
  p.range.sigma = 1;  // scale units
  p.range.zeta = o.failure_probability;
  // l2 sensitivity sqrt(d)·Q in sum units (= B·sqrt(d)/n on the mean scale).
  p.quantum = sum_quantum(n);
  p.gauss.emplace(GaussianMechanism::from_epsilon_delta(
      std::sqrt(static_cast<double>(d)) * p.quantum, remainder_after(epsilon, p.range.epsilon),
      remainder_after(o.privacy.delta, p.range.delta), static_cast<std::size_t>(d), o.run.noise));
  return p;
}

// DP Mean is the PRIME paper's baseline for sub-Gaussian rows, and its stated error covers the
// rows beyond kTailRadius scales only while they are as few as that model allows: a clipped row
// far outside the box moves the true mean by its distance to the box, not by B. So a column whose
// private fraction of rows beyond kTailRadius estimated scales exceeds the sub-Gaussian allowance
// (tail_allowance: 0.27% + 1% + the declared alpha + 3 noise deviations) abstains: corrupted rows
// (not robust), a heavy tail, or a spike of equal values whose MAD the selection may put anywhere
// in the empty gap below the other values (issue 27; docs/results/real-data.md).
std::optional<std::string> outside_model(const ColumnUnits& u, double alpha) {
  if (!u.estimated || u.tail_fraction.size() == 0) return std::nullopt;
  const double allowed = tail_allowance(CleanModel::sub_gaussian, alpha, u.tail_noise);
  for (Eigen::Index j = 0; j < u.tail_fraction.size(); ++j)
    if (u.tail_fraction[j] > allowed)
      return fmt::format(
          "column {}: about {:.1f}% of the rows lie beyond {} estimated scales ({}), more than "
          "the {:.1f}% DP Mean's sub-Gaussian model allows, and its stated error would not cover "
          "them (a heavy tail, corrupted rows, or most values equal); use --method bounded, or "
          "--alpha for the robust mean, or give --scale",
          j + 1, 100 * u.tail_fraction[j], kTailRadius, format_number(u.scale[j]),
          100 * allowed);
  return std::nullopt;
}

// Without a declared alpha every row is data, and a row beyond the box moves the data's mean by its
// distance to the box, which no radius bounds (3 cells of 1e15 among 2 000 rows of N(100, 15²)
// stayed inside the tail allowance and released 101 ± 18.5 "around" a mean of 5e11). So the radius
// speaks of the columns winsorised at the box, exactly what the clipped sum sums
// (docs/proofs/mean.md §4); with alpha, of the clean rows' mean as the robust methods' does.
void state_winsorised_at(nlohmann::json& diag, const ColumnUnits& u, const Vector& lower,
                         double side) {
  nlohmann::json at = nlohmann::json::array();
  for (Eigen::Index j = 0; j < lower.size(); ++j)
    at.push_back({u.location[j] + u.scale[j] * lower[j],
                  u.location[j] + u.scale[j] * (lower[j] + side)});
  nlohmann::json& s = diag["stated_error"];
  s["winsorised_at"] = std::move(at);
  s["meaning"] =
      "per column, |estimate - truth| <= radius with probability >= confidence when the rows "
      "within the box follow the model in the stated units, where truth is the mean of the column "
      "with every value beyond winsorised_at (the clipping box) counted at that end: the column's "
      "own mean only when no row lies beyond it (a row far beyond the box moves the column's mean "
      "by its distance, which no radius bounds)";
}

}  // namespace

// validate -> plan -> charge -> (units) -> range -> clipped sum -> noise -> seal.
Release<Vector> dp_mean(const ConstMatrixRef& X, const DpMeanOptions& given, Rng& rng,
                        Budget* budget) {
  validate(given, X.cols());
  Communicator& comm = comm_or_single(given.run.comm);
  const std::int64_t n = mean_detail::guarded_rows(
      X, comm, fingerprint_of("dp-mean", given, X.cols()), "DP Mean's options and column count",
      given.run.threads);
  nlohmann::json diag = {{"range_share", given.range_share}, {"robust", false}};
  DpMeanOptions o = given;
  if (!o.scale) {  // the units' share: given, or planned from n, d and the target
    const ShareChoice share = resolve_share(
        o, [&](const DpMeanOptions& at) { return robust_units_plan(n, X.cols(), at, false); });
    diag["scale_share"] = share.stated;
    if (share.abstain)
      return abstain_before_charging(o.privacy, Accountant::basic, o.run.noise, budget, rng,
                                     *share.abstain, diag);
  }
  const DpMeanPlan p = plan_dp_mean(n, X.cols(), o);
  ReleaseBudget account(o.privacy.loss(), Accountant::basic, budget);
  // Whatever the range step returns; the budget lives on rank 0.
  all_or_none(comm, [&] { account.charge(p.ledger()); });
  SealFacts facts(true);  // docs/proofs/mean.md
  facts.noise = o.run.noise;
  const auto units = mean_detail::units_step(X, p.aux, o.scale, o.alpha, 4, o.run.threads, comm,
                                            account, rng, diag, facts.abstained);
  if (!units) return seal(Vector{}, account, facts, rng, diag);
  if (auto why = outside_model(*units, o.alpha)) {
    facts.abstained = std::move(why);
    return seal(Vector{}, account, facts, rng, diag);
  }
  const RowMatrix Z = to_units(X, *units);
  const auto range = mean_detail::q_range(Z, n, p.range, comm, rng, o.run.threads);
  if (!range) {
    facts.abstained = "q_range found no populated bin in some coordinate";
    return seal(Vector{}, account, facts, rng, diag);
  }
  if (auto why = range_beyond_reason(range->centre, 1.0)) {  // Z is in scale units
    facts.abstained = std::move(why);
    return seal(Vector{}, account, facts, rng, diag);
  }
  // Clip to Box(x̄, B) = x̄ + [-B/2, B/2]^d (docs/errata.md D12) and sum exactly.
  const Vector lower = range->centre.array() - range->side / 2;
  if (p.aux.clip_count) {
    const Vector upper = lower.array() + range->side;
    mean_detail::report_clipped(*p.aux.clip_count, Z, lower, upper, n, 0.01, "scale", comm, rng,
                               diag);
  }
  const QuantisedSum qs = quantised_clipped_sum(Z, lower, range->side, o.run.threads, comm, n);
  const Vector mean = qs.to_mean(on_root(comm, [&] { return p.gauss->apply(qs.sums, rng); }), n);
  const double noise = p.gauss->sigma() * qs.width / (static_cast<double>(n) * qs.quantum);
  diag["box_side_scale_units"] = range->side;
  diag["noise_scale"] = to_std(noise * units->scale);
  // Not robust: a fraction f of arbitrary rows moves coordinate j by up to f·B·scale_j.
  diag["corruption_shift_per_fraction"] = to_std(range->side * units->scale);
  // Rows beyond 3 scales (the private tail count; with a supplied scale, the private count of
  // clipped rows) each move the clipped mean by at most B·scale/n: stated as f·B.
  double far = 0;
  if (units->tail_fraction.size() > 0) far = units->tail_fraction.maxCoeff() + 3 * units->tail_noise;
  else if (diag.contains("clipped")) far = diag["clipped"]["fraction"].get<double>();
  state_error(diag, *units, far * range->side, noise, n,
              o.failure_probability,
              "none (not robust): the rows beyond 3 scales, counted privately, may each move the "
              "mean by the box side B");
  if (o.alpha == 0) state_winsorised_at(diag, *units, lower, range->side);
  return seal(from_units(mean, *units), account, facts, rng, diag);
}

}  // namespace dpstats
