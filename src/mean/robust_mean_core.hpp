// Internal pieces shared by the robust-mean drivers (PRIME, PRIME-ht, the private filter;
// not installed): numeric helpers, the release wrapper Mech, the filter state (processed data,
// current set, exact Gram matrix), and the front end (private range -> private medians ->
// clipping and quantisation) of docs/proofs/mean.md and the practical addendum.
#pragma once
#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/prime.hpp"
#include "dpstats/mean/units.hpp"
#include "dpstats/exact/exact_sum.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/mechanisms/range.hpp"
#include "dpstats/mechanisms/range_ht.hpp"
#include "dpstats/options.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/privacy/composition.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/scale/share.hpp"
#include "dpstats/seam.hpp"
#include "clipped_rows.hpp"

namespace dpstats::mean_detail {

constexpr double kUnit = 0x1p-53;  // unit roundoff
constexpr int kMedianHalfSteps = 40;   // private median grid x̄ ± 4σ in steps of 0.1σ
constexpr double kMedianStep = 0.1;

// The relative floating-point margin on the sensitivities of λ, ψ, M and the means: the
// computed statistics differ from the exact ones by at most 64(d+1)²·u·D² (exact Gram matrix,
// O(d u) rounding in forming M, the backward error of the symmetric eigensolver), so each
// sensitivity grows by twice that. See docs/results/prime.md.
inline double fp_margin(std::int64_t n, std::int64_t d) {
  const double dd = static_cast<double>(d + 1);
  return 1 + 128 * dd * dd * kUnit * static_cast<double>(n);
}

// floor for |x| < 2^62 without a libm call (baseline x86-64 has no SSE4.1 rounding).
inline double fast_floor(double x) {
  const double t = static_cast<double>(static_cast<std::int64_t>(x));
  return t > x ? t - 1 : t;
}
// Round to nearest (ties to even) for |x| <= 2^51: the exact sum's rounding (exact::nearest).
inline double fast_round(double x) { return exact::nearest(x); }

// The data passes' grain: ranges of at least 8192 rows (the library's parallel_ranges).
constexpr std::int64_t kRowGrain = 8192;
// How many parts parallel_ranges cuts `count` rows into on `threads` threads.
inline int used_parts(std::int64_t count, int threads) {
  return static_cast<int>(std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(1, count / kRowGrain)));
}

inline std::vector<double> to_std(const Vector& v) { return {v.data(), v.data() + v.size()}; }


struct Mech {  // a scalar or vector release: Gaussian (both profiles) or Laplace (paper)
  std::optional<GaussianMechanism> g;
  std::optional<LaplaceMechanism> l;
  double noise_scale() const { return g ? g->sigma() : l->noise_scale(); }
  double apply(double v, Rng& rng, bool off) const {
    if (off) return v;
    return g ? g->apply(v, rng) : l->apply(v, rng);
  }
  Vector apply(const Vector& v, Rng& rng, bool off) const {
    if (off) return v;
    return g ? g->apply(v, rng) : l->apply(v, rng);
  }
  LedgerEntry entry(std::string purpose, int count) const {
    LedgerEntry e = g ? g->ledger_entry(std::move(purpose)) : l->ledger_entry(std::move(purpose));
    e.count = count;
    return e;
  }
};


inline Mech gaussian_rho(double sens, double rho, std::size_t dim, NoiseMode mode) {
  Mech m;
  m.g.emplace(GaussianMechanism::from_rho(sens, rho, dim, mode));
  return m;
}
inline Mech gaussian_ed(double sens, double eps, double delta, std::size_t dim, NoiseMode mode) {
  Mech m;
  m.g.emplace(GaussianMechanism::from_epsilon_delta(sens, eps, delta, dim, mode));
  return m;
}
inline Mech laplace(double sens, double eps, NoiseMode mode) {
  Mech m;
  m.l.emplace(sens, eps, 1, mode);
  return m;
}

