// The classifier's feature map: plan, private estimate, reliability, fold (feature_map.hpp;
// docs/proofs/training.md §3).
#include "feature_map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/scale/share.hpp"
#include "dpstats/seam.hpp"

namespace dpstats::optimize {
namespace {

constexpr double kNormQuantile = 0.5;  // the global scale: the median row norm, / sqrt(d)
// The largest rank error / n (+ alpha) an estimate may have: the scale layer's central-ranks
// rule (column_scale.hpp), so that a median lands between the 0.2- and 0.8-quantiles.
constexpr double kTolerance = 0.3;
constexpr const char* kOption = "feature_scale (--feature-scale: a public scale of the features)";
constexpr const char* kOneUnit = "one_unit (--one-unit)";
constexpr double kGlobalShare = 0.05;  // the global plan's share when scale_share is absent
// The per-column plan's share: this x the smallest share that passes (within [0.1, 0.5]); 2 (the
// scale layer's) would spend twice what Fashion-MNIST's 784 pixel scales need.
constexpr double kColumnsMargin = 1.25;
// The per-column plan's slice for the count of the rows within MAD / 2 of the released location
// (one Gaussian vector, docs/proofs/training.md §3); the selections share the rest.
constexpr double kAtomSlice = 1.0 / 8;
// A column is degenerate when that count, beyond its noise bound, is above kAtomMost of the rows
// (most values at the location: an atom) or below kAtomFew (no values near the location: it sits
// in a gap, one MAD from an atom). A continuous column has 0.25-0.3 (normal 0.26, Laplace 0.29,
// uniform 0.25); docs/proofs/training.md §3.
constexpr double kAtomMost = 3.0 / 8;
constexpr double kAtomFew = 1.0 / 16;
constexpr const char* kAtomPurpose =
    "feature scale: per column, the rows within MAD/2 of the location";

NormQuantileOptions global_options(const ClassifyOptions& o, double share) {
  NormQuantileOptions q;
  q.loss = PrivacyLoss::pure(share * o.privacy.epsilon);
  q.q = kNormQuantile;
  q.neighbouring = Neighbouring::add_remove;
  q.threads = o.run.threads;
  q.comm = o.run.comm;  // every rank's row norms (the scale layer's distributed selection)
  return q;
}

// The per-column plan's zCDP rho: share x the zCDP rho of the (epsilon, delta) target.
double columns_rho(const ClassifyOptions& o, double share) {
  return share * epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta);
}

// 3d pure-DP selections sharing (1 - kAtomSlice) of the per-column plan's rho.
ScaleOptions column_options(const ClassifyOptions& o, double share) {
  ScaleOptions s;
  s.loss = PrivacyLoss::zcdp((1 - kAtomSlice) * columns_rho(o, share));
  s.neighbouring = Neighbouring::add_remove;
  s.threads = o.run.threads;
  s.comm = o.run.comm;
  return s;
}

// The d counts of the rows within MAD / 2 of the location, one Gaussian vector at kAtomSlice of
// the plan's rho: a row moves each count by at most 1, so the l2 sensitivity is sqrt(d) (add/remove
// and replace-one alike).
GaussianMechanism atom_count_mechanism(const ClassifyOptions& o, double share, Eigen::Index d) {
  return GaussianMechanism::from_rho(std::sqrt(static_cast<double>(d)),
                                     kAtomSlice * columns_rho(o, share),
                                     static_cast<std::size_t>(d), o.run.noise);
}

// The facts a planned estimate will be judged on (reliability.hpp), from the entries the scale
// layer charges for it: each selection's epsilon from its grid entry and its rank error t at the
// estimate's beta split over its events (the selections, and under add/remove the row count).
// Under add/remove the rule compares t with the count's lower confidence bound, n - margin
// (its noise at 0); t + (tolerance - alpha) x margin against n is the same test, and assess then
// names the rows that suffice, margin included. Public values only.
SelectionFacts planned_facts(const Ledger& entries, std::size_t grid_points,
                             std::size_t selections, double beta, double alpha, Eigen::Index n) {
  const LedgerEntry* count = entries.front().mechanism == "laplace" ? &entries.front() : nullptr;
  const double events = static_cast<double>(selections + (count ? 1 : 0));
  const double margin = count ? count->noise_scale * std::log(events / beta) : 0.0;
  SelectionFacts f;
  f.tolerance = kTolerance;
  f.alpha = alpha;
  f.rank_error = grid_quantile_rank_error(entries.back().loss.epsilon, grid_points, beta / events) +
                 (kTolerance - alpha) * margin;
  f.n = static_cast<double>(n);
  return f;
}

// The per-column plan at n rows: its 3d selections, judged by the rule.
Reliability assess_columns(const ClassifyOptions& o, double share, Eigen::Index n, Eigen::Index d,
                           nlohmann::json& diag) {
  const ScaleOptions s = column_options(o, share);
  static const std::size_t cells = log_grid(ScaleOptions{}.per_octave, false).size();
  const Ledger entries = private_scale_entries(s, static_cast<std::size_t>(d));
  const SelectionFacts f =
      planned_facts(entries, cells, static_cast<std::size_t>(3 * d), s.beta, s.alpha, n);
  // A dry run reports this plan's rule (its margin is inside f.rank_error).
  note_planned_check({"the per-column feature scale (the classifier's plan)", f, 0,
                      entries.back().purpose});
  diag["columns"] = {{"rank_error", f.rank_error},
                     {"rows_needed", std::ceil(f.rank_error / (kTolerance - s.alpha))}};
  return assess(f, "the per-column location and scale", kOption);
}

// The global plan: one selection at pure 7/8 x scale_share x epsilon (the rest counts the rows).
// Its rank error is proportional to 1 / (scale_share x epsilon), so `facts.epsilon` is the
// release's epsilon: assess's "epsilon >= ..." is then the release's (the count's margin aside),
// and the share that would suffice follows the same way.
Reliability assess_global(const ClassifyOptions& o, double share, Eigen::Index n,
                          nlohmann::json& diag) {
  const NormQuantileOptions q = global_options(o, share);
  static const std::size_t cells = log_grid(NormQuantileOptions{}.per_octave, true).size();
  const Ledger entries = private_norm_quantile_entries(q);
  SelectionFacts f = planned_facts(entries, cells, 1, q.beta, q.alpha, n);
  f.epsilon = o.privacy.epsilon;
  note_planned_check({"the global feature scale (the classifier's plan)", f, 0,
                      entries.back().purpose});
  const double room = kTolerance - q.alpha;
  diag["global"] = {{"rank_error", f.rank_error}, {"rows_needed", std::ceil(f.rank_error / room)}};
  return assess(f, "the feature scale (the median row norm)", kOption);
}

// A given scale_share is the per-column plan's, never the global scale's: one scale for columns
// in mm and g trains the majority class however reliable it is (issue 27 case 4: 0.44 `ok` at
// --scale-share 0.5), and nothing public tells one unit from several. When the per-column plan
// does not pass at the given share the release abstains, naming the share that would pass (up to
// the cap) or the rows. Absent, in order (public values only; share.hpp plan_share,
// docs/proofs/scale.md §9, docs/proofs/training.md §3):
//  1. per-column at a planned share: kColumnsMargin x the smallest that passes, within
//     [0.1, 0.5]. First at every share: a table in mm and g on one global scale trains the
//     majority class (issue 27: 5,130 penguin-like rows at epsilon 1 released 0.44 `ok` when the
//     global plan came before the per-column one above 0.15); columns with an atom at 0 (pixels)
//     are caught by the atom count and the spread floor (docs/proofs/training.md §3);
//  2. else, only when the caller declares one_unit, the global scale at kGlobalShare when it
//     passes (d = 4 at epsilon 1: from 3,293 to 3,627 rows). The data cannot tell one unit from
//     several, and there one scale for columns in mm and g trains the majority class with
//     status ok (3,293-3,627 penguin-like rows: 0.444), so the plan is the caller's declaration;
//  3. else unusable, naming the rows the per-column plan needs at 0.5, feature_scale and (without
//     one_unit) what one_unit would buy. The global share is never raised.
FeaturePlan given_share(const ClassifyOptions& o, Eigen::Index n, Eigen::Index d) {
  FeaturePlan p;
  p.share = *o.scale_share;
  p.scale_share = {{"value", p.share}, {"source", "given"}};
  p.reliability = assess_columns(o, p.share, n, d, p.diagnostics);
  p.source = p.reliability.usable ? FeatureSource::columns : FeatureSource::unusable;
  if (p.reliability.usable) return p;
  nlohmann::json scratch;
  PlannedShare c;  // the smallest share that passes (a dry run keeps the given share's check)
  note_checks_quietly([&] {
    c = plan_share([&](double s) { return assess_columns(o, s, n, d, scratch); });
  });
  p.reliability.would_suffice +=
      c.usable ? fmt::format(", or scale_share >= {:.2g}", c.needed)
               : fmt::format("; at scale_share {} about {} rows", format_number(c.share),
                             scratch["columns"]["rows_needed"].get<double>());
  p.reliability.would_suffice += " (a given scale_share standardises each column; one private "
                                 "scale for every column is the default's only with one_unit, "
                                 "at 0.05)";
  return p;
}

// Step 2 above (one_unit declared, the per-column plan does not pass): the global scale at
// kGlobalShare, its diagnostics beside the rows the per-column plan needs at the cap.
FeaturePlan declared_global(const ClassifyOptions& o, Eigen::Index n, Eigen::Index d) {
  FeaturePlan p;
  p.share = kGlobalShare;
  p.scale_share = {{"value", p.share}, {"source", "default"}, {"one_unit", true}};  // declared
  p.reliability = assess_global(o, p.share, n, p.diagnostics);
  p.source = p.reliability.usable ? FeatureSource::global : FeatureSource::unusable;
  if (d < 1) return p;  // classify_account's d = 0: the global scale alone
  assess_columns(o, SharePolicy{}.cap, n, d, p.diagnostics);  // the rows it needs at the cap
  if (p.reliability.usable) return p;
  p.reliability.would_suffice += fmt::format(
      "; standardising each column privately (columns in different units) needs about {} rows "
      "at this epsilon", p.diagnostics["columns"]["rows_needed"].get<double>());
  return p;
}

// The per-column plan at the planned share `c`, as `source` (columns, or unusable: its verdict).
FeaturePlan planned_columns(const ClassifyOptions& o, const PlannedShare& c, Eigen::Index n,
                            Eigen::Index d, FeatureSource source) {
  FeaturePlan p;
  p.share = c.share;
  p.scale_share = c.json();
  p.reliability = assess_columns(o, c.share, n, d, p.diagnostics);
  p.source = source;
  return p;
}

// Step 3 without one_unit: the per-column plan's verdict at the cap, and what declaring one_unit
// would buy (the global plan's rows, judged quietly: a dry run notes the plan the release has).
FeaturePlan undeclared_abstention(const ClassifyOptions& o, const PlannedShare& c,
                                  Eigen::Index n, Eigen::Index d) {
  FeaturePlan p = planned_columns(o, c, n, d, FeatureSource::unusable);
  Reliability global;
  note_checks_quietly([&] { global = assess_global(o, kGlobalShare, n, p.diagnostics); });
  p.reliability.would_suffice += fmt::format(
      ", or declare {} if every feature column is in one unit (one private scale for every "
      "column, at share 0.05, {})",
      kOneUnit,
      global.usable ? "passes at these rows"
                    : fmt::format("needs about {} rows at this epsilon",
                                  p.diagnostics["global"]["rows_needed"].get<double>()));
  return p;
}

FeaturePlan plan_estimate(const ClassifyOptions& o, Eigen::Index n, Eigen::Index d) {
  // d = 0 (classify_account without the columns): only the global plan needs no d.
  require(d >= 1 || (o.one_unit && !o.scale_share),
          "features must be >= 1 when the feature scale is estimated per column (its entries "
          "depend on d), got {}; 0 counts one global scale, which only one_unit without "
          "scale_share plans", d);
  if (d < 1) return declared_global(o, n, d);
  if (o.scale_share) return given_share(o, n, d);
  nlohmann::json scratch;
  // A dry run notes this plan at the cap (and, with one_unit, the global one: the two decide the
  // threshold).
  const PlannedShare c = plan_share([&](double s) { return assess_columns(o, s, n, d, scratch); },
                                    SharePolicy{.margin = kColumnsMargin});
  if (!c.usable) return o.one_unit ? declared_global(o, n, d) : undeclared_abstention(o, c, n, d);
  return planned_columns(o, c, n, d, FeatureSource::columns);
}

}  // namespace

