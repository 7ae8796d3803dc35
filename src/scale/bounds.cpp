// private_bounds: the scale layer as one release (bounds.hpp).
#include "dpstats/scale/bounds.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/error.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/scale/reliability.hpp"
#include "shared_pass.hpp"

namespace dpstats {
namespace {

void check_options(const BoundsOptions& o) {
  validate(o.privacy);
  validate(o.run);
  if (o.norm_quantile) {
    require(*o.norm_quantile > 0 && *o.norm_quantile < 1, "norm_quantile must be in (0, 1), got {}",
            format_number(*o.norm_quantile));
    require(o.norm_share > 0 && o.norm_share < 1, "norm_share must be in (0, 1), got {}",
            format_number(o.norm_share));
  }
  if (o.coverage) {
    require(o.clip_share > 0 && o.clip_share < 1, "clip_share must be in (0, 1), got {}",
            format_number(o.clip_share));
  }
  const double parts = (o.norm_quantile ? o.norm_share : 0) + (o.coverage ? o.clip_share : 0);
  require(parts < 1, "norm_share + clip_share must be below 1 (the rest estimates the scale), "
                     "got {}", format_number(parts));
}

// The three shares (scale, clip, norm) in the accountant's unit: epsilon (basic) or rho (zcdp);
// when the budget is split, each is shrunk by 2^-45 so that they compose within the total
// (units_epsilon's argument); one part alone is the total.
struct Split {
  PrivacyLoss scale, clip, norm;
};

Split split(const BoundsOptions& o) {
  const bool pure = o.privacy.delta == 0;
  const double total =
      pure ? o.privacy.epsilon : epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta);
  const double norm = o.norm_quantile ? o.norm_share : 0, clip = o.coverage ? o.clip_share : 0;
  const double shrink = norm + clip > 0 ? 1 - 0x1p-45 : 1;
  auto loss = [&](double fraction) {
    const double x = total * (fraction > 0 ? fraction : 1) * shrink;
    return pure ? PrivacyLoss::pure(x) : PrivacyLoss::zcdp(x);
  };
  return {loss(1 - norm - clip), loss(clip), loss(norm)};
}

struct Plan {
  ScaleOptions scale;
  ClipBoundsOptions clip;
  NormQuantileOptions norm;
  Ledger entries;  // both estimators', charged at once
};

// Every option of the estimators, checked before the data are read or anything is charged.
Plan plan_bounds(const BoundsOptions& o, std::size_t d) {
  const Split s = split(o);
  Plan p;
  p.scale.loss = s.scale;
  p.scale.widen = o.widen;
  p.scale.alpha = o.alpha;
  p.scale.beta = o.beta;
  p.scale.per_octave = o.per_octave;
  p.scale.neighbouring = o.neighbouring;
  p.scale.threads = o.run.threads;
  p.scale.comm = o.run.comm;
  p.clip.loss = s.clip;
  p.clip.coverage = o.coverage.value_or(0.01);
  p.clip.alpha = o.alpha;
  p.clip.beta = o.beta;
  p.clip.per_octave = o.per_octave;
  p.clip.neighbouring = o.neighbouring;
  p.clip.threads = o.run.threads;
  p.clip.comm = o.run.comm;
  p.norm.loss = s.norm;
  p.norm.q = o.norm_quantile.value_or(0.5);
  p.norm.alpha = o.alpha;
  p.norm.beta = o.beta;
  p.norm.per_octave = o.per_octave;
  p.norm.neighbouring = o.neighbouring;
  p.norm.threads = o.run.threads;
  p.norm.comm = o.run.comm;
  p.entries = private_scale_entries(p.scale, d);
  auto add = [&p](const Ledger& more) {
    p.entries.insert(p.entries.end(), more.begin(), more.end());
  };
  if (o.coverage) add(private_clip_bounds_entries(p.clip, d));
  if (o.norm_quantile) add(private_norm_quantile_entries(p.norm));
  return p;
}

// The reason to abstain: the scale layer's one rule (reliability.hpp) calls a column's estimate,
// its clipping bounds or the norm quantile unusable -- too few rows for the budget, a cell at the
// grid's end. Values released without their guarantee would be a confident wrong answer; the
// reason names the cause and what would suffice (issue 27). A degenerate column is not a reason:
// its rank guarantee holds, and its released location and MAD (at most 2 resolutions: the values
// are, up to the resolution, all equal) are what the column is (docs/proofs/scale.md §2); the
// release states it in the column's status and a warning, and a consumer that would divide by
// the scale still abstains on it through reliability().
std::optional<std::string> unusable(const Bounds& b) {
  std::vector<Reliability> parts;
  for (std::size_t j = 0; j < b.scale.columns.size(); ++j) {
    SelectionFacts f = b.scale.columns[j].facts;
    f.degenerate = false;
    parts.push_back(assess(f, fmt::format("the location and scale of column {}", j + 1), ""));
  }
  if (b.clip) parts.push_back(reliability(*b.clip, ""));
  if (b.norm) parts.push_back(reliability(*b.norm, ""));
  const Reliability r = first_unusable(parts, "the bounds");
  if (r.usable) return std::nullopt;
  return r.reason();
}

// The reason the rank errors alone, from public values (the shares, d, the grids, beta and n,
// public under replace-one), already call a part unusable, or nothing: the release would abstain
// on the same facts after charging, so it abstains before (docs/proofs/scale.md §5). Under
// add/remove n is private and the check waits for its count.
std::optional<std::string> planned_unusable(const Plan& p, const BoundsOptions& o, std::size_t d,
                                            double n) {
  if (o.neighbouring != Neighbouring::replace_one) return std::nullopt;
  std::vector<Reliability> parts = {
      assess(planned_scale_facts(p.scale, d, n), "the location and scale of column 1", "")};
  if (o.coverage) parts.push_back(planned_reliability(p.clip, d, n, ""));
  if (o.norm_quantile)
    parts.push_back(assess(planned_norm_quantile_facts(p.norm, n),
                           fmt::format("the {} quantile of the norms", format_number(p.norm.q)),
                           ""));
  const Reliability r = first_unusable(parts, "the bounds");
  if (r.usable) return std::nullopt;
  return r.reason();
}

// A warning naming the degenerate columns (their scale is 0 and their bounds the location's
// resolution), or nothing.
void warn_degenerate(const ScaleEstimate& s, nlohmann::json& diagnostics) {
  std::vector<std::size_t> cols;
  for (std::size_t j = 0; j < s.columns.size(); ++j)
    if (s.columns[j].status == ScaleStatus::degenerate) cols.push_back(j + 1);
  if (cols.empty()) return;
  diagnostics["warning"] = fmt::format(
      "column(s) {}: the private MAD is within 2 resolutions of 0 (at least half of the values "
      "lie within the location's resolution of it: a value most rows share, or a spread finer "
      "than the resolution): scale 0, bounds = location -/+ resolution, which may leave out every "
      "other value; a method that divides by the scale cannot use them",
      fmt::join(cols, ", "));
}

}  // namespace

