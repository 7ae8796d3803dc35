// fit_user_level's validate step: the options, the ranks' agreement and the labels.
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

bool uses_label_bound(GlmKind k) { return k == GlmKind::squared || k == GlmKind::huber; }

bool paper_method(const UserLevelOptions& o) {
  return o.profile == Profile::paper &&
         (o.method == UserLevelMethod::phased_sgd || o.method == UserLevelMethod::accelerated ||
          o.method == UserLevelMethod::nonsmooth);
}

void check_share(double share, const char* name) {
  require(share > 0 && share < 1, fmt::format("{} must be in (0, 1), got {}", name, share));
}

// Several ranks (options.run.comm, the rows gathered by home_rank.hpp): the methods whose only
// data passes are exact clipped sums (dp-gd-user, dp-gd-filter; dp-sgd-user and dp-sgd-group,
// whose batch permutation rank 0 draws over the global user / item order). The phased methods
// (phased-sgd, accelerated, nonsmooth) walk the users in sequential one-pass SGD: rank 0 runs them
// on every rank's users (users_on_root, id order: the one-process users), every rank plans and
// charges alike and takes rank 0's output. The scale step runs over ranks too: the
// bounds' estimates (one value per home user, the scale layer's exact counts), the private
// centring (private_location over one row per user) and the offset check (exact integer counts).
// non-private refuses (its bounds are the data's own maxima).
void check_distributed(const UserDataset& data, const UserLevelOptions& o) {
  const int P = o.run.comm ? o.run.comm->size() : 1;
  if (P == 1) return;
  require(data.gathered(),
          fmt::format("user-level data on {} ranks must be built by gather_users (home_rank.hpp): "
                      "a user's rows must be on one home rank before the per-user clip", P));
  require(o.method != UserLevelMethod::non_private,
          fmt::format("method non-private does not run on {} ranks (its bounds are the data's own "
                      "largest norms, and its one-pass SGD walks one process's users); run it on "
                      "one process", P));
}

// Everything the ranks must agree on before the first collective of the fit.
std::string fingerprint(const UserDataset& data, const UserLevelOptions& o) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|d={}|m={}|n={}|h={}/{}/{}",
                     name_of(o.method), name_of(o.loss), name_of(o.profile), o.privacy.epsilon,
                     o.privacy.delta, o.domain_radius, o.feature_bound.value_or(-1),
                     o.label_bound.value_or(-1), o.steps.value_or(-1), o.step_size.value_or(-1),
                     o.clip.value_or(-1), o.scale_share, o.clip_report_share,
                     o.centre ? (*o.centre ? 1 : 0) : -1, static_cast<int>(o.run.noise),
                     o.domain || o.x0 ? 1 : 0, data.dim(), data.items_per_user(),
                     data.total_users(), o.holdout.value_or(-1), o.holdout_share,
                     o.holdout_loss_bound);
}

// checked_labels over every rank's users' labels (one process: checked_labels itself): {0, 1}
// labels are mapped when every rank's are in {0, 1}, some are not ±1 and some are 0.
Vector global_checked_labels(Communicator& comm, const Vector& y, GlmKind kind, bool* mapped) {
  if (comm.size() == 1) return checked_labels(y, kind, mapped);
  if (mapped) *mapped = false;
  std::int64_t c[4] = {0, 0, 0, 0};  // non-finite, not ±1, not {0, 1}, zeros
  for (Eigen::Index i = 0; i < y.size(); ++i) {
    c[0] += !std::isfinite(y[i]);
    c[1] += (y[i] != 1 && y[i] != -1);
    c[2] += (y[i] != 0 && y[i] != 1);
    c[3] += (y[i] == 0);
  }
  comm.allreduce_sum(c);
  require(c[0] == 0, "labels must be finite (got a NaN or infinite label)");
  if (!binary_labels(kind) || c[1] == 0) return y;
  require(c[2] == 0 && c[3] > 0,
          fmt::format("labels must be -1 or +1 for the {} loss (labels in {{0, 1}} are mapped "
                      "0 -> -1, 1 -> +1); got a label outside both sets", name_of(kind)));
  if (mapped) *mapped = true;
  return (2 * y.array() - 1).matrix();
}

void validate_options(const UserDataset& data, const UserLevelOptions& o) {
  validate(o.run);
  check_distributed(data, o);
  // Before any estimate draws noise (the plan repeats the check from the loss's beta).
  require(!(o.method == UserLevelMethod::accelerated &&
            o.loss == GlmKind::hinge),
          "Alg 3 needs a smooth loss (beta > 0); use method 'nonsmooth' for hinge-type losses");
  if (o.method != UserLevelMethod::non_private) validate(o.privacy, DeltaRule::positive);
  if (!o.domain) {
    require(o.domain_radius > 0 && std::isfinite(o.domain_radius),
            fmt::format("domain_radius is required: the radius R of the ball B(0, R) that holds the "
                        "weights, in units of 1/feature (choose it from public knowledge of the "
                        "model, e.g. a bound on the weights' norm); must be finite and > 0, got {}",
                        o.domain_radius));
  } else {
    require(o.domain->dimension() == data.dim(),
            fmt::format("domain dimension {} must equal the number of features {}",
                        o.domain->dimension(), data.dim()));
  }
  for (const auto& [v, name] : {std::pair{o.feature_bound, "feature_bound"},
                                std::pair{o.label_bound, "label_bound"},
                                std::pair{o.step_size, "step_size"}, std::pair{o.clip, "clip"}}) {
    if (v) require(*v > 0 && std::isfinite(*v),
                   fmt::format("{} must be finite and > 0, got {}", name, *v));
  }
  if (o.steps) require(*o.steps >= 1, fmt::format("steps must be >= 1, got {}", *o.steps));
  check_share(o.scale_share, "scale_share");
  check_share(o.clip_report_share, "clip_report_share");
  require(o.scale_share + o.clip_report_share < 1, "scale_share + clip_report_share must be < 1");
  if (o.holdout) {
    check_holdout(*o.holdout, o.holdout_loss_bound);
    check_share(o.holdout_share, "holdout_share");
    require(!paper_method(o), "holdout applies to the practical profile and non-private (the "
                              "paper profile's schedule takes the whole budget)");
    require(2 * o.scale_share + o.clip_report_share + o.holdout_share < 1,
            "with holdout, 2 scale_share + clip_report_share + holdout_share must be < 1 (the "
            "centring and the bounds may each spend scale_share)");
  }
  if (o.x0) require(o.x0->size() == data.dim(), "x0 must have the feature dimension");
  if (o.centre.value_or(false)) {
    require(!o.domain && !o.x0 && o.method != UserLevelMethod::non_private && !paper_method(o),
            "centre = true needs the default domain (domain_radius, no domain or x0) and a private "
            "method with profile 'practical': the centred fit runs in standardised units");
    require(2 * o.scale_share + o.clip_report_share < 1,
            "centre = true spends scale_share twice (centring and bounds): 2 scale_share + "
            "clip_report_share must be < 1");
  }
  if (!paper_method(o)) return;
  require((o.feature_bound || data.has_feature_bound()) &&
              (!uses_label_bound(o.loss) || o.label_bound || data.has_label_bound()),
          "profile 'paper' needs feature_bound (and label_bound for the squared and huber losses): "
          "its schedule takes them as public constants");
  if (o.method != UserLevelMethod::phased_sgd) {
    require(!o.steps && !o.clip && !o.step_size,
            "steps, clip and step_size do not apply to the paper profile of Alg 3 (its schedule "
            "fixes T_i, τ and L_f)");
  }
}

}  // namespace dpstats::optimize::user_level_detail