FeaturePlan plan_features(const ClassifyOptions& o, Eigen::Index n, Eigen::Index d) {
  FeaturePlan p;
  if (o.feature_scale || !is_private(o.optimizer)) {
    p.reliability = Reliability::ok("the feature scale (given)");
    return p;
  }
  return plan_estimate(o, n, d);
}

Ledger feature_entries(const ClassifyOptions& o, const FeaturePlan& p, Eigen::Index d) {
  if (p.source == FeatureSource::columns) {
    Ledger l = private_scale_entries(column_options(o, p.share), static_cast<std::size_t>(d));
    l.push_back(atom_count_mechanism(o, p.share, d).ledger_entry(kAtomPurpose));
    return l;
  }
  if (p.source == FeatureSource::global)
    return private_norm_quantile_entries(global_options(o, p.share));
  return {};
}

namespace {

// One private scale s = the median row norm / sqrt(d): about unit scale per coordinate.
std::optional<FeatureMap> global_map(const ClassifyOptions& o, double share,
                                     const ConstMatrixRef& X, ReleaseBudget& account, Rng& rng,
                                     nlohmann::json& d, std::string& reason) {
  const NormQuantileOptions qo = global_options(o, share);
  const NormQuantile q = private_norm_quantile(X, qo, account, rng);
  const double s = q.value / std::sqrt(static_cast<double>(X.cols()));
  d["feature_scale"] = s;
  d["feature_scale_source"] = "private median row norm / sqrt(d) (scale layer)";
  d["feature_scale_estimate"] = q.diagnostics();
  d["feature_scale_epsilon"] = qo.loss.epsilon;
  const Reliability r = reliability(q, kOption);
  d["feature_scale_reliability"] = r.json();
  if (!r.usable) {
    reason = r.reason();
    return std::nullopt;
  }
  return FeatureMap{Vector::Zero(X.cols()), Vector::Constant(X.cols(), s)};
}

// Per column j, the rows with |x - loc_j| <= mad_j / 2 (loc, mad: released), summed over the
// ranks, then one Gaussian vector drawn by `noise` on rank 0.
Vector noisy_atom_counts(const ClassifyOptions& o, const GaussianMechanism& noise,
                         const ConstMatrixRef& X, const ScaleEstimate& est, ReleaseBudget& account,
                         Rng& rng) {
  const Vector loc = est.location();
  Vector mad(X.cols());
  for (Eigen::Index j = 0; j < X.cols(); ++j)
    mad(j) = est.columns[static_cast<std::size_t>(j)].mad;
  std::vector<std::int64_t> counts(static_cast<std::size_t>(X.cols()), 0);
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = 0; j < X.cols(); ++j)
      counts[static_cast<std::size_t>(j)] += std::abs(X(i, j) - loc(j)) <= mad(j) / 2;
  Communicator& comm = comm_or_single(o.run.comm);
  comm.allreduce_sum(counts);
  all_or_none(comm, [&] { account.claim(noise.ledger_entry(kAtomPurpose)); });
  return on_root(comm, [&] {
    Vector v(X.cols());
    for (Eigen::Index j = 0; j < X.cols(); ++j)
      v(j) = static_cast<double>(counts[static_cast<std::size_t>(j)]);
    return Vector(noise.apply(v, rng));
  });
}

