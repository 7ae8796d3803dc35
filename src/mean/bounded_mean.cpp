// The bounded mean (mean/bounded_mean.hpp; docs/proofs/mean.md §5).
#include "dpstats/mean/bounded_mean.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/mean/clipped_sum.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/scale/clip_bounds.hpp"
#include "dpstats/seam.hpp"
#include "robust_mean_core.hpp"
#include "ranks_internal.hpp"

namespace dpstats {
namespace {

using namespace prime_detail;

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

// What every rank must pass alike (the guard before the first collective): the options that
// shape the release, in exact (hex) form, and the column count.
std::string fingerprint(const BoundedMeanOptions& o, Eigen::Index d) {
  using mean_ranks::exact;
  std::string f = fmt::format("bounded d={} eps={} delta={} share={} check={} noise={} bounds=", d,
                              exact(o.privacy.epsilon), exact(o.privacy.delta),
                              exact(o.scale_share.value_or(0)), exact(o.clip_check_share),
                              static_cast<int>(o.run.noise));
  if (o.bounds)
    for (double b : *o.bounds) f += exact(b) + ",";
  return f;
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
  double scale() const { return laplace ? laplace->scale() : gaussian->sigma(); }
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
    noise_unit = p.scale() / (static_cast<double>(n) * qs.quantum);
    return qs.to_mean(on_root(comm, [&] { return p.apply(qs.sums, rng); }), n);
  }
  ColumnUnits u{b.lo, width, false, Vector(), 0};
  const RowMatrix W = to_units(X, u);
  const QuantisedSum qs = quantised_clipped_sum(W, Vector::Zero(X.cols()), 1.0, threads, comm, n);
  noise_unit = p.scale() / (static_cast<double>(n) * qs.quantum);
  return from_units(qs.to_mean(on_root(comm, [&] { return p.apply(qs.sums, rng); }), n), u);
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
  const std::int64_t n = mean_ranks::guarded_rows(
      X, comm, fingerprint(given, X.cols()), "the bounded mean's options and column count",
      given.run.threads);
  nlohmann::json diag = {{"mechanism", given.privacy.delta == 0 ? "laplace" : "gaussian"},
                         {"sum_quantum", sum_quantum(n)}, {"robust", false}};
  BoundedMeanOptions o = given;
  if (!o.bounds) {  // the bounds' share: given, or planned from n, d and the target
    const ShareChoice share = resolve_share(o, [&](const BoundedMeanOptions& at) {
      return planned_bounds_reliability(n, X.cols(), at);
    });
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
      mean_ranks::report_clipped(*p.aux.clip_count, X, b.lo, b.hi, n, 0.01, "bounds", comm, rng,
                                 diag);
    if (diag.contains("clipped")) far = diag["clipped"]["fraction"].get<double>();
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
    // Each side leaves out at most coverage/2 of the rows plus its rank error (w.p. 1 - beta).
    far = est.coverage + 2 * est.rank_error / est.n;
  }
  diag["bounds_lo"] = to_std(b.lo);
  diag["bounds_hi"] = to_std(b.hi);
  double noise_unit = 0;
  const Vector mean = noisy_clipped_mean(X, n, b, p, o.run.threads, comm, rng, noise_unit);
  diag["noise_scale"] = to_std(noise_unit * (b.hi - b.lo));
  // In units of the bounds' width: each clipped row moves the mean by at most (hi − lo)/n.
  ColumnUnits width;
  width.location = Vector::Zero(X.cols());
  width.scale = b.hi - b.lo;
  prime_detail::state_error(diag, width, std::min(far, 1.0), noise_unit, n, 0.1,
                            "none (not robust): the rows outside the bounds (counted privately) "
                            "may each move the mean by the bounds' width",
                            o.privacy.delta == 0);
  return seal(mean, account, facts, rng, diag);
}

}  // namespace dpstats