// Quantisation step: the power of two q with |coordinate| / q <= 2^bits, where n·4^bits <= 2^53
// keeps the Gram matrix exact (prime_kernels.hpp).
inline double quantum_for(double bound, std::int64_t n) {
  const int nb = static_cast<int>(std::ceil(std::log2(static_cast<double>(n) + 1)));
  const int bits = std::min(15, (53 - nb) / 2);
  require(bits >= 8, fmt::format("n = {} is too large for PRIME's exact Gram matrix", n));
  int e = 0;
  std::frexp(bound, &e);  // bound < 2^e
  return std::ldexp(1.0, e - bits);
}

// State of the filter: the processed data Z (σ units, centred on the clipping centre, on the
// grid qZ; recomputed from the caller's data on every read, clipped_rows.hpp: no n x d copy), the
// current set S, its exact Gram matrix and sum.
// ---------------------------------------------------------------------------------------------
struct FilterState {
  // n rows (d columns: the front end sets Z from the data's view).
  FilterState(std::int64_t n, std::int64_t /*d*/) { S.reserve(static_cast<std::size_t>(n)); }
  ClippedRows Z;  // set by front_end
  std::vector<std::uint32_t> S;
  std::vector<double> G;  // row-major d x d, upper triangle
  Vector s;
  int threads = 1;
  // Rows held by several ranks (the private filter; null: this process alone): S, Z are this
  // rank's rows, G and s the exact sums over every rank's S, set_all the size of the union.
  Communicator* comm = nullptr;
  std::int64_t set_all = 0;
  double q = 0;  // the grid step of Z (G / q² and s / q are integers)

  // |S| over every rank.
  double set_size() const { return static_cast<double>(comm ? set_all : std::ssize(S)); }

  // M(S) = (1/n) Σ_S (z − μ(S))(z − μ(S))ᵀ as a full symmetric matrix.
  Matrix M(std::int64_t n) const {
    const auto d = Z.cols();
    const double m = set_size();
    Matrix out(d, d);
    for (Eigen::Index a = 0; a < d; ++a)
      for (Eigen::Index c = a; c < d; ++c) {
        const double v = (G[a * d + c] - s[a] * s[c] / m) / static_cast<double>(n);
        out(a, c) = v;
        out(c, a) = v;
      }
    return out;
  }
  Vector shrink_mean(double floor_count) const {
    return s / std::max(set_size(), floor_count);
  }
};

// ---------------------------------------------------------------------------------------------
// The front end: private coarse range, then (optionally) private coordinate medians on a grid
// of 0.1σ over x̄ ± 4σ, then the projection of every row onto a ball (radius r) or box
// (half-side r) around that centre, in σ units, quantised onto the grid qZ (exact Gram).
// ---------------------------------------------------------------------------------------------
enum class ClipShape { ball, box };
struct ClipPlan {
  ClipShape shape = ClipShape::ball;
  RangeOptions range;          // coarse q_range (range.sigma is in data units, set by the caller)
  EpsilonDelta range_per;      // its per-coordinate budget
  LedgerEntry range_entry;
  std::optional<RangeHtOptions> range_ht;  // set: q_range-ht (docs/proofs/mean.md) instead of q_range
  double median_eps = 0;       // > 0: private coordinate medians (per coordinate ε)
  double radius = 0;           // ball radius or box half-side (σ units)
  double q = 0;                // quantisation step (σ units, a power of two)
  double region = 0;           // after quantisation: ball radius r' or box half-side r + q/2
  double D = 0;                // diameter of the clipping region (σ units)
  bool bounded_covariance = false;  // the clean model: Σ ⪯ I (PRIME-ht), else sub-Gaussian
};