// Marks degenerate every column whose noisy count is above kAtomMost x n + the noise bound, or
// below kAtomFew x n - the noise bound (n: the released row count's lower bound; the bound at
// beta / d per column and side): its location and MAD describe an atom, not a spread.
void flag_atoms(const ClassifyOptions& o, double share, const ConstMatrixRef& X, ScaleEstimate& est,
                ReleaseBudget& account, Rng& rng, nlohmann::json& d) {
  const GaussianMechanism noise = atom_count_mechanism(o, share, X.cols());
  const Vector noisy = noisy_atom_counts(o, noise, X, est, account, rng);
  const double d_over_beta = static_cast<double>(X.cols()) / est.beta;
  const double bound = noise.sigma() * std::sqrt(2 * std::log(d_over_beta)) + noise.granularity();
  const double most = kAtomMost * est.n + bound, few = kAtomFew * est.n - bound;
  for (Eigen::Index j = 0; j < X.cols(); ++j) {
    ColumnScale& c = est.columns[static_cast<std::size_t>(j)];
    if (c.status != ScaleStatus::ok || (noisy(j) <= most && noisy(j) >= few)) continue;
    c.status = ScaleStatus::degenerate;
    c.facts.degenerate = true;
    c.reason = fmt::format("{} {} of the rows lie within half the private MAD of the private "
                           "location: the MAD measures an atom, not a spread",
                           noisy(j) > most ? "more than" : "fewer than",
                           noisy(j) > most ? kAtomMost : kAtomFew);
    c.scale = 0;
    c.mad = 0;
  }
  const std::vector<double> counts(noisy.data(), noisy.data() + noisy.size());
  d["feature_atom_counts"] = {{"noisy", counts},
                              {"above", most},
                              {"below", few},
                              {"noise_bound", bound},
                              {"rule", fmt::format("degenerate when above {} x n_lower_bound + "
                                                   "noise_bound or below {} x n_lower_bound - "
                                                   "noise_bound", kAtomMost, kAtomFew)}};
}

