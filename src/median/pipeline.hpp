// Internal to src/median: the plan of a geometric-median release and its three pipelines
// (practical, paper, hsu24), each run stage by stage against the release's ReleaseBudget.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "dpstats/median/geometric_median.hpp"
#include "dpstats/median/row_shard.hpp"
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
};

MedianPlan plan_median(const GeometricMedianOptions& o);

// The privacy loss of the pre-stage share (pure epsilon or zCDP rho, as the scale layer takes it).
PrivacyLoss pre_share(const MedianPlan& plan);

// Charges `planned` on the release's account, then runs `step(Budget&)` against a sink: the
// building blocks spend exactly what their *_entries functions return, already charged here.
template <class F>
auto run_charged(ReleaseBudget& account, const Ledger& planned, F&& step) {
  account.charge(planned);
  Budget sink(PrivacyLoss::approximate(1e300, 0.999999), account.budget().accountant());
  return step(sink);
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
