// fit_user_level's bounds: the feature and label bounds, estimated privately where absent.
#include "dpstats/user_level/user_level.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mechanisms/above_threshold.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/user_level/accelerated.hpp"
#include "dpstats/user_level/filter.hpp"
#include "dpstats/user_level/home_rank.hpp"
#include "dpstats/solvers/exact_sum.hpp"
#include "dpstats/solvers/holdout.hpp"
#include "dpstats/solvers/standardize.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/solvers/dp_sgd.hpp"
#include "dpstats/scale/reliability.hpp"
#include "checks.hpp"

#include "user_level_internal.hpp"

namespace dpstats::optimize::user_level_detail {

constexpr double kRowQuantile = 0.9;     // a user's value: the 0.9-quantile of its row norms
// The bound: the private median of those values. The median is the quantile the scale layer's
// rank guarantee reaches with the fewest users (t/n + alpha < min(q, 1 - q)): about 900 users at
// epsilon = 1, delta = 1e-6 and the default scale_share (docs/proofs/user-level.md).
constexpr double kUserQuantile = 0.5;
constexpr double kClippedWarning = 0.05; // a supplied bound that clips more users is reported
constexpr double kClipReportBeta = 0.05;  // ... when the count's (1 - beta) lower bound says so

// One value per user: the kRowQuantile-quantile of |f(row)| over the user's m rows.
std::vector<double> per_user_values(const UserDataset& data, bool labels) {
  const std::int64_t n = data.num_users(), m = data.items_per_user();
  std::vector<double> out(static_cast<std::size_t>(n)), row(static_cast<std::size_t>(m));
  const auto k = static_cast<std::size_t>(
      std::min<double>(static_cast<double>(m - 1), std::ceil(kRowQuantile * static_cast<double>(m)) - 1));
  for (std::int64_t u = 0; u < n; ++u) {
    for (std::int64_t j = 0; j < m; ++j) {
      row[static_cast<std::size_t>(j)] =
          labels ? std::abs(data.label(u, j)) : data.all_features().row(u * m + j).norm();
    }
    std::nth_element(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(k), row.end());
    out[static_cast<std::size_t>(u)] = row[k];
  }
  return out;
}

BoundsPlan plan_bounds(bool has_A, bool has_B, const UserLevelOptions& o, double centred_share) {
  BoundsPlan p;
  p.estimate_A = !o.feature_bound && !has_A;
  p.estimate_B = uses_label_bound(o.loss) && !o.label_bound && !has_B;
  p.report = o.feature_bound.has_value() && !paper_method(o) &&
             o.method != UserLevelMethod::non_private;
  if (paper_method(o) || o.method == UserLevelMethod::non_private) return p;
  const double rho = epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta);
  const int estimates = (p.estimate_A ? 1 : 0) + (p.estimate_B ? 1 : 0);
  // Pure epsilon-DP is epsilon^2/2-zCDP: each estimate gets the epsilon whose rho is its share.
  p.eps_each = estimates ? std::sqrt(2 * o.scale_share * rho / estimates) : 0;
  p.eps_report = std::sqrt(2 * o.clip_report_share * rho);
  p.rho_left = rho * (1 - centred_share - (estimates ? o.scale_share : 0) -
                      (p.report ? o.clip_report_share : 0));
  return p;
}

const char* const kReportPurpose = "users with a row above the supplied feature_bound";

LaplaceMechanism report_mechanism(const BoundsPlan& p, NoiseMode noise) {
  return LaplaceMechanism(1.0, p.eps_report, 1, noise);
}

NormQuantileOptions bound_quantile_options(const BoundsPlan& p, const UserLevelOptions& o) {
  NormQuantileOptions nq;
  nq.comm = o.run.comm;  // every rank's users: exact counts, rank 0 draws
  nq.loss = PrivacyLoss::pure(p.eps_each);
  nq.q = kUserQuantile;
  return nq;
}

// The bounds step's entries (the estimates' and the report's).
Ledger bounds_entries(const BoundsPlan& p, const UserLevelOptions& o) {
  if (paper_method(o) || o.method == UserLevelMethod::non_private) return {};
  Ledger l;
  if (p.report) l.push_back(report_mechanism(p, o.run.noise).ledger_entry(kReportPurpose));
  for (int k = (p.estimate_A ? 1 : 0) + (p.estimate_B ? 1 : 0); k > 0; --k)
    for (const auto& e : private_norm_quantile_entries(bound_quantile_options(p, o))) l.push_back(e);
  return l;
}

std::optional<std::string> planned_bounds_abstention(const BoundsPlan& b, const UserLevelOptions& o,
                                                     std::int64_t users, nlohmann::json& diag) {
  if (paper_method(o) || o.method == UserLevelMethod::non_private ||
      !(b.estimate_A || b.estimate_B))
    return std::nullopt;
  const NormQuantileOptions q = bound_quantile_options(b, o);
  if (q.neighbouring != Neighbouring::replace_one) return std::nullopt;
  SelectionFacts f = planned_norm_quantile_facts(q, static_cast<double>(users));
  f.unit = "users";
  for (const char* name : {b.estimate_A ? "feature_bound" : "", b.estimate_B ? "label_bound" : ""}) {
    if (*name == 0) continue;
    Reliability r = assess(f, fmt::format("the {} quantile of the norms", format_number(q.q)), name);
    r.estimate = fmt::format("{} ({})", name, r.estimate);  // as resolve_bounds names it
    if (r.usable) continue;
    diag["bounds"][name] = {{"estimated", true}, {"status", "insufficient_data"},
                            {"rank_error", f.rank_error}, {"epsilon", f.epsilon},
                            {"reliability", r.json()}};
    return r.reason();
  }
  return std::nullopt;
}