// Runs range (and medians), sets st.Z to the clipped, quantised rows, S = [n], G and s;
// returns the clipping centre in scale units, or std::nullopt when the range step abstained
// (`abstained` says why when the range was released but lies beyond what the bins resolve).
// X is the data in scale units, read through a view (units_view, mean/units.hpp): the range
// bins and the median grid are in those units, and st.Z keeps the view (the caller's data must
// outlive st). With st.comm set, X holds this rank's rows: the histograms, counts, G and s are
// merged exactly over ranks and the noisy values (range or q_range-ht, medians) drawn on rank 0.
std::optional<Vector> front_end(const AffineRows& X, const ClipPlan& c, Rng& rng, int threads,
                                FilterState& st, std::int64_t& clipped,
                                std::optional<std::string>& abstained);

// The practical ball: shape, radius, q, region and D from public parameters (c.median_eps set);
// returns the public bound on the private medians' error (σ units). ht: PRIME-ht's radius.
double practical_ball(ClipPlan& c, std::int64_t n, std::int64_t d, double alpha, double zeta,
                      bool ht);

// The quantised ball's radius r': a row clipped to radius r by the computed norm (off by up to
// (d/2 + 2)·2^-53 relative for any summation order, plus the scaling's roundings; the
// (d + 16)·2^-53 term covers both) then moves by at most q√d/2 when rounded to the grid. The
// 10^-12 is the margin this had before the d-dependent term.
inline double ball_region(double radius, double q, double d) {
  return radius * (1 + 1e-12 + (d + 16) * 0x1p-53) + q * std::sqrt(d) / 2;
}

// Clamps a centre into the clipping region (docs/errata.md D10).
inline Vector clamp_region(Vector v, const ClipPlan& c) {
  if (c.shape == ClipShape::ball) {
    const double norm = v.norm();
    if (norm > c.region) v *= c.region / norm;
  } else {
    v = v.cwiseMax(-c.region).cwiseMin(c.region);
  }
  return v;
}

// The plan cache's key: n, d and every field the options' visit_fields lists (the ranks'
// fingerprint), so a field added there cannot be left out of the key; a per-column data scale
// enters only as supplied or not (the plan reads the scale units, never the values). A field
// the plan does not read only costs a rebuild.
template <class Options>
std::string plan_key(std::int64_t n, std::int64_t d, const Options& o) {
  Fingerprint key("plan");
  key("n", n);
  key("d", d);
  visit_fields(o, [&](std::string_view name, const auto& value) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>,
                                 std::optional<std::vector<double>>>)
      key(name, value.has_value());
    else
      key(name, value);
  });
  return key.text();
}

// The plans of PRIME and the filter depend on public parameters only and cost ~1 ms
// (calibrations, a χ² quantile); audits and experiments repeat them with the same (n, d, options),
// so the last one is kept per thread, under plan_key.
template <class Plan, class Options, class Build>
Plan cached_plan(std::int64_t n, std::int64_t d, const Options& o, Build build) {
  thread_local std::string last;
  thread_local std::optional<Plan> plan;
  std::string key = plan_key(n, d, o);
  if (!plan || last != key) {
    plan = build();
    last = std::move(key);
  }
  return *plan;
}

// The budget the plan gives its auxiliary step: the private units (scale absent) or the
// private clipped-row count (scale supplied, clip_check_share > 0). A fraction `share` of the
// total is set apart; the algorithm's own releases get (1 − share) of theirs.
struct AuxShare {
  bool estimate_units = false;
  double share = 0;  // 0: no auxiliary step
};
// An estimated scale needs its share resolved first (resolve_share): given or planned.
inline AuxShare aux_share(bool scale_supplied, const std::optional<double>& scale_share,
                          double clip_check_share) {
  if (scale_supplied) return AuxShare{false, clip_check_share};
  if (!scale_share) throw std::logic_error("aux_share: the scale share was not resolved");
  return AuxShare{true, *scale_share};
}

