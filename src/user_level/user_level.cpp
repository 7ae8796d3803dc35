// fit_user_level: validate -> plan -> charge -> run -> seal (the steps in the files beside it).
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

namespace dpstats::optimize {

using namespace user_level_detail;

// ---------------------------------------------------------------------------------------------
// fit_user_level: validate -> plan (centring, bounds estimates, the method: every charge from
// public values) -> charge -> run (each stage claims its entries) -> seal (docs/proofs/user-level.md).

namespace {

// The Gaussian on the held-out users' clipped-loss sum at holdout_share of rho (private methods).
std::optional<HoldoutLoss> holdout_loss(const UserLevelOptions& o) {
  if (!o.holdout || o.method == UserLevelMethod::non_private) return std::nullopt;
  const double rho = epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta);
  return HoldoutLoss::gaussian(o.holdout_loss_bound, o.holdout_share * rho, o.run.noise);
}

// What the centring (or the offset check, run after the bounds) and the held-out loss release
// spend of rho before the bounds (a fraction): not the method's.
double before_bounds(const CentreDecision& cd, const UserLevelOptions& o) {
  return (cd.centre ? o.scale_share : (cd.check ? kOffsetCheckZcdpFraction * o.scale_share : 0)) +
         (holdout_loss(o) ? o.holdout_share : 0);
}

// The release's plan: every charge, from public values (the options, n, m, d and whether the data
// state bounds), before any noise. The method's mechanisms are built once the bounds are
// released: their entries are planned here with the same losses.
Ledger user_level_plan(const UserDataset& data, const UserLevelOptions& o, const CentreDecision& cd) {
  const auto d = static_cast<std::size_t>(data.dim());
  Ledger l;
  if (cd.centre) l = private_location_entries(centring_options(cd.share), d);
  // The centred data state no bounds (with_features): the bounds step estimates them then.
  const BoundsPlan b = plan_bounds(!cd.centre && data.has_feature_bound(),
                                   !cd.centre && data.has_label_bound(), o, before_bounds(cd, o));
  const Ledger bounds = bounds_entries(b, o), method = method_planned(data, o, b.rho_left);
  l.insert(l.end(), bounds.begin(), bounds.end());
  if (cd.check) {  // run after the bounds' estimates (offset_gate)
    l.push_back(offset_check_entry(data.dim() + 1,  // the features and the labels
                                   PrivacyLoss::zcdp(kOffsetCheckZcdpFraction * cd.share.rho),
                                   o.run.noise));
  }
  l.insert(l.end(), method.begin(), method.end());
  if (const auto h = holdout_loss(o)) l.push_back(h->ledger_entry());
  return l;
}

// plan, parts 0 and 1: the private centring or the offset check, and the public bounds
// (estimated privately where absent, charged before their noise). `work`: the bounded users the
// method runs on (standardised when centred); `abstained`: why not (only the scale step charged).
struct ScaleStep {
  std::optional<Standardization> st;
  std::optional<UserDataset> work;
  Bounds bounds;
  std::optional<std::string> abstained;
};

ScaleStep scale_step(const UserDataset& data, const UserLevelOptions& o, const CentreDecision& cd,
                     ReleaseBudget& account, Rng& rng, nlohmann::json& diag) {
  ScaleStep out;
  // A supplied feature_bound clips the raw rows before they are centred (the bound the clip
  // report counts against); the standardised rows' bound follows from it.
  std::optional<UserDataset> clipped;
  if (cd.centre && o.feature_bound) clipped.emplace(clip_rows(data, *o.feature_bound));
  std::optional<UserDataset> centred;
  out.abstained = centre_if_planned(clipped ? *clipped : data, o, cd, account, rng, diag, out.st,
                                    centred);
  if (out.abstained) return out;
  const UserDataset& source = centred ? *centred : data;
  std::optional<double> derived;  // the standardised rows' bound a supplied feature_bound implies
  if (out.st && o.feature_bound) derived = out.st->bound_of(*o.feature_bound);
  out.bounds = resolve_bounds(data, source, o, before_bounds(cd, o), derived, account, rng);
  diag["bounds"] = out.bounds.diagnostics;
  out.abstained = out.bounds.abstained;  // only the estimates were charged
  if (!out.abstained && cd.check) out.abstained = offset_gate(data, o, cd, account, rng, diag);
  if (!out.abstained) out.work.emplace(bounded_data(source, o, out.bounds, diag));
  return out;
}

// The held-out users and the others: exactly round(f U) users held out, the smallest by a keyed
// hash of the user id (solvers/holdout.hpp), so both counts are public (U is, under replace-one).
struct UserSplit {
  UserDataset train;
  std::optional<UserDataset> held;
};

UserSplit split_users(const UserDataset& all, const UserLevelOptions& o, Rng& rng) {
  if (!o.holdout) return {all, std::nullopt};
  const HoldoutSplit split(*o.holdout, rng, o.run.comm);
  std::vector<std::vector<std::uint64_t>> ids(static_cast<std::size_t>(all.num_users()));
  for (std::size_t u = 0; u < ids.size(); ++u) ids[u] = {static_cast<std::uint64_t>(all.ids()[u])};
  const std::int64_t users = all.total_users(), k = split.held_units(users);
  const std::vector<char> flags = split.smallest(ids, users, o.run.comm);
  std::vector<bool> held(flags.size()), kept(flags.size());
  for (std::size_t u = 0; u < flags.size(); ++u) held[u] = flags[u] != 0, kept[u] = !held[u];
  return {all.subset(kept, users - k), all.subset(held, k)};
}

// Each held-out user's mean loss of the released model x . w (+ b) over its m rows as given (the
// user's units; {0, 1} labels mapped as for the fit), released by `mechanism` (non-private: the
// exact mean of the clipped losses).
nlohmann::json holdout_statement(const UserDataset& held, const Vector& x,
                                 const UserLevelOptions& o, bool mapped,
                                 const std::optional<HoldoutLoss>& mechanism, Rng& rng) {
  const auto loss = make_loss(o.loss);
  const Eigen::Index d = held.dim();
  const double b = x.size() > d ? x[d] : 0.0;
  const Vector w = x.head(d);
  std::vector<double> losses(static_cast<std::size_t>(held.num_users()));
  for (std::int64_t u = 0; u < held.num_users(); ++u) {
    double sum = 0;
    for (std::int64_t k = 0; k < held.items_per_user(); ++k) {
      const double y = mapped ? 2 * held.label(u, k) - 1 : held.label(u, k);
      const Eigen::Map<const Vector> a(held.features(u, k), d);
      sum += loss->phi(a.dot(w) + b, y);
    }
    losses[static_cast<std::size_t>(u)] = sum / static_cast<double>(held.items_per_user());
  }
  nlohmann::json j;
  if (mechanism) {  // the held-out count is public: exactly round(f U) users (split_users)
    j = mechanism->release(losses, rng, o.run.comm);
  } else {
    double sum = 0;
    for (double v : losses) sum += std::clamp(v, 0.0, o.holdout_loss_bound);
    j = {{"units", losses.size()}, {"loss_bound", o.holdout_loss_bound}, {"private", false},
         {"loss", losses.empty() ? nlohmann::json(nullptr) : nlohmann::json(sum / losses.size())}};
  }
  j.update({{"fraction", *o.holdout}, {"unit", "user"},
            {"loss_name", fmt::format("the user's mean {} loss of the released model over its "
                                      "rows (the user's units), clipped to loss_bound",
                                      name_of(o.loss))}});
  return j;
}

Release<Vector> seal_user_level(Vector x, ReleaseBudget& account, bool certified,
                                std::optional<std::string> abstained, const UserLevelOptions& o,
                                UserLevelTrace* trace, Rng& rng, nlohmann::json diag) {
  SealFacts facts(certified);
  facts.unit = PrivacyUnit::user;
  facts.noise = o.run.noise;
  facts.noiseless = trace && trace->noiseless;
  facts.abstained = std::move(abstained);
  diag["stated_error"] = fit_stated_error();
  return seal(std::move(x), account, facts, rng, std::move(diag));
}

}  // namespace