// A supplied feature_bound's clip report: a private count of the users with a raw row above it
// (the bound the run clips the raw rows at), drawn once on rank 0. The warning needs the count's
// 95% lower confidence bound above kClippedWarning, so that the Laplace noise alone (scale
// 1 / eps, tens of users at the default share) never raises it.
nlohmann::json clip_report(const UserDataset& raw, double A, const LaplaceMechanism& count,
                           const UserLevelOptions& o, Rng& rng) {
  Communicator& comm = comm_or_single(o.run.comm);  // every rank's users (exact), noise on rank 0
  const std::int64_t clipped = allreduce_count(comm, raw.users_clipped_at(A));
  const double noisy =
      on_root(comm, [&] { return count.apply(static_cast<double>(clipped), rng); });
  const double n = static_cast<double>(raw.total_users());
  const double margin = count.noise_scale() * std::log(1 / (2 * kClipReportBeta));  // one-sided 95%
  const double fraction = std::clamp(noisy / n, 0.0, 1.0);
  const double lower = std::clamp((noisy - margin) / n, 0.0, 1.0);
  nlohmann::json j = {{"value", A}, {"estimated", false}, {"clipped_users_fraction", fraction},
                      {"clipped_users_fraction_lower_95", lower},
                      {"noise_scale_fraction", count.noise_scale() / n},
                      {"epsilon", count.loss().epsilon}};
  if (lower > kClippedWarning) {
    j["warning"] = fmt::format(
        "feature_bound = {} clips rows of at least {:.0f}% of the users (private count, 95% "
        "lower bound): the supplied bound bites; leave it out to have it estimated",
        format_number(A), 100 * lower);
  }
  return j;
}

// The bounds the run uses. `raw`: the users' rows as given (the clip report's); `data`: the rows
// the fit runs on (standardised when centred). `derived_A`: the bound of the standardised rows
// that a supplied feature_bound implies (Standardization::bound_of), when centred.
Bounds resolve_bounds(const UserDataset& raw, const UserDataset& data, const UserLevelOptions& o,
                      double centred_share, std::optional<double> derived_A,
                      ReleaseBudget& account, Rng& rng) {
  Bounds b;
  const BoundsPlan p = plan_bounds(data.has_feature_bound(), data.has_label_bound(), o, centred_share);
  const bool estimate_A = p.estimate_A, estimate_B = p.estimate_B, report = p.report;
  b.A = derived_A ? *derived_A : o.feature_bound.value_or(data.feature_bound());
  b.B = uses_label_bound(o.loss) ? o.label_bound.value_or(data.label_bound()) : 1.0;
  if (o.method == UserLevelMethod::non_private) {
    // Not private: the data's own largest row norm and |label| (nothing is clipped).
    if (estimate_A) b.A = std::max(data.all_features().rowwise().norm().maxCoeff(), 1e-300);
    if (estimate_B) b.B = std::max(data.all_labels().cwiseAbs().maxCoeff(), 1e-300);
    return b;
  }
  if (paper_method(o)) return b;  // validate_options required both bounds
  std::optional<LaplaceMechanism> count;
  if (report) {
    count.emplace(report_mechanism(p, o.run.noise));
    account.claim(count->ledger_entry(kReportPurpose));
  }
  b.rho_left = p.rho_left;
  // The scale layer's selection on its log grid over every double (claims its planned entry).
  const auto estimate = [&](bool labels, const char* name) {
    const auto values = per_user_values(data, labels);  // this rank's home users
    NormQuantile pb = private_value_quantile(values, bound_quantile_options(p, o), account, rng);
    pb.facts.unit = "users";  // one value per user: its n and rank error count users
    Reliability r = reliability(pb, name);
    r.estimate = fmt::format("{} ({})", name, r.estimate);
    b.diagnostics[name] = pb.diagnostics();
    b.diagnostics[name].update(
        {{"value", pb.value}, {"estimated", true}, {"epsilon", pb.epsilon},
         {"reliability", r.json()},
         {"rule", fmt::format("private {}-quantile over users of each user's {}-quantile (scale "
                              "layer, log grid over every double)", kUserQuantile, kRowQuantile)}});
    if (!r.usable && !b.abstained) b.abstained = r.reason();
    return pb.value;
  };
  if (estimate_A) b.A = estimate(false, "feature_bound");
  if (estimate_B) b.B = estimate(true, "label_bound");
  if (report) {
    b.diagnostics["feature_bound"] = clip_report(raw, *o.feature_bound, *count, o, rng);
    if (b.diagnostics["feature_bound"].contains("warning"))
      b.diagnostics["warnings"].push_back(b.diagnostics["feature_bound"]["warning"]);
    if (derived_A) b.diagnostics["feature_bound"]["standardised_bound"] = *derived_A;
  }
  return b;
}

// The run's data: features clipped to A, labels to B (and mapped {0, 1} -> ±1 when needed).
UserDataset bounded_data(const UserDataset& data, const UserLevelOptions& o, const Bounds& b,
                         nlohmann::json& diag) {
  bool mapped = false;
  const Vector labels =
      global_checked_labels(comm_or_single(o.run.comm), data.all_labels(), o.loss, &mapped);
  if (mapped) diag["labels"] = "mapped {0, 1} -> {-1, +1}";
  return data.bounded(b.A, b.B, mapped ? &labels : nullptr);
}

}  // namespace dpstats::optimize::user_level_detail