// The scale share of a release that estimates its scale or bounds (issue 27 finding 2;
// docs/proofs/scale.md §9): the caller's, or planned (scale/share.hpp) from public values only
// by `verdict(options)`, the rule's verdict on the estimate's rank errors at options.scale_share.
// Sets o.scale_share; `stated` is diagnostics.scale_share; `abstain` is set when the plan finds
// no usable share (the release then abstains before anything is charged or drawn). `policy`: the
// plan's floor, cap and margin (the bounded mean caps at stat's 0.6: the same clipping bounds).
struct ShareChoice {
  nlohmann::json stated;
  std::optional<std::string> abstain;
};
template <class Options, class Verdict>
ShareChoice resolve_share(Options& o, Verdict verdict, const SharePolicy& policy = {}) {
  if (o.scale_share) return {{{"value", *o.scale_share}, {"source", "given"}}, std::nullopt};
  const PlannedShare p = plan_share([&](double share) {
    Options at = o;
    at.scale_share = share;
    return verdict(at);
  }, policy);
  o.scale_share = p.share;
  ShareChoice c{p.json(), std::nullopt};
  if (!p.usable)
    c.abstain = planned_abstention(p);
  return c;
}

// The release of an abstention decided by the plan: nothing charged, nothing drawn.
Release<Vector> abstain_before_charging(const PrivacyTarget& target, Accountant accountant,
                                        NoiseMode noise, Budget* budget, Rng& rng,
                                        std::string reason, nlohmann::json diag);

// The auxiliary step's mechanism and entries: the scale layer's (units) or one count.
struct AuxPlan {
  AuxShare share;
  PrivacyLoss loss;        // its loss (zcdp rho or pure epsilon)
  double remaining = 0;    // what the method proper gets (rho or epsilon)
  Ledger entries;          // charged with the plan
  std::optional<Mech> clip_count;  // scale supplied: noisy count of the rows the front end clips
};
// practical (zcdp): rho share; paper (basic): epsilon share.
AuxPlan plan_aux(const AuxShare& a, bool zcdp, double total, std::int64_t d, double alpha,
                 NoiseMode mode);

// The checks every filter-based robust mean shares (PRIME, PRIME-ht, the private filter), before
// anything is read: the target (δ > 0), run control, α, the failure probability, the top-k
// multiplier and the stopping constant C. (All three run on several ranks.)
template <class Options>
void validate_robust(const Options& o) {
  validate(o.privacy, DeltaRule::positive);
  validate(o.run);
  require(o.alpha > 0 && o.alpha <= 0.25,
          fmt::format("alpha must be in (0, 0.25], got {}", o.alpha));
  require(o.failure_probability > 0 && o.failure_probability < 1,
          fmt::format("failure_probability must be in (0, 1), got {}", o.failure_probability));
  check_option(find_option("mean", "topk_multiplier"), o.topk_multiplier);  // declared range
  require(o.C > 0 && std::isfinite(o.C), fmt::format("C must be > 0, got {}", o.C));
}

// The seal facts of a robust mean (noise mode; the noiseless test hook, stated in diagnostics).
inline SealFacts robust_facts(NoiseMode noise, bool off, nlohmann::json& diag) {
  SealFacts facts(true);  // docs/proofs/mean.md
  facts.noise = noise;
  facts.noiseless = off;
  if (off) diag["noiseless"] = true;
  return facts;
}

// Removes the rows of st.S marked in `drop` (one flag per entry of S) and downdates the exact Gram
// matrix and sum by them (prime_kernels.hpp: exact, order-free); returns how many were removed.
// With st.comm set, every rank calls it with its own flags and G, s, set_all follow the union.
std::size_t drop_rows(FilterState& st, const std::vector<char>& drop, int threads);

// G and s of rows that enter (sign 1) or leave (-1) S on this rank, added exactly over ranks
// (st.comm set): the rows' own sums, scaled to integers by the grid step, merged, then applied.
void merge_gram(FilterState& st, std::span<const std::uint32_t> rows, bool all_rows, double sign,
                int threads);

