// fit_heavy_tailed's centring: the private centring or the offset check, decided from public values.
#include "dpstats/heavy_tailed/heavy_tailed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/l2_laplace.hpp"
#include "dpstats/solvers/adaptive_subgradient.hpp"
#include "dpstats/heavy_tailed/certificate.hpp"
#include "dpstats/solvers/exact_sum.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_clip.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_lens.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/geometry/ball.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/solvers/holdout.hpp"
#include "dpstats/solvers/standardize.hpp"

#include "heavy_tailed_internal.hpp"

namespace dpstats::optimize::heavy_tailed_detail {

CentrePlan plan_centring(const ConstMatrixRef& X, std::int64_t n, const HeavyTailedOptions& o) {
  CentrePlan p;
  if (o.centre == false) return p.why_not = "centre = false", p;
  const bool unknown = !o.moment_bound && !o.clip && !o.lambda && !o.step_size &&
                       o.method != HeavyTailedMethod::non_private && 2 * o.scale_share < 1;
  if (!o.centre && !unknown) {
    return p.why_not = "the feature scale is public (moment_bound, clip, lambda or step_size "
                       "given) or the method is not private", p;
  }
  const bool gaussian = o.method == HeavyTailedMethod::dp_sgd;
  p.share = o.scale_share * (gaussian ? epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta)
                                      : o.privacy.epsilon);
  const LocationOptions lo =
      centring_options(gaussian ? PrivacyLoss::zcdp(p.share) : PrivacyLoss::pure(p.share));
  const std::size_t d = static_cast<std::size_t>(X.cols()) + (binary_labels(o.loss) ? 0 : 1);
  const auto shortfall = private_location_shortfall(lo, static_cast<std::size_t>(n), d);
  if (shortfall && !o.centre) {
    p.check = true;  // the offset check spends the share the centring would have
    p.need = centring_units_needed(lo, d);
    p.why_not = "too few records for a private centring (" + *shortfall +
                "): no intercept, features in the data's units";
  }
  return p;  // centre = true with a shortfall abstains after the estimate
}

// What the centring (or the offset check) spends: pure epsilon, or rho for dp-sgd; 0 without.
double centring_spend(const CentrePlan& p, bool gaussian) {
  if (p.share == 0) return 0;
  return p.check ? (gaussian ? kOffsetCheckZcdpFraction : 1.0) * p.share : p.share;
}

PrivacyLoss share_loss(double share, bool gaussian) {
  return gaussian ? PrivacyLoss::zcdp(share) : PrivacyLoss::pure(share);
}

// Runs the private centring when it applies: fills `st` and Z = the standardised rows with the
// constant column; below its threshold runs the offset check instead. States either in `diag`
// (with "abstained" when the release must abstain), and returns what it spent.
// `n`: the records over every rank (X holds this rank's).
double centre_features(const ConstMatrixRef& X, const Vector& y, std::int64_t n,
                       const HeavyTailedOptions& o, ReleaseBudget& account, Rng& rng,
                       nlohmann::json& diag, std::optional<Standardization>& st, RowMatrix& Z) {
  const CentrePlan p = plan_centring(X, n, o);
  const bool gaussian = o.method == HeavyTailedMethod::dp_sgd;
  const PrivacyLoss share = share_loss(p.share, gaussian);
  // Regression losses standardise the label; class labels (+-1) are only checked: one class
  // under 10% of the records is "far" (a fit without an intercept cannot express that base rate).
  const Vector* labels = binary_labels(o.loss) ? nullptr : &y;
  if (p.share == 0 || p.check) diag = {{"applied", false}, {"reason", p.why_not}};
  if (p.share == 0) return 0;
  if (p.check) {  // are the columns (and the label) far from 0?
    const double spend = centring_spend(p, gaussian);
    const OffsetCheck oc = offset_check(X, 1, &y, share_loss(spend, gaussian), o.run.noise,
                                        account, rng, o.run.comm, binary_labels(o.loss));
    diag["offset_check"] = oc.diagnostics;
    diag["offset_check"]["share"] = (gaussian ? kOffsetCheckZcdpFraction : 1.0) * o.scale_share;
    if (oc.blocks())
      diag["abstained"] = offset_abstention(oc, static_cast<std::size_t>(n), p.need, "records",
                                            binary_labels(o.loss));
    return spend;
  }
  // Regression losses standardise the label too: the weights and domain_radius are unit-free.
  Centring c = private_centring(X, share, account, rng, labels, o.run.comm);
  diag = c.standardization.diagnostics;
  diag["share"] = o.scale_share;
  if (c.abstained) {
    diag["abstained"] = *c.abstained;
  } else {
    Z = c.standardization.apply(X);
    st = std::move(c.standardization);
  }
  return p.share;
}

}  // namespace dpstats::optimize::heavy_tailed_detail
