// The declaration of every output field (include/dpstats/output_fields.hpp): one table, read by
// the tool's and the Python module's emitters, the neighbour test and docs/threat-model.md.
// Within a scope the first matching path decides, so a scope may state one field of a group
// differently (e.g. a ledger entry's sensitivity that follows a released clip is derived) by
// listing it before the mount.
#include "dpstats/output_fields.hpp"

namespace dpstats {
namespace {

constexpr FieldKind P = FieldKind::public_value;
constexpr FieldKind R = FieldKind::released;
constexpr FieldKind D = FieldKind::derived;
constexpr FieldKind N = FieldKind::non_private;

using Fields = std::vector<OutputField>;
using Mounts = std::vector<std::pair<std::string_view, std::string_view>>;

OutputScope group(std::string_view name, std::string_view summary, Fields f, Mounts m = {}) {
  return {name, summary, std::move(f), std::move(m), true};
}
OutputScope scope(std::string_view name, std::string_view summary, Fields f, Mounts m) {
  return {name, summary, std::move(f), std::move(m), false};
}

void common_groups(std::vector<OutputScope>& t) {
  t.push_back(group("release", "The fields of every release (seal; docs/architecture.md \"Release<T>\").",
      {{"status", R, "ok or abstained: an abstention is itself a private output"},
       {"privacy.epsilon", P, "the guarantee's epsilon, composed from the ledger"},
       {"privacy.delta", P, "the guarantee's delta"},
       {"privacy.rho", P, "zCDP rho when accounted in zCDP (else null)"},
       {"privacy.certified", P, "whether a proof covers exactly what ran"},
       {"privacy.neighbouring", P, "replace-one or add-remove"},
       {"privacy.unit", P, "record or user"},
       {"privacy.accountant", P, "how the ledger was counted"},
       {"seeded", P, "the noise came from a seed (reproducible, not secure)"},
       {"noise", P, "secure (exact lattice samplers) or fast_float"},
       {"ledger", P, "an empty ledger (a non-private run)"},
       {"diagnostics.abstained", D, "why the release abstained (from released values)"},
       {"diagnostics.warning", D, "a warning computed from released values"},
       {"diagnostics.drop_missing", P, "--drop-missing under replace-one: why uncertified"}},
      {{"ledger[]", "ledger_entry"}}));
  t.push_back(group("ledger_entry", "One mechanism call charged to the release, as planned.",
      {{"mechanism", P, "the mechanism's name"},
       {"purpose", P, "what it released"},
       {"sensitivity", P, "its sensitivity (output units)"},
       {"noise_scale", P, "its noise scale (output units)"},
       {"count", P, "how many times it ran"},
       {"loss.*", P, "its privacy loss: kind and parameters"},
       {"lattice.*", P, "the lattice encoding's own numbers"},
       {"curve.*", P, "the noise curve the accountants read: kind, noise, sensitivity, lattice"},
       {"reserved", D, "planned and charged, but its stage never ran (the run stopped on a "
                       "released value)"},
       {"blocks", D, "a composite's parts: the entries of the mechanisms it ran (per disjoint "
                     "block), which follow from released values"}}));
  t.push_back(group("column_scale", "The scale layer's per-column estimate (scale/column_scale.hpp, "
                                    "location.hpp): private selections on public grids.",
      {{"estimator", P, "which estimator ran"},
       {"epsilon_per_selection", P, "the epsilon of each grid selection"},
       {"rank_error", P, "the selections' rank error bound (from epsilon, the grid, beta)"},
       {"beta", P, "the bound's failure probability"},
       {"neighbouring", P, "the relation the estimate is private under"},
       {"insufficient_data_check", P, "why no row-count check is made under add/remove"},
       {"columns[].location", R, "the private location (median)"},
       {"columns[].mad", R, "the private MAD"},
       {"columns[].spread", R, "the private spread cell (location)"},
       {"columns[].scale", D, "the robust scale from the MAD"},
       {"columns[].lo", D, "location - widen x scale"},
       {"columns[].hi", D, "location + widen x scale"},
       {"columns[].resolution", D, "the grid resolution at the released location"},
       {"columns[].status", D, "ok / degenerate (from released values) / insufficient_data "
                               "(public: rank error against n)"},
       {"columns[].reason", D, "why a column is not ok"},
       {"n_lower_bound", D, "add/remove: the private row count's lower confidence bound"}},
      {{"charged[]", "ledger_entry"}, {"reliability", "reliability"},
       {"columns[].reliability", "reliability"}}));
  t.push_back(group("reliability", "The scale layer's rule on an estimate (scale/reliability.hpp): "
                                   "applied to released facts (or, in a plan, public ones).",
      {{"usable", D, "whether the estimate may be used"},
       {"estimate", P, "which estimate was judged"},
       {"cause", D, "why not usable"},
       {"would_suffice", D, "what would make it usable (rows, epsilon, a share)"}}));
}

// The scale layer's clipping bounds and norm quantile (scale/bounds.hpp's parts).
void clip_groups(std::vector<OutputScope>& t) {
  t.push_back(group("clip_bounds", "Per-column clipping bounds with no public range "
                                   "(scale/clip_bounds.hpp): a private median anchor, then "
                                   "AboveThreshold scans outwards.",
      {{"estimator", P, "which estimator ran"},
       {"coverage", P, "the targeted coverage"},
       {"quantiles", P, "the targeted tail quantiles"},
       {"rank_error", P, "each scan's rank error bound (from epsilon, the grid, beta)"},
       {"anchor_rank_error", P, "the anchor's rank error bound"},
       {"rows_beyond_noise", P, "the side counts' noise bound (from epsilon, beta)"},
       {"fine_cell_rank_error", P, "the fine cell selection's rank error bound"},
       {"beta", P, "the bounds' failure probability"},
       {"neighbouring", P, "the relation the bounds are private under"},
       {"n_lower_bound", D, "add/remove: the private row count's lower confidence bound"},
       {"columns[].anchor", R, "the private median anchor"},
       {"columns[].lo", R, "the released lower bound"},
       {"columns[].hi", R, "the released upper bound"},
       {"columns[].resolution", D, "the grid spacing at the released anchor"},
       {"columns[].anchor_at_end", D, "whether the anchor is a grid end"},
       {"columns[].rows_beyond_anchor", R, "private counts of the rows below and above the "
                                            "fine cell (else the anchor's cell)"},
       {"columns[].rows_beyond_cell", R, "the fine cell the side counts look beyond (a private "
                                         "median cell), or the anchor's cell"},
       {"columns[].lo_at_end", D, "-"}, {"columns[].hi_at_end", D, "-"}},
      {{"charged[]", "ledger_entry"}, {"columns[].reliability", "reliability"},
       {"reliability", "reliability"}}));
  t.push_back(group("norm_quantile", "A private quantile of row norms (scale/norm_quantile.hpp).",
      {{"estimator", P, "which estimator ran"},
       {"value", R, "the released quantile (upper end of the selected cell)"},
       {"cell", R, "the selected cell of the public log grid"},
       {"q", P, "the quantile level"},
       {"epsilon", P, "its pure epsilon"},
       {"rank_error", P, "its rank error bound"},
       {"status", D, "ok or insufficient_data (public) / degenerate"},
       {"reason", D, "why not ok"}},
      {{"charged[]", "ledger_entry"}, {"reliability", "reliability"}}));
}

// The head fields the tool prints before a release's fields.
Fields head(Fields extra) {
  Fields f = {{"command", P, "the command"},
              {"method", P, "the method (an option)"},
              {"estimate", R, "the released value"},
              {"n", P, "the row count: printed only under replace-one, where it is public"},
              {"d", P, "the column count"},
              {"columns", P, "the column names (a declared or certain header)"}};
  f.insert(f.end(), extra.begin(), extra.end());
  return f;
}

void mean_units_group(std::vector<OutputScope>& t) {
  t.push_back(group("mean_units", "The mean family's units (mean/units.hpp): the scale layer's "
                                  "estimate and the winsorised scale, or the given scale.",
      {{"scale", P, "estimated or given"},
       {"share", P, "the budget share that estimates the units"},
       {"mad_scale", D, "1.4826 x the private MAD per column"},
       {"values", D, "the scale used per column"},
       {"rule", P, "which rule set the scale (decided by the public rank error against n)"},
       {"winsorized.columns[].clip", R, "the private winsorising clip"},
       {"winsorized.columns[].second_moment", R, "the private winsorised second moment"},
       {"winsorized.columns[].tail_fraction", R, "the private tail count over n"},
       {"winsorized.columns[].scale", D, "the Gaussian-calibrated scale"},
       {"winsorized.columns[].clip_at_end", D, "whether the clip is the grid's end"},
       {"winsorized.rank_error", P, "the clip's rank error bound"},
       {"winsorized.reliable", P, "rank error against (1 - q) n / 2 (public)"},
       {"winsorized.epsilon_per_call", P, "epsilon of each selection"},
       {"winsorized.noise_scale", P, "the counts' Laplace scale"},
       {"winsorized.q", P, "the winsorising quantile"}},
      {{"", "column_scale"}, {"winsorized.entries[]", "ledger_entry"},
       {"reliability", "reliability"}}));
}

void mean_scope(std::vector<OutputScope>& t) {
  t.push_back(scope("mean", "dpstats mean / dpstats.mean (every method).",
      head({{"diagnostics.profile", P, "practical or paper"},
            {"diagnostics.fallback", P, "the method released instead (a check on public values)"},
            {"diagnostics.feasibility.*", P, "the public feasibility check behind the fallback"},
            {"diagnostics.heavy_tailed", P, "PRIME-ht"},
            {"diagnostics.robust", P, "whether the method is robust"},
            {"diagnostics.method", D, "the robust entry's choice (prime or prime-ht, from the "
                                      "private tail test)"},
            {"diagnostics.robust.tail_fraction", R, "the private fraction of rows beyond "
                                                    "tail_radius_scales, per column"},
            {"diagnostics.robust.chosen", D, "the method that fraction chose"},
            {"diagnostics.robust.*", P, "the rule, its radius and each model's allowance"},
            {"diagnostics.range_share", P, "the budget share of the range step"},
            {"diagnostics.mechanism", P, "laplace or gaussian"},
            {"diagnostics.noise_scale", D, "the noise scale per column (given scale or bounds: "
                                           "public; estimated: from the released ones)"},
            {"diagnostics.sum_quantum", P, "the exact sum's lattice quantum (from n)"},
            {"diagnostics.bounds_lo", D, "the clipping bounds (given: public; estimated: "
                                         "post-processing of the private scale)"},
            {"diagnostics.bounds_hi", D, "as bounds_lo"},
            {"diagnostics.clipped.rows_noisy", R, "the private count of clipped rows"},
            {"diagnostics.clipped.fraction", D, "that count over n"},
            {"diagnostics.clipped.noise_scale", P, "its Laplace scale"},
            {"diagnostics.clipped.warning", D, "when the noisy fraction is high"},
            {"diagnostics.stated_error.radius", D, "the stated error (from released scales)"},
            {"diagnostics.stated_error.model_term_scale_units", D, "its model term"},
            {"diagnostics.stated_error.noise_term_scale_units", P, "its noise term"},
            {"diagnostics.stated_error.noise_term", D, "bounded: its noise term (from the bounds)"},
            {"diagnostics.stated_error.clipping_term", D, "bounded: a fraction of rows times "
                                                          "the bounds' width"},
            {"diagnostics.stated_error.clipped_fraction_upper", D, "bounded: that fraction"},
            {"diagnostics.stated_error.winsorised_at", D, "bounded: the range the stated mean "
                                                          "is winsorised at (from the bounds)"},
            {"diagnostics.stated_error.*", P, "what the statement means"},
            {"diagnostics.T", P, "filter rounds (public schedule)"},
            {"diagnostics.T1", P, "PRIME outer rounds"},
            {"diagnostics.T2", P, "PRIME inner rounds"},
            {"diagnostics.k", P, "candidates per round, ceil(M alpha n)"},
            {"diagnostics.stop_threshold", P, "the filter's stop threshold"},
            {"diagnostics.diameter_scale_units", P, "the ball's diameter in scale units"},
            {"diagnostics.box_side_scale_units", P, "the range box's side"},
            {"diagnostics.grid_step_scale_units", P, "the range grid's step"},
            {"diagnostics.corruption_shift_per_fraction", P, "public model constant per column"},
            {"diagnostics.final_noise_scale_units", P, "the final mean's noise scale"},
            {"diagnostics.noise.*", P, "the planned noise scales"},
            {"diagnostics.delta1", P, "the budget split"}, {"diagnostics.delta2", P, "the split"},
            {"diagnostics.eps1", P, "the split"}, {"diagnostics.eps2", P, "the split"},
            {"diagnostics.R_noisy", R, "the private range radius"},
            {"diagnostics.n_noisy", R, "the private row count of the current set"},
            {"diagnostics.rounds", D, "filter rounds run (stopped on released values)"},
            {"diagnostics.filter_rounds", D, "as rounds"},
            {"diagnostics.stop", D, "why the filter stopped (released values)"},
            {"diagnostics.epochs[].*", R, "per epoch: the released lambda"},
            {"diagnostics.epochs[].inner[].*", R, "per inner step: released values and the "
                                                  "decisions taken on them"},
            {"diagnostics.boost_parts", P, "boosting: the number of parts (from boost_zeta)"},
            {"diagnostics.boost_part_rows", P, "rows per part (from n)"},
            {"diagnostics.boost_part_success_assumed", P, "a constant"},
            {"diagnostics.boost_failure_bound", P, "from the public parts"},
            {"diagnostics.boost_parts_abstained", D, "parts whose release abstained"},
            {"diagnostics.boost_selected_part", D, "the part chosen from the released estimates"},
            {"diagnostics.boost_selection_radius", D, "the selection radius"},
            {"diagnostics.n_min", P, "exp-time: the rows its guarantee needs"},
            {"diagnostics.reference_only", P, "exp-time is a reference"},
            {"diagnostics.resilience", P, "exp-time: how R(S) is computed"},
            {"diagnostics.candidates", P, "tukey-median: grid points"},
            {"diagnostics.grid", P, "tukey-median: grid size"},
            {"diagnostics.scale_share.*", P, "the estimate's budget share: given, or planned from "
                                            "n, d and the budget (docs/proofs/scale.md §9)"}}),
      {{"", "release"}, {"diagnostics.units", "mean_units"},
       {"diagnostics.bounds_estimate", "clip_bounds"}}));
}

void median_scopes(std::vector<OutputScope>& t) {
  t.push_back(scope("median", "dpstats median / dpstats.median (fast, hsu24; weiszfeld is not "
                              "private and says so).",
      head({{"private", P, "false: weiszfeld, not private"},
            {"objective", N, "weiszfeld's exact objective"},
            {"iterations", N, "weiszfeld's iterations"},
            {"rel_gap_bound", N, "weiszfeld's gap bound"},
            {"converged", N, "whether weiszfeld converged"},
            {"diagnostics.method", P, "the method"},
            {"diagnostics.profile", P, "practical or paper"},
            {"diagnostics.center", P, "the paper profile's centre method"},
            {"diagnostics.center_failed", D, "the centre step's released failure"},
            {"diagnostics.center_partners", D, "from released values"},
            {"diagnostics.boosting", P, "the boosting method"},
            {"diagnostics.boosting_steps", P, "its steps"},
            {"diagnostics.boosting_rho", P, "its rho"},
            {"diagnostics.boosting_radius", D, "its radius (from the released radius)"},
            {"diagnostics.budget_shares.*", P, "the budget split"},
            {"diagnostics.domain_radius_source", P, "given or estimated"},
            {"diagnostics.scale_share.*", P, "the radius estimate's budget share: given, or "
                                            "planned from n, d and the budget"},
            {"diagnostics.domain_radius", D, "the radius used (given: public; estimated: "
                                             "released)"},
            {"diagnostics.domain_radius_estimate.domain_radius", R, "the private radius"},
            {"diagnostics.domain_radius_estimate.location", R, "the private centre"},
            {"diagnostics.domain_radius_estimate.norm_quantile", R, "the private norm quantile"},
            {"diagnostics.domain_radius_estimate.multiplier", P, "a constant"},
            {"diagnostics.domain_radius_estimate.q", P, "the quantile level"},
            {"diagnostics.domain_radius_estimate.location_cost.*", P, "what the centre cost"},
            {"diagnostics.domain_radius_estimate.norm_quantile_cost.*", P, "what it cost"},
            {"diagnostics.domain_radius_check.rows_beyond", R, "private count beyond the radius"},
            {"diagnostics.domain_radius_check.fraction_beyond", D, "that count over n"},
            {"diagnostics.domain_radius_check.cost.*", P, "what the check cost"},
            {"diagnostics.domain_radius_warning", D, "when the noisy fraction is high"},
            {"diagnostics.min_radius", D, "R 2^-20 (from the radius used)"},
            {"diagnostics.r_hat", R, "the private quantile radius"},
            {"diagnostics.radius_step", R, "its grid step"},
            {"diagnostics.radius_fell_back", R, "whether the radius search reached the end"},
            {"diagnostics.localization_at_boundary", D, "from released values"},
            {"diagnostics.passes", P, "data passes planned"}}),
      {{"", "release"}}));
  t.push_back(scope("quantile-radius", "dpstats.quantile_radius (Python).",
      {{"estimate", R, "the released radius"},
       {"diagnostics.method", P, "the method"},
       {"diagnostics.step", R, "the released grid step"},
       {"diagnostics.fell_back", R, "whether the search reached the end"},
       {"diagnostics.grid_size", P, "the public grid's size"}},
      {{"", "release"}}));
}

void moments_scopes(std::vector<OutputScope>& t) {
  t.push_back(scope("moments", "dpstats moments / dpstats.moments / MomentEstimator: the "
                               "release's fields (the steps follow as moments/step lines). The "
                               "stream's horizon is public in both relations (add/remove: a "
                               "step's row present or zero, docs/proofs/moments.md §2).",
      head({{"diagnostics.method", P, "the method"},
            {"diagnostics.steps", P, "the horizon"},
            {"diagnostics.workload_first", P, "workload"}, {"diagnostics.workload_second", P, "-"},
            {"diagnostics.factorization_first", P, "factorization"},
            {"diagnostics.factorization_second", P, "-"},
            {"diagnostics.second_moment", P, "full or diagonal"},
            {"diagnostics.c1_norm", P, "the factorizations' column norms"},
            {"diagnostics.c2_norm", P, "-"},
            {"diagnostics.lambda", D, "JME's lambda (lambda* follows the clip)"},
            {"diagnostics.alpha", P, "IME's alpha"},
            {"diagnostics.tau", P, "CS's tau"}, {"diagnostics.rho", P, "the stream's rho"},
            {"diagnostics.noise_multiplier", D, "the stream's noise multiplier (its lattice "
                                                "follows the clip)"},
            {"diagnostics.noise_units", P, "what the noise is measured in"},
            {"diagnostics.clip_source", P, "supplied or estimated"},
            {"diagnostics.clip", D, "the clip (supplied: public; estimated: released)"},
            {"diagnostics.sensitivity", D, "the stream's sensitivity (from the clip)"},
            {"diagnostics.second_sensitivity", D, "-"},
            {"diagnostics.first_noise_std", D, "noise deviations (from the clip)"},
            {"diagnostics.second_noise_std", D, "-"},
            {"diagnostics.first_noise_std_final", D, "-"},
            {"diagnostics.first_noise_std_final_per_unit_clip", P, "per unit of the clip"},
            {"diagnostics.first_noise_std_final_is", P, "what that deviation is"},
            {"diagnostics.clipped_rows", P, "a constant: the exact count is not released"},
            {"diagnostics.clip_check.noisy_count", R, "private count of rows above the clip"},
            {"diagnostics.clip_check.noisy_fraction", D, "that count over the horizon"},
            {"diagnostics.clip_check.*", P, "the check's plan (share, rho, noise, horizon)"},
            {"diagnostics.clip_estimate.margin", P, "the clip's margin over the quantile"},
            {"diagnostics.clip_estimate.share", P, "its budget share"},
            {"diagnostics.clip_estimate.rho", P, "its rho"},
            {"diagnostics.centre_estimate.share", P, "the centre's budget share"},
            {"diagnostics.centre_estimate.rho", P, "its rho"},
            {"diagnostics.centre_source", P, "whether the rows were centred (a public check)"},
            {"diagnostics.centre", R, "the private centre"},
            {"diagnostics.adaptive_clip.*", D, "the live stream's adaptive clip: its plan and "
                                               "state (from released values)"},
            {"diagnostics.adaptive_clip.tracker.*", D, "the clip tracker's state"},
            {"diagnostics.stated_error.confidence", P, "the statement's confidence"},
            {"diagnostics.stated_error.meaning", P, "what it states"},
            {"diagnostics.stated_error.*", D, "the stated error: noise and clipping terms "
                                              "(from the clip and the private clipped count)"},
            {"ledger[].sensitivity", D, "the stream's entry follows the clip"},
            {"ledger[].noise_scale", D, "-"}, {"ledger[].curve.*", D, "-"}}),
      {{"", "release"}, {"diagnostics.clip_estimate", "norm_quantile"},
       {"diagnostics.centre_estimate", "column_scale"}}));
  t.push_back(scope("moments/step", "One line per step of a moments stream.",
      {{"step", P, "the step"},
       {"clip", D, "the live stream's current clip (released by the adaptive clip)"},
       {"first", R, "the released first moment"},
       {"second", R, "the released second moment"}},
      {}));
}

void stat_scopes(std::vector<OutputScope>& t) {
  t.push_back(scope("stat", "dpstats stat / dpstats.count, sum, column_mean, variance, std, "
                            "quantiles, histogram.",
      head({{"statistic", P, "the statistic"},
            {"estimate.*", R, "histogram: the noisy count per category (the categories are "
                              "public, or selected by the stability histogram)"},
            {"diagnostics.n", P, "the row count (replace-one statistics only)"},
            {"diagnostics.noise_scale", D, "the noise scale (from the bounds: given, public; "
                                           "estimated, released)"},
            {"diagnostics.bounds", D, "the bounds used (given: public; estimated: released)"},
            {"diagnostics.bounds_estimate.budget_share", P, "its share"},
            {"diagnostics.bounds_estimate.note", P, "how the bounds were found"},
            {"diagnostics.clipped_rows.noisy_count", R, "private count of clipped rows"},
            {"diagnostics.clipped_rows.fraction", D, "over n"},
            {"diagnostics.clipped_rows.fraction_upper", D, "its upper confidence bound"},
            {"diagnostics.clipped_rows.fraction_low", D, "a low estimate (2 noise scales down)"},
            {"diagnostics.clipped_rows.*", P, "the check's plan"},
            {"diagnostics.epsilon_per_quantile", P, "epsilon per quantile"},
            {"diagnostics.scale_share.*", P, "quantiles without bounds: the bounds' budget share, "
                                            "given or planned from n, d, k and the budget "
                                            "(docs/proofs/scale.md §9)"},
            {"diagnostics.grid_step", D, "the quantile grid's step (from the bounds)"},
            {"diagnostics.selection", P, "public categories or the stability histogram"},
            {"diagnostics.threshold", P, "the stability histogram's threshold"},
            {"diagnostics.stated_error.confidence", P, "the statement's confidence"},
            {"diagnostics.stated_error.meaning", P, "what it states"},
            {"diagnostics.stated_error.clipped_fraction_threshold", P, "estimated bounds: the "
                                                                       "clipped fraction above "
                                                                       "which it abstains"},
            {"diagnostics.stated_error.*", D, "the stated error and its terms (from the "
                                              "released bounds and counts)"},
            {"ledger[].sensitivity", D, "follows the bounds when they were estimated"},
            {"ledger[].noise_scale", D, "-"},
            {"ledger[].lattice.*", D, "-"}, {"ledger[].curve.*", D, "-"}}),
      {{"", "release"}, {"diagnostics.bounds_estimate", "clip_bounds"}}));
  t.push_back(scope("bounds", "dpstats bounds / dpstats.bounds.",
      head({{"estimate.*", R, "location, scale, lo, hi (and norm_quantile) per column"},
            {"diagnostics.all_ok", D, "every column's status is ok"},
            {"diagnostics.norm_quantile.centre", P, "what the norms are measured from"}}),
      {{"", "release"}, {"diagnostics.scale", "column_scale"},
       {"diagnostics.clip_bounds", "clip_bounds"},
       {"diagnostics.norm_quantile", "norm_quantile"}}));
  t.push_back(scope("noise", "dpstats noise / dpstats.laplace, dpstats.gaussian (the values are "
                             "the caller's; their sensitivity is the caller's claim).",
      {{"command", P, "noise"}, {"mechanism", P, "laplace or gaussian"},
       {"estimate", R, "the noisy values"},
       {"diagnostics.scale", P, "Laplace scale"}, {"diagnostics.sigma", P, "Gaussian sigma"},
       {"diagnostics.rho", P, "its rho"}, {"diagnostics.granularity", P, "the lattice step"}},
      {{"", "release"}}));
}

void fit_groups(std::vector<OutputScope>& t) {
  t.push_back(group("offset_check", "The private offset check of a fit below the centring "
                                    "threshold (docs/proofs/user-level.md §4).",
      {{"columns[].column", P, "the column"},
       {"columns[].fraction_below_zero", R, "the noisy fraction of units below 0"},
       {"columns[].far", D, "whether that fraction is below the threshold"},
       {"columns[].unsure", D, "whether that fraction's one-sided noise band reaches 0"},
       {"noise_sd_fraction", P, "the noise deviation over the units"},
       {"rho", P, "its rho"}, {"epsilon", P, "its epsilon"}, {"share", P, "its share"},
       {"share_of_rho", P, "its share"}, {"rule", P, "the rule"},
       {"threshold", P, "the threshold"}}));
  t.push_back(group("centring", "How a fit centred its features (docs/proofs/user-level.md §4, "
                                "heavy-tailed.md §4).",
      {{"applied", P, "whether the features were centred (a public check on n, d, the share, "
                      "or the option)"},
       {"reason", P, "why not"},
       {"abstained", D, "why the fit abstained"},
       {"share", P, "the budget share"},
       {"share_of_rho", P, "the budget share (of rho)"},
       {"labels", P, "how the label was standardised"},
       {"model", P, "what the estimate means"}},
      {{"", "column_scale"}, {"offset_check", "offset_check"},
       {"reliability", "reliability"}}));
}

void holdout_group(std::vector<OutputScope>& t) {
  t.push_back(group("holdout", "A fit's private validation loss on held-out units "
                               "(solvers/holdout.hpp; --holdout F). classify: each row is held "
                               "out by a keyed hash, so the held-out count is private; "
                               "user-level and heavy-tailed: exactly round(F x units) units, a "
                               "public count.",
      {{"units_expected", P, "classify: the public number of units x fraction (the exact count "
                             "is not output)"},
       {"units", P, "user-level and heavy-tailed: the public held-out count round(F x units) "
                    "(non-private fits: the exact held-out count)"},
       {"private", P, "false for a non-private fit"},
       {"loss", R, "the noisy clipped-loss sum / units_expected, or / units (non-private: the "
                   "exact mean)"},
       {"noise_sd", P, "the noise's sd per expected unit"},
       {"interval_95", D, "loss +- the noise's 95% half-width, clamped to [0, loss_bound]"},
       {"population_interval_95", D, "the expected clipped loss of a fresh unit: from loss, "
                                     "the noise and public bounds on the held-out count"},
       {"loss_bound", P, "the clip of each unit's loss"}, {"rule", P, "the split's rule"},
       {"statement", P, "what loss and interval_95 mean"}, {"fraction", P, "the option"},
       {"unit", P, "row, record or user"}, {"loss_name", P, "which loss"}}));
}

void user_level_scope(std::vector<OutputScope>& t) {
  t.push_back(scope("fit/user-level", "dpstats fit --task user-level / dpstats.fit(users=...). "
                                      "Neighbours replace one user's rows; n_users and m are "
                                      "public.",
      head({{"task", P, "the task"}, {"n_users", P, "the number of users (public)"},
            {"items_per_user", P, "m: the public rows per user (required)"},
            {"diagnostics.method", P, "the method"}, {"diagnostics.profile", P, "the profile"},
            {"diagnostics.loss", P, "the loss"}, {"diagnostics.n_users", P, "-"},
            {"diagnostics.items_per_user", P, "-"},
            {"diagnostics.labels", P, "the label convention the column uses ({0, 1} mapped to "
                                      "+-1; a column of only 1s reads as +-1)"},
            {"diagnostics.intercept", P, "whether an intercept was fitted"},
            {"diagnostics.gradient_evaluations", D, "gradients computed (public schedule; "
                                                    "halting on released values)"},
            {"diagnostics.steps", P, "the steps option or default"},
            {"diagnostics.steps_run", D, "steps run"},
            {"diagnostics.halted_phase", D, "where a released gate halted"},
            {"diagnostics.halted_step", D, "-"},
            {"diagnostics.L", D, "the Lipschitz constant (from the bounds)"},
            {"diagnostics.R", P, "the domain radius"},
            {"diagnostics.beta", D, "the smoothness (from the bounds)"},
            {"diagnostics.clip", D, "the per-user clip (from the bounds)"},
            {"diagnostics.step_size", D, "the step size (from the bounds)"},
            {"diagnostics.noise_sigma_sum", D, "the noise deviation (from the bounds)"},
            {"diagnostics.filter_centre_share", P, "dp-gd-filter's share"},
            {"diagnostics.filter_radius", D, "its radius (from the clip)"},
            {"diagnostics.schedule.*", D, "the Alg 1 / Alg 3 schedule (public values and the "
                                          "bounds, which may be released)"},
            {"diagnostics.schedule.phases[].*", D, "per phase"},
            {"diagnostics.bounds", P, "no bound (non-private)"},
            {"diagnostics.bounds.*.estimated", P, "whether the bound was estimated"},
            {"diagnostics.bounds.*.value", D, "the bound (given: public; else released)"},
            {"diagnostics.bounds.*.rule", P, "how it is estimated"},
            {"diagnostics.bounds.*.clipped_users_fraction", R, "the private count of users "
                                                               "clipped by a given bound, over n"},
            {"diagnostics.bounds.warnings", D, "warnings from that count"},
            {"diagnostics.bounds.*.clipped_users_fraction_lower_95", D, "its lower 95% bound"},
            {"diagnostics.bounds.*.noise_scale_fraction", P, "that count's noise scale over n"},
            {"diagnostics.bounds.*.warning", D, "the given bound bites (from that count)"},
            {"diagnostics.stated_error.*", P, "no stated error (why)"},
            {"ledger[].sensitivity", D, "follows the bounds when estimated"},
            {"ledger[].noise_scale", D, "-"}, {"ledger[].curve.*", D, "-"}}),
      {{"", "release"}, {"diagnostics.bounds.feature_bound", "norm_quantile"},
       {"diagnostics.bounds.label_bound", "norm_quantile"},
       {"diagnostics.centring", "centring"}, {"diagnostics.holdout", "holdout"}}));
}

void heavy_tailed_scope(std::vector<OutputScope>& t) {
  t.push_back(scope("fit/heavy-tailed", "dpstats fit --task heavy-tailed / "
                                        "dpstats.fit(task=\"heavy-tailed\").",
      head({{"task", P, "the task"}, {"loss", P, "the loss"},
            {"moment_order", P, "k"},
            {"diagnostics.method", P, "the method"}, {"diagnostics.profile", P, "the profile"},
            {"diagnostics.loss", P, "the loss"}, {"diagnostics.private", P, "false: not private"},
            {"diagnostics.certified", P, "why a method is uncertified"},
            {"diagnostics.labels", P, "the label convention"},
            {"diagnostics.intercept", P, "whether an intercept was fitted"},
            {"diagnostics.inner", P, "the inner solver"},
            {"diagnostics.composition", P, "how the phases compose"},
            {"diagnostics.schedule", P, "which schedule ran (public: options, standardisation)"},
            {"diagnostics.steps", P, "steps"},
            {"diagnostics.clip", D, "the clip (from the moment bound)"},
            {"diagnostics.step_size", D, "the step (from the moment bound)"},
            {"diagnostics.noise_scale", D, "the noise scale (from the moment bound)"},
            {"diagnostics.lens_probes", N, "lipschitz-extension's lens search (uncertified: it "
                                           "may depend on the data, like the abort bit)"},
            {"diagnostics.aborted_phase", N, "the phase that aborted (the abort bit; "
                                             "uncertified methods only)"},
            {"diagnostics.phases[].phase", P, "the phase"}, {"diagnostics.phases[].m", P, "rows"},
            {"diagnostics.phases[].solver", P, "its solver"},
            {"diagnostics.phases[].sampler", P, "its noise sampler"},
            {"diagnostics.phases[].W0", P, "its domain's shape"},
            {"diagnostics.phases[].steps", P, "its steps"},
            {"diagnostics.phases[].epsilon", P, "its epsilon"},
            {"diagnostics.phases[].kappa", P, "a constant"},
            {"diagnostics.phases[].clip_rule.rule", P, "how the final clip is chosen"},
            {"diagnostics.phases[].clip_rule.candidates", P, "its grid size"},
            {"diagnostics.phases[].clip_rule.epsilon", P, "its epsilon"},
            {"diagnostics.phases[].clip_rule.tail", P, "its tail constant"},
            {"diagnostics.phases[].clip_rule.grid", D, "its grid (from the moment bound)"},
            {"diagnostics.phases[].*", D, "the phase's scales (from the moment bound and the "
                                          "released centre and clip)"},
            {"diagnostics.scale", P, "no scale (non-private)"},
            {"diagnostics.scale.moment_bound.estimated", P, "whether it was estimated"},
            {"diagnostics.scale.moment_bound.value", D, "given: public; else released"},
            {"diagnostics.scale.moment_bound.rule", P, "how it is estimated"},
            {"diagnostics.stated_error.*", P, "no stated error (why)"},
            {"ledger[].sensitivity", D, "follows the moment bound and the clip"},
            {"ledger[].noise_scale", D, "-"}, {"ledger[].curve.*", D, "-"}}),
      {{"", "release"}, {"diagnostics.scale.moment_bound", "norm_quantile"},
       {"diagnostics.centring", "centring"}, {"diagnostics.holdout", "holdout"}}));
}

void classify_scope(std::vector<OutputScope>& t) {
  t.push_back(scope("fit/classify", "dpstats fit --task classify / dpstats.fit(task=\"classify\")"
                                    ". Add/remove: the row count is private; n_public is not.",
      head({{"task", P, "the task"}, {"data", P, "the data file (an option)"},
            {"model.*", P, "the model's shape"}, {"model.weights_file", P, "--save-weights"},
            {"diagnostics.features", P, "Python: the model's shape"},
            {"diagnostics.classes", P, "-"}, {"diagnostics.hidden", P, "-"},
            {"diagnostics.optimizer", P, "the optimizer"}, {"diagnostics.model", P, "-"},
            {"diagnostics.parameters", P, "-"}, {"diagnostics.epochs", P, "-"},
            {"diagnostics.n_public", P, "the public row count"},
            {"diagnostics.n_source", P, "where it came from"},
            {"diagnostics.n_train_public", P, "with a holdout: n_public x (1 - fraction), the "
                                              "count the plan trains on"},
            {"diagnostics.steps", P, "epochs x round(n_public / batch)"},
            {"diagnostics.expected_batch_size", P, "m"},
            {"diagnostics.sampling_rate", P, "q = m / n_public"},
            {"diagnostics.learning_rate", P, "-"}, {"diagnostics.adam_epsilon", P, "-"},
            {"diagnostics.second_moment_floor", P, "-"}, {"diagnostics.train_loss_clip", P, "-"},
            {"diagnostics.clip", P, "-"}, {"diagnostics.lambda", P, "-"},
            {"diagnostics.tau", P, "-"}, {"diagnostics.debias", P, "-"},
            {"diagnostics.noise_multiplier", P, "calibrated from public values"},
            {"diagnostics.sensitivity", P, "-"}, {"diagnostics.first_noise_std", P, "-"},
            {"diagnostics.second_noise_std", P, "-"}, {"diagnostics.accountant", P, "-"},
            {"diagnostics.epsilon_rdp", P, "-"}, {"diagnostics.epsilon_pld", P, "-"},
            {"diagnostics.accounting", P, "-"},
            {"diagnostics.feature_scale", D, "given: public; estimated: released"},
            {"diagnostics.feature_scale_source", P, "how (a public plan)"},
            {"diagnostics.feature_scale_epsilon", P, "its cost"},
            {"diagnostics.feature_scale_rho", P, "its cost"},
            {"diagnostics.feature_centre", R, "the private per-column centres"},
            {"diagnostics.feature_divisor", D, "the per-column divisors (private scales)"},
            {"diagnostics.feature_kappa", P, "kappa_d"},
            {"diagnostics.train_loss", R, "the private per-epoch loss"},
            {"diagnostics.test_accuracy", D, "the released model on the public test set"},
            {"diagnostics.test_rows", P, "the public test set's size"},
            {"diagnostics.test_accuracy_warning", P, "the test set is the training data "
                                                      "(decided from public facts)"},
            {"diagnostics.learning_rate_rule", P, "the public rule of the default rate"},
            {"diagnostics.scale_share.*", P, "the feature scale's budget share: given, planned from "
                                            "n, d and the budget (per-column), or the global 0.05"},
            {"diagnostics.feature_plan", P, "no plan (a given scale, or adam)"},
            {"diagnostics.feature_plan.*.*", P, "the planned estimate's rank error and the rows "
                                                "it needs (from n_public, d, the budget)"},
            {"diagnostics.feature_degenerate_columns", D, "columns whose released MAD is at its "
                                                          "resolution, or whose released count "
                                                          "within MAD/2 is out of bounds"},
            {"diagnostics.feature_atom_counts.noisy", R, "per column, the rows within MAD/2 of the "
                                                         "location (Gaussian)"},
            {"diagnostics.feature_atom_counts.above", D, "3/8 x the released row count's lower "
                                                         "bound + noise_bound"},
            {"diagnostics.feature_atom_counts.below", D, "1/16 x the released row count's lower "
                                                         "bound - noise_bound"},
            {"diagnostics.feature_atom_counts.noise_bound", P, "from the mechanism's public noise"},
            {"diagnostics.feature_atom_counts.rule", P, "the public rule"},
            {"diagnostics.feature_degenerate_rule", P, "what they are divided by"}}),
      {{"", "release"}, {"diagnostics.feature_scale_estimate", "norm_quantile"},
       {"diagnostics.feature_scale_estimate", "column_scale"},
       {"diagnostics.feature_scale_reliability", "reliability"},
       {"diagnostics.holdout", "holdout"}}));
}

// A dry run's plan (dry_run.hpp): every field follows from the options, the header and the
// declared rows; no data row is read and nothing is released.
void dry_run_scope(std::vector<OutputScope>& t) {
  t.push_back(scope("dry-run", "dpstats <command> --dry-run / dry_run=True: a release's plan, "
                               "before any epsilon is spent.",
      {{"command", P, "dry-run"}, {"release", P, "the command planned (and its method or task)"},
       {"n_hint", P, "the rows declared (--n-hint), or null"},
       {"n_planned", P, "the rows the plan was made for (n_hint, else 10000)"},
       {"d", P, "the input's selected columns (from its header line)"},
       {"verdict", P, "would release, would abstain (needs >= N rows; what else would suffice), "
                      "or the rows needed when no n_hint is given"},
       {"rows_needed", P, "the most rows any planned estimate needs at this epsilon"},
       {"checks", P, "an empty list: no planned estimate depends on the rows"},
       {"checks[].estimate", P, "a planned private estimate whose usability depends on the rows"},
       {"checks[].rank_error", P, "its rank error at its failure probability"},
       {"checks[].tolerance", P, "the largest rank error / n (+ alpha) its use tolerates"},
       {"checks[].alpha", P, "the corrupted fraction declared"},
       {"checks[].epsilon", P, "its selection's epsilon"},
       {"checks[].rows_needed", P, "the rows for which it passes the rank check"},
       {"checks[].count_margin", P, "add/remove: the private row count's confidence margin"},
       {"checks[].usable", P, "whether n_hint rows pass its rank check"},
       {"private", P, "whether the release is private (a non-private method plans no stage)"},
       {"spends", P, "null: a non-private method spends nothing"},
       {"stages", P, "an empty list: a non-private method, or a plan that abstains first"},
       {"spends.epsilon", P, "the epsilon the release would spend"},
       {"spends.delta", P, "its delta"}, {"spends.rho", P, "its rho (zCDP accounting)"},
       {"spends.accountant", P, "how it is counted"},
       {"caveat", P, "what a dry run cannot see"}},
      {{"stages[]", "ledger_entry"}}));
}

}  // namespace

std::span<const OutputScope> output_scopes() {
  static const std::vector<OutputScope> t = [] {
    std::vector<OutputScope> all;
    for (auto part : {common_groups, clip_groups, mean_units_group, mean_scope, median_scopes,
                      moments_scopes, stat_scopes, fit_groups, holdout_group, user_level_scope,
                      heavy_tailed_scope, classify_scope, dry_run_scope})
      part(all);
    return all;
  }();
  return t;
}

}  // namespace dpstats
