// private_bounds: the scale layer as one release (bounds.hpp).
#include "dpstats/scale/bounds.hpp"

#include "dpstats/error.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats {
namespace {

void check_options(const BoundsOptions& o) {
  check_epsilon(o.epsilon);
  check_delta(o.delta);
  if (o.norm_quantile) {
    require(*o.norm_quantile > 0 && *o.norm_quantile < 1, "norm_quantile must be in (0, 1), got {}",
            format_number(*o.norm_quantile));
    require(o.norm_share > 0 && o.norm_share < 1, "norm_share must be in (0, 1), got {}",
            format_number(o.norm_share));
  }
}

// The budget and the two shares (scale, norm) in the budget's unit.
struct Split {
  Budget budget;
  PrivacyLoss scale, norm;
};

Split split(const BoundsOptions& o) {
  const bool pure = o.delta == 0;
  const double total = pure ? o.epsilon : epsilon_delta_to_zcdp(o.epsilon, o.delta);
  const double first = o.norm_quantile ? total * (1 - o.norm_share) : total;
  const double rest = remainder_after(total, first);
  auto loss = [&](double x) { return pure ? PrivacyLoss::pure(x) : PrivacyLoss::zcdp(x); };
  return {Budget(pure ? PrivacyLoss::pure(o.epsilon) : PrivacyLoss::approximate(o.epsilon, o.delta),
                 pure ? Accountant::basic : Accountant::zcdp),
          loss(first), loss(rest > 0 ? rest : first)};
}

PrivacyGuarantee guarantee(const Budget& b, Neighbouring neighbouring) {
  PrivacyGuarantee p;
  if (b.accountant() == Accountant::basic) {
    p.epsilon = b.spent().epsilon;
    p.delta = b.spent().delta;
  } else {
    const PrivacyLoss ed = b.spent_epsilon_delta();
    p.epsilon = ed.epsilon;
    p.delta = ed.delta;
    p.rho = b.spent().rho;
  }
  p.certified = true;
  p.neighbouring = neighbouring;
  return p;
}

}  // namespace

Release<Bounds> private_bounds(const ConstMatrixRef& X, const BoundsOptions& o, Rng& rng) {
  check_options(o);
  Split s = split(o);
  ScaleOptions so;
  so.loss = s.scale;
  so.widen = o.widen;
  so.alpha = o.alpha;
  so.beta = o.beta;
  so.per_octave = o.per_octave;
  so.neighbouring = o.neighbouring;
  so.threads = o.threads;
  NormQuantileOptions no;
  no.loss = s.norm;
  no.q = o.norm_quantile.value_or(0.5);
  no.alpha = o.alpha;
  no.beta = o.beta;
  no.per_octave = o.per_octave;
  no.neighbouring = o.neighbouring;
  no.threads = o.threads;
  // Every option (both estimators') is checked before the data are read or anything is charged.
  private_scale_entries(so, static_cast<std::size_t>(X.cols()));
  if (o.norm_quantile) private_norm_quantile_entry(no);

  Release<Bounds> r;
  r.estimate.scale = private_scale(X, so, s.budget, rng);
  r.diagnostics = {{"scale", r.estimate.scale.diagnostics()}};
  if (o.norm_quantile) {
    if (o.norm_about_location) no.centre = r.estimate.scale.location();
    r.estimate.norm = private_norm_quantile(X, no, s.budget, rng);
    r.diagnostics["norm_quantile"] = r.estimate.norm->diagnostics();
    r.diagnostics["norm_quantile"]["centre"] = o.norm_about_location ? "location" : "zero";
  }
  r.diagnostics["all_ok"] = r.estimate.scale.all_ok() &&
                            (!r.estimate.norm || r.estimate.norm->status == ScaleStatus::ok);
  r.privacy = guarantee(s.budget, o.neighbouring);
  r.seeded = rng.seeded();
  r.ledger = s.budget.ledger();
  return r;
}

}  // namespace dpstats
