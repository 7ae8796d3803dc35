// The bounded mean (mean/bounded_mean.hpp; docs/proofs/mean.md §5).
#include "dpstats/mean/bounded_mean.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/clipped_sum.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/scale/clip_bounds.hpp"
#include "dpstats/seam.hpp"
#include "robust_mean_core.hpp"
#include "ranks_internal.hpp"

namespace dpstats {
namespace {

using namespace mean_detail;

// The planned bounds' share is capped at what stat spends on the same clipping bounds (0.6: their
// anchor and scans, 40 of 48 units, get what 0.55 of 44 gave before the fine cell), not at the
// mean family's 0.5; the mean's own noise keeps 40% of epsilon (docs/proofs/scale.md §9).
constexpr double kBoundsShareCap = 0.6;

void validate(const BoundedMeanOptions& o, Eigen::Index d) {
  validate(o.privacy, DeltaRule::any);
  validate(o.run);
  require(d >= 1, fmt::format("the bounded mean needs d >= 1 columns, got {}", d));
  if (o.bounds) {
    const auto& b = *o.bounds;
    require(b.size() == 2 || static_cast<Eigen::Index>(b.size()) == 2 * d,
            fmt::format("bounds must hold one (lo, hi) pair for every column or one pair per "
                        "column (2 or {} values), got {} values",
                        2 * d, b.size()));
    for (std::size_t k = 0; k + 1 < b.size(); k += 2) {
      check_finite(b[k], "bounds (lo)");
      check_finite(b[k + 1], "bounds (hi)");
      require(b[k] < b[k + 1], fmt::format("bounds must satisfy lower < upper, got lower = {}, upper = {}",
                                           b[k], b[k + 1]));
    }
  }
  if (o.scale_share) check_scale_share(*o.scale_share);
  require(o.clip_check_share >= 0 && o.clip_check_share <= 0.1,
          fmt::format("clip_check_share must be in [0, 0.1], got {}", o.clip_check_share));
}

struct BoundedPlan {
  AuxPlan aux;
  std::optional<LaplaceMechanism> laplace;    // delta = 0
  std::optional<GaussianMechanism> gaussian;  // delta > 0
  Ledger ledger() const {
    Ledger all = aux.entries;
    all.push_back(laplace ? laplace->ledger_entry("clipped sum")
                          : gaussian->ledger_entry("clipped sum"));
    return all;
  }
  Vector apply(const Vector& sums, Rng& rng) const {
    return laplace ? laplace->apply(sums, rng) : gaussian->apply(sums, rng);
  }
  double noise_scale() const { return laplace ? laplace->noise_scale() : gaussian->sigma(); }
};

// Sensitivities in units of the quantised sum: one replaced row moves each coordinate by <= Q.
// Absent bounds: the scale layer's clipping bounds (scale/clip_bounds.hpp) from the auxiliary share.
ClipBoundsOptions clip_options(const PrivacyLoss& share, int threads, Communicator* comm) {
  ClipBoundsOptions co;
  co.loss = share;
  co.threads = std::clamp(threads, 1, 256);
  co.comm = comm;
  return co;
}

BoundedPlan plan_bounded(std::int64_t n, std::int64_t d, const BoundedMeanOptions& o) {
  BoundedPlan p;
  p.aux = plan_aux(aux_share(o.bounds.has_value(), o.scale_share, o.clip_check_share), false,
                   o.privacy.epsilon, d, 0, o.run.noise);
  if (!o.bounds)
    p.aux.entries = private_clip_bounds_entries(clip_options(p.aux.loss, 1, nullptr),
                                                static_cast<std::size_t>(d));
  const double epsilon = p.aux.remaining;
  const double Q = sum_quantum(n), dd = static_cast<double>(d);
  const auto ud = static_cast<std::size_t>(d);
  if (o.privacy.delta == 0) {
    p.laplace.emplace(dd * Q, epsilon, ud, o.run.noise);
  } else {
    p.gaussian.emplace(
        GaussianMechanism::from_epsilon_delta(std::sqrt(dd) * Q, epsilon, o.privacy.delta, ud,
                                              o.run.noise));
  }
  return p;
}

struct Bounds {
  Vector lo, hi;
};

Bounds supplied_bounds(const std::vector<double>& b, Eigen::Index d) {
  Bounds out{Vector(d), Vector(d)};
  for (Eigen::Index j = 0; j < d; ++j) {
    const std::size_t k = b.size() == 2 ? 0 : static_cast<std::size_t>(2 * j);
    out.lo[j] = b[k];
    out.hi[j] = b[k + 1];
  }
  return out;
}

// The exact clipped sum (over every rank's rows; n rows in all), on X itself when every column
// has the same width, otherwise on the columns mapped onto [0, 1] (a fixed per-row map); returns
// the mean of the clipped data (noise added to the integer sums on rank 0).
Vector noisy_clipped_mean(const ConstMatrixRef& X, std::int64_t n, const Bounds& b,
                          const BoundedPlan& p, int threads, Communicator& comm, Rng& rng,
                          double& noise_unit) {
  const Vector width = b.hi - b.lo;
  if ((width.array() == width[0]).all()) {
    const QuantisedSum qs = quantised_clipped_sum(X, b.lo, width[0], threads, comm, n);
    noise_unit = p.noise_scale() / (static_cast<double>(n) * qs.quantum);
    return qs.to_mean(on_root(comm, [&] { return p.apply(qs.sums, rng); }), n);
  }
  ColumnUnits u{b.lo, width, false, Vector(), 0};
  const RowMatrix W = to_units(X, u);
  const QuantisedSum qs = quantised_clipped_sum(W, Vector::Zero(X.cols()), 1.0, threads, comm, n);
  noise_unit = p.noise_scale() / (static_cast<double>(n) * qs.quantum);
  return from_units(qs.to_mean(on_root(comm, [&] { return p.apply(qs.sums, rng); }), n), u);
}

// The stated error's failure probabilities: the noise (split over columns), and the clipped
// fraction (the private count's upper bound, or the estimated bounds' rank guarantee).
constexpr double kNoiseBeta = 0.05, kClipBeta = 0.05;  // kClipBeta: ClipBoundsOptions::beta

// diagnostics["stated_error"] (docs/proofs/mean.md §5): per column, with probability >= 1 -
// kNoiseBeta - kClipBeta, |estimate - the mean of the column winsorised at [lo - w, hi + w]| <=
// noise + far w. A row outside [lo, hi] moves that mean by at most w / n; a row beyond the
// widened range is counted at its end, so this bounds no distance to the column's own mean.
void state_winsorised_error(nlohmann::json& diag, const Bounds& b, double far, double noise_unit,
                            bool laplace) {
  const auto d = static_cast<double>(b.lo.size());
  const double z = laplace ? std::log(d / kNoiseBeta) : standard_normal_quantile(1 - kNoiseBeta / (2 * d));
  std::vector<double> radius, noise, clipping;
  nlohmann::json range = nlohmann::json::array();
  for (Eigen::Index j = 0; j < b.lo.size(); ++j) {
    const double w = b.hi[j] - b.lo[j];
    noise.push_back(z * noise_unit * w);
    clipping.push_back(far * w);
    radius.push_back(noise.back() + clipping.back());
    range.push_back({b.lo[j] - w, b.hi[j] + w});
  }
  diag["stated_error"] = {
      {"radius", radius}, {"confidence", 1 - kNoiseBeta - kClipBeta}, {"noise_term", noise},
      {"clipping_term", clipping}, {"clipped_fraction_upper", far}, {"winsorised_at", range},
      {"model", "none (not robust)"},
      {"meaning", "per column, |estimate - truth| <= radius with probability >= confidence, where "
                  "truth is the mean of the column with every value beyond winsorised_at (the "
                  "bounds widened by their width on each side) counted at that end: the column's "
                  "own mean only when no row lies that far. The clipping term is a fraction of "
                  "rows (clipped_fraction_upper) times the width: it does not bound how far the "
                  "rows beyond winsorised_at are"}};
}

}  // namespace

Reliability planned_bounds_reliability(std::int64_t n, std::int64_t d,
                                       const BoundedMeanOptions& o) {
  const BoundedPlan p = plan_bounded(n, d, o);
  return planned_reliability(clip_options(p.aux.loss, 1, nullptr), static_cast<std::size_t>(d),
                             static_cast<double>(n), "--bounds");
}

// validate -> plan -> charge -> (bounds) -> clipped sum -> noise -> seal.
Release<Vector> bounded_mean(const ConstMatrixRef& X, const BoundedMeanOptions& given, Rng& rng,
                             Budget* budget) {
  validate(given, X.cols());
  Communicator& comm = comm_or_single(given.run.comm);
  const std::int64_t n = mean_detail::guarded_rows(
      X, comm, fingerprint_of("bounded", given, X.cols()), "the bounded mean's options and column count",
      given.run.threads);
  nlohmann::json diag = {{"mechanism", given.privacy.delta == 0 ? "laplace" : "gaussian"},
                         {"sum_quantum", sum_quantum(n)}, {"robust", false}};
  BoundedMeanOptions o = given;
  if (!o.bounds) {  // the bounds' share: given, or planned from n, d and the target
    const ShareChoice share = resolve_share(o, [&](const BoundedMeanOptions& at) {
      return planned_bounds_reliability(n, X.cols(), at);
    }, SharePolicy{.cap = kBoundsShareCap});
    diag["scale_share"] = share.stated;
    if (share.abstain)
      return abstain_before_charging(o.privacy, Accountant::basic, o.run.noise, budget, rng,
                                     *share.abstain, diag);
  }
  const BoundedPlan p = plan_bounded(n, X.cols(), o);
  ReleaseBudget account(o.privacy.loss(), Accountant::basic, budget);
  all_or_none(comm, [&] { account.charge(p.ledger()); });  // the budget lives on rank 0
  SealFacts facts(true);  // docs/proofs/mean.md
  facts.noise = o.run.noise;
  Bounds b;
  double far = 1;  // the fraction of rows the bounds may clip (1 when nothing says otherwise)
  if (o.bounds) {
    b = supplied_bounds(*o.bounds, X.cols());
    if (p.aux.clip_count)
      mean_detail::report_clipped(*p.aux.clip_count, X, b.lo, b.hi, n, 0.01, "bounds", comm, rng,
                                 diag);
    if (diag.contains("clipped")) {  // its upper confidence bound at 1 - kClipBeta
      const auto& c = diag["clipped"];
      far = (c["rows_noisy"].get<double>() +
             c["noise_scale"].get<double>() * std::log(1 / kClipBeta)) / static_cast<double>(n);
    }
  } else {
    // The layer's entries claim their planned places (the plan charged them with the sum's).
    const ClipBounds est = private_clip_bounds(
        X, clip_options(p.aux.loss, o.run.threads, comm.size() > 1 ? &comm : nullptr), account,
        rng);
    diag["bounds_estimate"] = est.diagnostics();
    const Reliability r = reliability(est, "--bounds");
    if (!r.usable) {
      facts.abstained = r.reason();
      return seal(Vector{}, account, facts, rng, diag);
    }
    b.lo = est.lo();
    b.hi = est.hi();
    // Each side leaves out at most coverage/2 of the rows plus its rank error (w.p. 1 - beta,
    // the default kClipBeta).
    far = est.coverage + 2 * est.rank_error / est.n;
  }
  diag["bounds_lo"] = to_std(b.lo);
  diag["bounds_hi"] = to_std(b.hi);
  double noise_unit = 0;
  const Vector mean = noisy_clipped_mean(X, n, b, p, o.run.threads, comm, rng, noise_unit);
  diag["noise_scale"] = to_std(noise_unit * (b.hi - b.lo));
  state_winsorised_error(diag, b, std::min(far, 1.0), noise_unit, o.privacy.delta == 0);
  return seal(mean, account, facts, rng, diag);
}

}  // namespace dpstats
