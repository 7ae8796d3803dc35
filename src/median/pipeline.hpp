// Internal to src/median: the plan of a geometric-median release and its three pipelines
// (practical, paper, hsu24). The whole plan is charged before any noise; each stage then claims
// its planned entries (seam.hpp) with its mechanisms' own.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "dpstats/median/geometric_median.hpp"
#include "dpstats/median/row_shard.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/seam.hpp"

namespace dpstats::median_detail {

// Everything fixed before any data is read: the accountant, the total budget in its units, the
// share set aside for the domain radius (estimated or checked) and what is left for the pipeline.
struct MedianPlan {
  Accountant accountant = Accountant::zcdp;  // basic for the paper profile
  double rho_total = 0;      // zcdp: the zCDP equivalent of (epsilon, delta)
  double rho_pre = 0;        // zcdp: the domain-radius share (estimate or check); 0 when none
  double rho_main = 0;       // zcdp: what the pipeline spends
  double epsilon_pre = 0;    // basic: pure-DP share of the domain radius
  double epsilon_main = 0;   // basic: the pipeline's epsilon (its delta is the target's)
  bool estimate_radius = false;
  bool check_radius = false;
  Ledger entries;            // every charge of the release: the domain radius's, the pipeline's
  nlohmann::json scale_share;  // the estimated radius's share: given, or planned (else null)
  std::optional<std::string> abstained;  // planned: no share <= the cap makes the estimate usable
};

// `n`, `d`: the rows over every rank and the columns (public).
MedianPlan plan_median(const GeometricMedianOptions& o, std::int64_t n, std::int64_t d);

// The rule's verdict on the rank errors of the domain radius's estimate (its centre's
// selections and its norm quantile) under `plan`'s pre-stage share, from n, d and the options only.
Reliability planned_radius_reliability(const GeometricMedianOptions& o, const MedianPlan& plan,
                                       std::int64_t n, std::int64_t d);

// The privacy loss of the pre-stage share (pure epsilon or zCDP rho, as the scale layer takes it).
PrivacyLoss pre_share(const MedianPlan& plan);

// A stage whose mechanisms follow from an earlier stage's release (a radius, a centre): runs
// `step(Budget&)` against a Budget of the stage's planned maximum, into which the building blocks
// spend their mechanisms' entries before each draw (refused beyond it), then claims the planned
// stage with those entries (privacy/composite.hpp).
template <class F>
auto run_stage(ReleaseBudget& account, const LedgerEntry& planned, F&& step) {
  Budget stage(planned.loss, account.budget().accountant());
  auto out = step(stage);
  account.claim(stage_entry(stage, planned.purpose));
  return out;
}

// What a pipeline hands to seal: the estimate (in the coordinates it ran in) and its diagnostics.
struct PipelineOutput {
  Vector estimate;
  nlohmann::json diagnostics = nlohmann::json::object();
  bool certified = true;
};

struct DomainRadius {
  double R = 0;
  Vector offset;  // subtract before the pipeline, add back after (zero when R was given)
  nlohmann::json diagnostics = nlohmann::json::object();
  std::optional<std::string> abstained;
};

// The domain radius's planned entries (none when it is given and not checked).
Ledger domain_radius_entries(const GeometricMedianOptions& o, const MedianPlan& plan,
                             std::int64_t d);
// Each pipeline's planned entries.
Ledger practical_entries(const GeometricMedianOptions& o, const MedianPlan& plan);
Ledger paper_entries(const GeometricMedianOptions& o, const MedianPlan& plan, std::int64_t n);
Ledger hsu24_entries(const MedianPlan& plan);

// The domain radius: the given one (and, with check_radius, a private count of rows beyond it) or
// the private estimate (docs/proofs/median.md §1).
DomainRadius domain_radius(const ConstMatrixRef& X, const GeometricMedianOptions& o,
                           const MedianPlan& plan, ReleaseBudget& account, Rng& rng,
                           const RowShard& shard = {});

// X: this rank's rows of `shard` (one process: all rows, shard.comm null).
PipelineOutput run_practical(const ConstMatrixRef& X, const GeometricMedianOptions& o, double R,
                             const MedianPlan& plan, ReleaseBudget& account, Rng& rng,
                             const RowShard& shard = {});
PipelineOutput run_paper(const ConstMatrixRef& X, const GeometricMedianOptions& o, double R,
                         const MedianPlan& plan, ReleaseBudget& account, Rng& rng);
PipelineOutput run_hsu24(const ConstMatrixRef& X, const GeometricMedianOptions& o, double R,
                         const MedianPlan& plan, ReleaseBudget& account, Rng& rng,
                         const RowShard& shard = {});

}  // namespace dpstats::median_detail
