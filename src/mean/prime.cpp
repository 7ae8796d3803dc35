// PRIME driver (docs/proofs/mean.md and the practical profile of docs/results/prime.md). See
// include/dpstats/mean/prime.hpp for the two profiles; the privacy argument is in
// docs/results/prime.md ("Privacy argument") and summarised next to each release below.
#include "dpstats/mean/prime.hpp"

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <sys/mman.h>

#include <cstdlib>
#include <memory>
#include <optional>

#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/dp_mean.hpp"
#include "dpstats/mean/robust.hpp"
#include "dpstats/mean/units.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/histogram.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/mechanisms/range.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/composition.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/privacy/composite.hpp"
#include "robust_mean_core.hpp"
#include "prime_kernels.hpp"
#include "ranks_internal.hpp"
#include "prime_plan.hpp"

namespace dpstats {
namespace {

using namespace mean_detail;

// Practical fallback (not an abstention): DP Mean at the same target, units and budget, its
// units checked against the declared corrupted fraction. Its share is the caller's (`given`), or
// planned by DP Mean itself: PRIME's planned share is not DP Mean's, and DP Mean's own plan
// abstains before charging when no share makes its units usable (issue 27 case 7). When DP Mean
// abstains too, nothing was released: the reason says both, and no "fallback" is claimed.
Release<Vector> fallback_dp_mean(const ConstMatrixRef& X, const PrimeOptions& o,
                                 std::optional<double> given, const nlohmann::json& diag, Rng& rng,
                                 Budget* budget, PrimeTrace* trace) {
  DpMeanOptions dm;
  dm.privacy = o.privacy;
  dm.run = o.run;
  dm.alpha = o.alpha;
  dm.scale = o.scale;
  dm.scale_share = given;
  dm.clip_check_share = o.clip_check_share;
  dm.failure_probability = o.failure_probability;
  Release<Vector> fb = dp_mean(X, dm, rng, budget);
  fb.diagnostics["profile"] = diag["profile"];
  fb.diagnostics["feasibility"] = diag["feasibility"];
  if (fb.status == Status::ok) {
    fb.diagnostics["fallback"] = "dp-mean";
  } else {
    fb.diagnostics["abstained"] = fmt::format(
        "PRIME's filter is predicted to be noise-dominated at this n, d and budget ({}), and its "
        "fallback DP Mean abstained: {}",
        diag["feasibility"].value("reason", ""), fb.diagnostics["abstained"].get<std::string>());
  }
  if (trace) trace->stop_reason = "fallback to DP Mean";
  return fb;
}

// The robust entry's choice (mean/robust.hpp): the units step's private count of the rows beyond
// kTailRadius scales against what each clean model allows. PRIME when the sub-Gaussian model's
// allowance holds for every column, PRIME-ht when only the bounded-covariance one does, neither
// (the abstention reason) otherwise. Stated in diag["robust"].
std::optional<bool> choose_heavy_tailed(const ColumnUnits& u, double alpha, nlohmann::json& diag,
                                        std::optional<std::string>& abstained) {
  const auto sub = tail_check(u, CleanModel::sub_gaussian, alpha);
  const auto ht = tail_check(u, CleanModel::bounded_covariance, alpha);
  diag["robust"] = {
      {"tail_fraction", to_std(u.tail_fraction)},
      {"tail_radius_scales", kTailRadius},
      {"allowed_sub_gaussian", tail_allowance(CleanModel::sub_gaussian, alpha, u.tail_noise)},
      {"allowed_bounded_covariance", tail_allowance(CleanModel::bounded_covariance, alpha, u.tail_noise)},
      {"rule", "prime when every column's private fraction of rows beyond 3 scales is within the "
               "sub-Gaussian allowance, prime-ht when only within the bounded-covariance one"}};
  if (!sub || !ht) diag["robust"]["chosen"] = sub ? "prime-ht" : "prime";
  if (!sub) return false;
  if (!ht) return true;
  abstained = *ht;
  return std::nullopt;
}

// The planned entries of `p` but its auxiliary step's (the units, which the tail test reads).
Ledger method_entries(const Plan& p) {
  const Ledger all = p.ledger();
  return Ledger(all.begin() + static_cast<std::ptrdiff_t>(p.aux.entries.size()), all.end());
}

constexpr const char* kChosenMethod = "the method the tail test chose (PRIME or PRIME-ht)";

// The most either method's entries spend (zCDP rho): the robust entry's method stage, planned
// before the tail test reads the data, so its cost does not depend on the choice.
PrivacyLoss method_maximum(const Plan& p, const Plan& p_ht, const PrivacyLoss& target) {
  PrivacyLoss most = PrivacyLoss::zcdp(0);  // rho, and the delta of approximate entries
  for (const Plan* q : {&p, &p_ht}) {
    Budget probe(target, Accountant::zcdp);
    for (const auto& e : method_entries(*q)) probe.spend(e);
    const PrivacyLoss spent = probe.spent();
    most.rho = std::max(most.rho, spent.rho);
    most.delta = std::max(most.delta, spent.delta);
  }
  return most;
}

// validate -> plan -> charge -> (units) -> front end -> filter -> final mean -> seal. With
// `by_tail` (the robust entry): the plan charges the units and the larger of the two methods'
// stages at once, before any noise; the units are estimated, the tail test picks PRIME or
// PRIME-ht, and that method's entries, spent into the planned stage, claim its place before its
// front end draws.
Release<Vector> prime_release(const RowsView& view, PrimeOptions o, Rng& rng, Budget* budget,
                              PrimeTrace* trace, bool by_tail) {
  const ConstMatrixRef& X = view.matrix();
  Communicator& comm = comm_or_single(o.run.comm);
  const std::int64_t d = X.cols();
  std::int64_t n = X.rows();
  if (comm.size() > 1) {
    validate_robust(o);
    n = mean_detail::guarded_rows(X, comm, fingerprint_of("prime", o, d),
                                 "PRIME's options and column count", o.run.threads);
  }
  validate(o, n, d);
  require(n >= 16, fmt::format("PRIME needs n >= 16 rows, got {}", n));
  require(n < (std::int64_t{1} << 32), "PRIME needs n < 2^32 rows");
  require(!by_tail || (!o.scale && o.profile == Profile::practical),
          "the robust entry runs the practical profile on the estimated scale: scale and profile "
          "do not apply");
  // The one finiteness check (the reader's, or here; with more ranks guarded_rows made it): the
  // units and the front end read the rows through a view that carries it.
  std::optional<CheckedRows> checked;
  if (comm.size() == 1 && !view.checked()) checked.emplace(X);
  const RowsView rows = comm.size() > 1 ? RowsView(X) : checked ? RowsView(*checked) : view;
  const bool off = trace && trace->noiseless;
  std::optional<ShareChoice> share;  // the units' share: given, or planned from n, d, the target
  const std::optional<double> given_share = o.scale_share;
  if (!o.scale) share = resolve_share(o, units_verdict(n, d));
  if (share && share->abstain)
    return abstain_before_charging(
        o.privacy, o.profile == Profile::practical ? Accountant::zcdp : Accountant::basic,
        o.run.noise, budget, rng, *share->abstain, {{"scale_share", share->stated}});
  // Feasibility from public parameters only (docs/proofs/mean.md); practical falls back to DP Mean.
  const PrimeFeasibility feas = prime_feasibility(n, d, o);
  Plan p = make_plan(n, d, o);
  nlohmann::json diag = plan_diagnostics(p, feas);
  if (share) diag["scale_share"] = share->stated;
  if (o.profile == Profile::practical && o.fallback && !feas.feasible)
    return fallback_dp_mean(X, o, given_share, diag, rng, budget, trace);

  ReleaseBudget account(o.privacy.loss(), p.profile == Profile::practical ? Accountant::zcdp
                                                                          : Accountant::basic,
                        budget);
  SealFacts facts = robust_facts(o.run.noise, off, diag);
  const ColumnUnits* units = nullptr;
  std::optional<ColumnUnits> chosen_units;
  if (!by_tail) {
    // The whole plan, before any noise is drawn; the budget lives on rank 0.
    all_or_none(comm, [&] { account.charge(p.ledger()); });
  } else {
    PrimeOptions ht = o;
    ht.heavy_tailed = true;
    const Plan p_ht = make_plan(n, d, ht);
    const PrivacyLoss stage = method_maximum(p, p_ht, o.privacy.loss());
    Ledger plan = p.aux.entries;
    plan.push_back(stage_entry(stage, kChosenMethod));
    all_or_none(comm, [&] { account.charge(plan); });
    chosen_units = units_step(rows, p.aux, std::nullopt, o.alpha, 4, o.run.threads, account, rng,
                              diag, facts.abstained, comm.size() > 1 ? &comm : nullptr);
    std::optional<bool> heavy;
    if (chosen_units) heavy = choose_heavy_tailed(*chosen_units, o.alpha, diag, facts.abstained);
    if (!heavy) return seal(Vector{}, account, facts, rng, diag);
    if (*heavy) {
      o = ht;
      p = p_ht;
      diag.update(plan_diagnostics(p, prime_feasibility(n, d, o)));
    }
    Budget ran(stage, Accountant::zcdp);
    for (const auto& e : method_entries(p)) ran.spend(e);
    all_or_none(comm, [&] { account.claim(stage_entry(ran, kChosenMethod)); });
    units = &*chosen_units;
  }
  // Rows beyond the corrupted fraction clipped: the supplied scale bites (the ball keeps clean
  // rows but for a fraction ζ/(2n) each).
  const FrontResult fr = run_front(rows, p, p.aux, o.scale, o.alpha, o.alpha + 0.01, o.run.threads,
                                   off, account, rng, diag, &comm, units);
  if (fr.abstained) {
    facts.abstained = *fr.abstained;
    return seal(Vector{}, account, facts, rng, diag);
  }
  return filter_and_seal(X, o, p, fr, account, facts, diag, rng, trace, comm, off);
}

}  // namespace

Release<Vector> prime(const RowsView& X, const PrimeOptions& o, Rng& rng, Budget* budget,
                      PrimeTrace* trace) {
  return prime_release(X, o, rng, budget, trace, false);
}

Release<Vector> robust_mean(const RowsView& X, const PrimeOptions& o, Rng& rng,
                            Budget* budget) {
  Release<Vector> r = prime_release(X, o, rng, budget, nullptr, true);
  r.diagnostics["method"] = "robust";
  // The units' reliability advises "give --scale", which the robust entry refuses (its tail test
  // reads the estimated units): `mean --alpha 0.05 --scale 3` was an error. Say where it applies.
  if (r.status != Status::ok) {
    nlohmann::json& why = r.diagnostics["abstained"];
    if (why.get<std::string>().find("--scale") != std::string::npos)
      why = why.get<std::string>() +
            " (--scale applies to --method prime, or prime-ht for a heavy clean tail; the robust "
            "entry estimates the units its tail test reads)";
  }
  return r;
}

}  // namespace dpstats