// A spread this far below the median column's is not a scale of the column but a MAD cell in an
// atom at 0, where the log grid's cells are arbitrarily fine (the atom count's noise bound can let
// a column with ~40% of its rows at 0 through: Fashion-MNIST at share 0.27, a divisor of 3e-43).
constexpr double kSpreadFloor = 1e-6;

// The columns whose released spread cannot divide them (true at j): the degenerate ones, and
// those whose scale is below kSpreadFloor x the median scale of the others. Post-processing of
// released scales (docs/proofs/training.md §3).
std::vector<bool> unresolved_columns(const ScaleEstimate& est) {
  std::vector<double> logs;
  for (const auto& c : est.columns)
    if (c.status != ScaleStatus::degenerate) logs.push_back(std::log(c.scale));
  double floor = -std::numeric_limits<double>::infinity();
  if (!logs.empty()) {
    const auto mid = logs.begin() + static_cast<std::ptrdiff_t>(logs.size() / 2);
    std::nth_element(logs.begin(), mid, logs.end());
    floor = *mid + std::log(kSpreadFloor);
  }
  std::vector<bool> out(est.columns.size());
  for (std::size_t j = 0; j < est.columns.size(); ++j) {
    const ColumnScale& c = est.columns[j];
    out[j] = c.status == ScaleStatus::degenerate || std::log(c.scale) < floor;
  }
  return out;
}