// The front end's budget, shared by PRIME and the private filter (docs/proofs/mean.md).
// Practical (addendum): q_range gets 10% of δ and 2% of ρ, the d coordinate medians 1% of ρ, after
// the auxiliary share; returns the filter's ρ, shrunk by 1e-9 so that rounding never pushes the
// sum over.
constexpr double kRangeRhoShare = 0.02, kMedianRhoShare = 0.01, kRangeDeltaShare = 0.1;
// The rho the practical front splits (the auxiliary share first): all of (epsilon, delta) but
// q_range's part of delta.
inline double practical_rho_all(const PrivacyTarget& t) {
  return epsilon_delta_to_zcdp(t.epsilon, remainder_after(t.delta, t.delta * kRangeDeltaShare));
}
template <class Plan, class Options>
double plan_practical_front(Plan& p, const Options& o) {
  const double delta_range = o.privacy.delta * kRangeDeltaShare;
  const double rho_all = practical_rho_all(o.privacy);
  p.aux = plan_aux(aux_share(o.scale.has_value(), o.scale_share, o.clip_check_share), true,
                   rho_all, p.d, o.alpha, o.run.noise);
  const double rho_total = p.aux.remaining;
  p.range.epsilon = std::sqrt(2 * kRangeRhoShare * rho_total);
  p.range.delta = delta_range;
  p.median_eps = std::sqrt(2 * kMedianRhoShare * rho_total / static_cast<double>(p.d));
  p.med = {.epsilon = p.median_eps, .sensitivity = 1, .monotone = false};
  return (1 - kRangeRhoShare - kMedianRhoShare) * rho_total * (1 - 1e-9);
}

// Paper (PRIME's Alg 9, the filter's Alg 7): κ = 1/2 (|S| >= n/2), the auxiliary share out of ε,
// then q_range with 0.01(ε, δ) and Lemma G.13's 0.9 cap. Returns the (ε, δ) left for the filter.
struct PaperRest {
  double epsilon, delta;
};
template <class Plan, class Options>
PaperRest plan_paper_front(Plan& p, const Options& o) {
  p.kappa = 0.5;
  p.aux = plan_aux(aux_share(o.scale.has_value(), o.scale_share, o.clip_check_share), false,
                   o.privacy.epsilon, p.d, o.alpha, o.run.noise);
  const double epsilon = p.aux.remaining, delta = o.privacy.delta;
  p.range.epsilon = 0.01 * epsilon;
  p.range.delta = 0.01 * delta;
  p.range.paper_cap = true;
  return {remainder_after(epsilon, p.range.epsilon), remainder_after(delta, p.range.delta)};
}

// The verdict on a robust mean's units (no scale given) at o.scale_share, n rows and d columns
// (public values only): the units' share is the practical front's rho or the paper's epsilon.
template <class Options>
Reliability robust_units_plan(std::int64_t n, std::int64_t d, const Options& o, bool practical) {
  const double total = practical ? practical_rho_all(o.privacy) : o.privacy.epsilon;
  const AuxPlan aux = plan_aux(aux_share(false, o.scale_share, 0), practical, total, d, o.alpha,
                               o.run.noise);
  return planned_units_reliability(aux.loss, d, o.alpha, n);
}

// Everything a robust mean charges, in order: auxiliary step, range, (practical) medians, then
// the filter's own entries.
template <class Plan>
Ledger front_ledger(const Plan& p, bool practical, const Ledger& filter_entries) {
  Ledger all = p.aux.entries;
  all.push_back(p.range_entry);
  if (practical) {
    LedgerEntry e = exponential_mechanism_entry(p.med, "coordinate-wise private median");
    e.count = static_cast<int>(p.d);
    all.push_back(e);
  }
  all.insert(all.end(), filter_entries.begin(), filter_entries.end());
  return all;
}

