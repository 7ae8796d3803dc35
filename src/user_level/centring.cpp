// fit_user_level's centring: the private centring or the offset check, decided from public values.
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

CentreDecision decide_centring(const UserDataset& data, const UserLevelOptions& o) {
  CentreDecision c;
  if (o.centre == false) return c.why_not = "centre = false", c;
  // A supplied feature_bound bounds the norms, not the location: the fit still centres (the
  // standardised rows' bound then follows from it, Standardization::bound_of).
  const bool unknown = !data.has_feature_bound() && !o.domain && !o.x0 &&
                       o.method != UserLevelMethod::non_private && !paper_method(o) &&
                       2 * o.scale_share + o.clip_report_share < 1;
  if (!o.centre && !unknown) {
    return c.why_not = "the features' units are the caller's (bounded data, a custom domain or "
                       "x0) or the method is not a private practical one", c;
  }
  c.share = PrivacyLoss::zcdp(o.scale_share *
                              epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta));
  const auto shortfall = private_location_shortfall(
      centring_options(c.share), static_cast<std::size_t>(data.total_users()),
      static_cast<std::size_t>(data.dim()));
  if (shortfall && !o.centre) {
    c.check = true;  // the offset check spends the share the centring would have
    c.need = centring_units_needed(centring_options(c.share), static_cast<std::size_t>(data.dim()));
    return c.why_not = "too few users for a private centring (" + *shortfall +
                       "): no intercept, features in the data's units", c;
  }
  c.centre = true;  // centre = true with a shortfall abstains after the estimate
  return c;
}

// The users' rows, each clipped to norm A (a supplied feature_bound, before centring).
UserDataset clip_rows(const UserDataset& data, double A) {
  RowMatrix X = data.all_features();
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const double norm = X.row(i).norm();
    if (norm > A) X.row(i) *= A / norm;
  }
  return data.with_features(std::move(X));
}

// One row per user (its first): the centring's table at user-level sensitivity 1.
RowMatrix first_rows(const UserDataset& data) {
  RowMatrix F(data.num_users(), data.dim());
  for (std::int64_t u = 0; u < data.num_users(); ++u) {
    F.row(u) = data.all_features().row(u * data.items_per_user());
  }
  return F;
}

// Runs the private centring when planned (fills `st` and `centred`), or states in
// diag["centring"] why not. Returns why the release abstains, if it does (only the centring was
// charged).
std::optional<std::string> centre_if_planned(const UserDataset& data, const UserLevelOptions& o,
                                           const CentreDecision& cd, ReleaseBudget& account,
                                           Rng& rng, nlohmann::json& diag,
                                           std::optional<Standardization>& st,
                                           std::optional<UserDataset>& centred) {
  if (cd.centre) {
    // Every rank's home users' first rows (the one-process table, split by home rank).
    Centring c = private_centring(first_rows(data), cd.share, account, rng, nullptr, o.run.comm);
    diag["centring"] = c.standardization.diagnostics;
    diag["centring"]["share_of_rho"] = o.scale_share;
    if (c.abstained) return c.abstained;
    st = std::move(c.standardization);
    centred.emplace(data.with_features(st->apply(data.all_features())));
    diag["intercept"] = true;
    return std::nullopt;
  }
  if (o.method != UserLevelMethod::non_private) {
    diag["centring"] = {{"applied", false}, {"reason", cd.why_not}};
  }
  return std::nullopt;
}

// Below the centring threshold with an unknown scale: are the columns far from 0? (the labels
// too: a regression label's offset, or one class under 10%). Run after the bounds' estimates,
// so that a table too small for them abstains for that reason (the check's noise is then a
// large fraction of the users).
std::optional<std::string> offset_gate(const UserDataset& data, const UserLevelOptions& o,
                                       const CentreDecision& cd, ReleaseBudget& account, Rng& rng,
                                       nlohmann::json& diag) {
  // Class labels are checked as +-1 ({0, 1} mapped as for the fit): one class under 10% of the
  // users is "far", as a fit without an intercept cannot express that base rate.
  const bool classes = binary_labels(o.loss);
  const Vector labels = classes ? Vector(data.all_labels().unaryExpr(
                                      [](double v) { return v > 0 ? 1.0 : -1.0; }))
                                : data.all_labels();
  const OffsetCheck oc = offset_check(data.all_features(), data.items_per_user(), &labels,
                                      PrivacyLoss::zcdp(kOffsetCheckZcdpFraction * cd.share.rho),
                                      o.run.noise, account, rng, o.run.comm, classes);
  diag["centring"]["offset_check"] = oc.diagnostics;
  diag["centring"]["offset_check"]["share_of_rho"] = kOffsetCheckZcdpFraction * o.scale_share;
  if (!oc.blocks()) return std::nullopt;
  return offset_abstention(oc, static_cast<std::size_t>(data.total_users()), cd.need, "users",
                           classes);
}

}  // namespace dpstats::optimize::user_level_detail