// Per column: the private median and robust sd. A degenerate column (MAD at its resolution, e.g.
// a binary column with a majority value, or a location and MAD that describe an atom: flag_atoms)
// takes the geometric mean of the resolved columns' scales (post-processing of released values);
// every other column's estimate must be usable.
std::optional<FeatureMap> column_map(const ClassifyOptions& o, double share,
                                     const ConstMatrixRef& X, ReleaseBudget& account, Rng& rng,
                                     nlohmann::json& d, std::string& reason) {
  const ScaleOptions so = column_options(o, share);
  ScaleEstimate est = private_scale(X, so, account, rng);
  flag_atoms(o, share, X, est, account, rng, d);
  d["feature_scale_source"] = "private per-column median and robust sd (scale layer)";
  d["feature_scale_estimate"] = est.diagnostics();
  d["feature_scale_rho"] = so.loss.rho;
  // The rule on every column; an unresolved column is accepted when some column's spread was
  // resolved: it takes their scales' geometric mean.
  const std::vector<bool> unresolved = unresolved_columns(est);
  ScaleEstimate judged = est;
  double log_sum = 0;
  std::vector<std::size_t> shown;  // the unresolved columns, 1-based
  for (std::size_t j = 0; j < est.columns.size(); ++j) {
    if (est.columns[j].status == ScaleStatus::degenerate) {
      judged.columns[j].status = ScaleStatus::ok;
      judged.columns[j].facts.degenerate = false;
    }
    if (unresolved[j])
      shown.push_back(j + 1);
    else
      log_sum += std::log(est.columns[j].scale);
  }
  const std::size_t resolved = est.columns.size() - shown.size();
  const Reliability r = reliability(resolved == 0 ? est : judged, kOption);
  d["feature_scale_reliability"] = r.json();
  if (!r.usable) {
    reason = r.reason();
    return std::nullopt;
  }
  FeatureMap f{est.location(), est.scale()};
  const double fallback = std::exp(log_sum / static_cast<double>(resolved));
  for (std::size_t j = 0; j < unresolved.size(); ++j)
    if (unresolved[j]) f.divisor(static_cast<Eigen::Index>(j)) = fallback;
  if (!shown.empty()) {
    d["feature_degenerate_columns"] = shown;
    d["feature_degenerate_rule"] = "most values equal (MAD at its resolution, or the count within "
                                   "MAD/2 of the location out of bounds), or a spread over 1e6 "
                                   "times below the median column's: divided by the "
                                   "geometric mean of the resolved columns' scales";
  }
  d["feature_centre"] = std::vector<double>(f.centre.data(), f.centre.data() + f.centre.size());
  d["feature_divisor"] = std::vector<double>(f.divisor.data(), f.divisor.data() + f.divisor.size());
  return f;
}

}  // namespace