// The front end with units: the data's units (supplied, or estimated by the scale layer with the
// plan's auxiliary share), the data in those units, range, medians and clipping; with a supplied
// scale, the private count of clipped rows. `abstained` is set when the units or the range step
// abstain; then nothing else is set.
struct FrontResult {
  ColumnUnits units;
  Vector centre;  // clipping centre (scale units)
  std::unique_ptr<FilterState> state;
  std::int64_t clipped = 0;
  std::optional<std::string> abstained;
};
// `tolerated`: the clipped fraction above which the release warns (the supplied scale is
// likely too small).
// comm (not null): X is this rank's share of the rows (supplied or estimated units).
// given_units: units estimated (and tail-checked) by the caller; the units step is skipped.
FrontResult run_front(const RowsView& X, const ClipPlan& c, const AuxPlan& aux,
                      const std::optional<std::vector<double>>& scale, double alpha,
                      double tolerated, int threads, bool off, ReleaseBudget& account, Rng& rng,
                      nlohmann::json& diag,
                      Communicator* comm = nullptr, const ColumnUnits* given_units = nullptr);

// The front end's outcome in the test trace (clipping centre, radius, clipped rows).
inline void trace_front(PrimeTrace* trace, const FrontResult& fr, double radius) {
  if (!trace) return;
  trace->clip_centre = fr.centre;
  trace->clip_radius = radius;
  trace->clipped_rows = fr.clipped;
}

// The clean rows' model a robust method assumes, for its stated error and its tail check.
enum class CleanModel { sub_gaussian, bounded_covariance, none };
// The model's share of the error, in scale units, at corrupted fraction alpha: sub-Gaussian
// 3·α·sqrt(2 ln(1/α)); bounded covariance 3·sqrt(α); none 0 (docs/proofs/mean.md §7).
double model_error_units(CleanModel m, double alpha);
// The fraction of rows beyond kTailRadius scales the model allows (corruption included, with a
// slack for the count's noise): α + P_model(|x − μ| > R σ) + 0.01 + 3·noise.
double tail_allowance(CleanModel m, double alpha, double tail_noise);
// Abstention reason when an estimated column's tail is heavier than the model allows (the
// filters would treat its clean tail as corruption); nothing for supplied units or model none.
std::optional<std::string> tail_check(const ColumnUnits& u, CleanModel m, double alpha);
// diag["stated_error"]: per column, scale_j·(model + z·noise_units + z/√n) with z the normal
// quantile at 1 − β/(2d), the radius within which the release lands with probability >= 1 − β
// when the clean rows follow the model (the tail check abstains when they visibly do not).
void state_error(nlohmann::json& diag, const ColumnUnits& u, double model_units,
                 double noise_sd_units, std::int64_t n, double beta, const char* model,
                 bool laplace = false);  // laplace: noise_sd_units is a Laplace scale b

// The units step alone (shared with DP Mean, the bounded mean and exp-time): supplied or
// estimated with `aux.loss` (claiming aux.entries on `account`); on abstention the reason, with
// diag["units"] stating what ran.
// comm (not null): X is this rank's share of the rows; the estimate runs over every rank.
std::optional<ColumnUnits> units_step(const RowsView& X, const AuxPlan& aux,
                                      const std::optional<std::vector<double>>& scale,
                                      double alpha, double widen, int threads,
                                      ReleaseBudget& account, Rng& rng, nlohmann::json& diag,
                                      std::optional<std::string>& abstained,
                                      Communicator* comm = nullptr);

// The number of rows with a value outside [lower_j, upper_j] in some column j (the count behind
// the clipped-row check of a supplied bound).
std::int64_t rows_outside(const ConstMatrixRef& X, const Vector& lower, const Vector& upper);

// diag["clipped"]: the noisy count of clipped rows, its fraction and, above `tolerated`, a
// warning that the supplied bound bites.
void report_clipped(const Mech& count, std::int64_t clipped, std::int64_t n, double tolerated,
                    const char* what, bool off, Rng& rng, nlohmann::json& diag);

// Checks the units options shared by the robust means (a scale share only when given).
void check_units_options(const std::optional<std::vector<double>>& scale,
                         const std::optional<double>& scale_share, double clip_check_share,
                         Eigen::Index d);
// A given scale share: in (0, 0.5].
void check_scale_share(double scale_share);

}  // namespace dpstats::mean_detail