Release<Bounds> private_bounds(const ConstMatrixRef& X, const BoundsOptions& o, Rng& rng,
                               Budget* budget) {
  check_options(o);
  Communicator& comm = comm_or_single(o.run.comm);
  if (comm.size() > 1)
    check_agreement(comm, fingerprint_of("bounds", o, X.cols()),
                    "the bounds' options and column count");
  Plan p = plan_bounds(o, static_cast<std::size_t>(X.cols()));
  // The rows' check in the same read as the scale's first pass, made once: the signed log grid's
  // full pass where the clipping bounds read it too, else the median's banded pass.
  scale_detail::SharedPass shared;
  if (o.coverage)
    scale_detail::check_and_count(shared, X, o.per_octave, o.run.threads, comm);
  else
    scale_detail::check_and_band(shared, X, p.scale, comm);
  if (comm.size() == 1 && !shared.checked) {  // a grid the pass does not keep: the check alone
    check_data(X, "X", o.run.threads);
    shared.checked = true;
  }
  const bool pure = o.privacy.delta == 0;
  ReleaseBudget account(o.privacy.loss(), pure ? Accountant::basic : Accountant::zcdp, budget);
  SealFacts facts(true);  // docs/proofs/scale.md
  facts.neighbouring = o.neighbouring;
  const auto n = static_cast<double>(allreduce_count(comm, X.rows()));  // every rank's rows
  if ((facts.abstained = planned_unusable(p, o, static_cast<std::size_t>(X.cols()), n)))
    return seal(Bounds{}, account, facts, rng, nlohmann::json::object());  // nothing charged
  all_or_none(comm, [&] { account.charge(p.entries); });  // the whole plan (the budget: rank 0)
  Bounds b;
  b.scale = scale_detail::private_scale(X, p.scale, account, rng, &shared);
  nlohmann::json diagnostics = {{"scale", b.scale.diagnostics()}};
  if (o.coverage) {
    b.clip = scale_detail::private_clip_bounds(X, p.clip, account, rng, &shared);
    diagnostics["clip_bounds"] = b.clip->diagnostics();
  }
  if (o.norm_quantile) {
    if (o.norm_centre == NormCentre::location) p.norm.centre = b.scale.location();
    b.norm = private_norm_quantile(X, p.norm, account, rng);
    diagnostics["norm_quantile"] = b.norm->diagnostics();
    diagnostics["norm_quantile"]["centre"] = name_of(o.norm_centre);
  }
  diagnostics["all_ok"] = b.scale.all_ok() && (!b.clip || b.clip->all_usable()) &&
                          (!b.norm || b.norm->status == ScaleStatus::ok);
  warn_degenerate(b.scale, diagnostics);
  facts.abstained = unusable(b);
  return seal(std::move(b), account, facts, rng, std::move(diagnostics));
}

}  // namespace dpstats