std::optional<FeatureMap> estimate_feature_map(const ClassifyOptions& o, const FeaturePlan& p,
                                               const ConstMatrixRef& X, ReleaseBudget& account,
                                               Rng& rng, nlohmann::json& d, std::string& reason) {
  d["feature_plan"] = p.diagnostics;
  if (!p.scale_share.is_null()) d["scale_share"] = p.scale_share;
  if (p.source == FeatureSource::columns) return column_map(o, p.share, X, account, rng, d, reason);
  if (p.source == FeatureSource::global) return global_map(o, p.share, X, account, rng, d, reason);
  require(p.source == FeatureSource::given, "estimate_feature_map: the plan is unusable");
  const double s = o.feature_scale.value_or(1.0);
  d["feature_scale"] = s;
  d["feature_scale_source"] = o.feature_scale ? "given" : "none (non-private)";
  return FeatureMap{Vector::Zero(X.cols()), Vector::Constant(X.cols(), s)};
}

void fold_feature_map(Classifier& model, const FeatureMap& f) {
  const Eigen::Index in = model.layer_in(0), out = model.layer_out(0);
  Eigen::Map<RowMatrix> W(model.parameters().data() + model.layer_offset(0), in + 1, out);
  for (Eigen::Index j = 0; j < in; ++j) W.row(j) /= f.divisor(j);
  W.row(in) -= f.centre.transpose() * W.topRows(in);
}

}  // namespace dpstats::optimize