Release<Vector> fit_user_level(const UserDataset& all, const UserLevelOptions& o, Rng& rng,
                               Budget* budget, UserLevelTrace* trace) {
  validate_options(all, o);  // validate: nothing read from the data's values yet
  Communicator& comm = comm_or_single(o.run.comm);
  if (comm.size() > 1) check_agreement(comm, fingerprint(all, o), "the user-level fit's options");
  bool mapped = false;
  if (binary_labels(o.loss)) global_checked_labels(comm, all.all_labels(), o.loss, &mapped);
  const bool priv = o.method != UserLevelMethod::non_private;
  ReleaseBudget account = priv ? ReleaseBudget(o.privacy.loss(),
                                               paper_method(o) ? Accountant::basic : Accountant::zcdp,
                                               budget)
                               : ReleaseBudget::non_private();
  const UserSplit split = split_users(all, o, rng);  // the users the fit does not see
  const UserDataset& data = split.held ? split.train : all;
  nlohmann::json diag = {{"method", name_of(o.method)}, {"loss", name_of(o.loss)},
                         {"n_users", data.total_users()}, {"items_per_user", data.items_per_user()}};
  // plan and charge: the centring or the offset check (decided from public values), the bounds'
  // estimates, the method and the held-out loss release, all at once before any noise (the
  // budget lives on rank 0).
  const CentreDecision cd = decide_centring(data, o);
  if (priv) {
    // The same plan as user_level_plan's: public values only.
    const BoundsPlan b = plan_bounds(!cd.centre && data.has_feature_bound(),
                                     !cd.centre && data.has_label_bound(), o, before_bounds(cd, o));
    if (auto why = planned_bounds_abstention(b, o, data.total_users(), diag))  // nothing charged
      return seal_user_level(Vector(), account, true, std::move(why), o, trace, rng, diag);
    const Ledger plan = user_level_plan(data, o, cd);
    all_or_none(comm, [&] { account.charge(plan); });
  }
  ScaleStep step = scale_step(data, o, cd, account, rng, diag);  // run, parts 0 and 1
  if (step.abstained)
    return seal_user_level(Vector(), account, true, std::move(step.abstained), o, trace, rng, diag);
  const std::optional<HoldoutLoss> holdout = holdout_loss(o);  // its entry is in the plan, final
  MethodRun run = run_method(*step.work, o, step.bounds.rho_left, account, rng, diag, trace);
  Vector x = step.st ? step.st->to_user_units(run.x) : std::move(run.x);  // post-processing
  if (split.held && !run.abstained)
    diag["holdout"] = holdout_statement(*split.held, x, o, mapped, holdout, rng);
  return seal_user_level(std::move(x), account, priv && run.certified, run.abstained, o, trace,
                         rng, std::move(diag));
}

}  // namespace dpstats::optimize
