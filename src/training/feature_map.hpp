// The map u(x) = (x - centre) / divisor a classifier is trained on (docs/proofs/training.md §3),
// planned from public values, estimated privately when feature_scale is absent, judged by the
// scale layer's reliability rule (scale/reliability.hpp), and folded into the returned model.
// Internal to src/training/.
//
// The target is unit scale per coordinate: each column standardised on its private median and
// robust sd, or, when the table is too short for 3d selections, every column divided by one
// private scale, the median row norm / sqrt(d). With clip = 1 most per-example gradients are
// then clipped (normalised DP-SGD), which is what a fixed clip and learning rate assume.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "dpstats/seam.hpp"
#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/training/classifier.hpp"
#include "dpstats/training/train_classifier.hpp"

namespace dpstats::optimize {

struct FeatureMap {
  Vector centre, divisor;
};

enum class FeatureSource {
  given,     // feature_scale public (or a non-private optimizer): u = x / feature_scale
  columns,   // per-column private median and robust sd
  global,    // one private scale: the median row norm / sqrt(d)
  unusable,  // neither estimate is reliable at this n, d and budget: the release abstains
};

struct FeaturePlan {
  FeatureSource source = FeatureSource::given;
  Reliability reliability;  // the plan's judgement (unusable: the cause and what would suffice)
  double share = 0;         // of the budget, for the estimate (given, or planned: plan_share)
  nlohmann::json scale_share;  // diagnostics.scale_share: {"value", "source", ...}; null: none
  nlohmann::json diagnostics = nlohmann::json::object();  // each estimate's rank error and need
};

// From public values only (n rows, d columns, the options), before anything is charged: the
// per-column plan when its 3d selections' rank error passes the reliability rule, else the global
// plan when its one selection's does, else `unusable`. With scale_share absent: per-column at a
// planned share up to 0.5 (1.25 x the smallest that passes; scale/share.hpp plan_share), else
// global at 0.05, else `unusable` (docs/proofs/training.md §3).
FeaturePlan plan_features(const ClassifyOptions& o, Eigen::Index n, Eigen::Index d);

// What the plan's estimate charges (nothing when the scale is given or the plan is unusable).
Ledger feature_entries(const ClassifyOptions& o, const FeaturePlan& p, Eigen::Index d);

// Runs the planned estimate, its mechanisms' entries claiming their places in the plan charged on
// `account` (feature_entries), writes what it released and cost to `d`, and returns the map, or nullopt with `reason`
// when the released estimate is not usable (reliability(...).reason()).
std::optional<FeatureMap> estimate_feature_map(const ClassifyOptions& o, const FeaturePlan& p,
                                               const ConstMatrixRef& X, ReleaseBudget& account,
                                               Rng& rng, nlohmann::json& d, std::string& reason);

// logits(u(x); W) = logits(x; W'): the first layer's feature rows divided by the divisors, its
// bias row minus sum_j centre_j W'_j (post-processing).
void fold_feature_map(Classifier& model, const FeatureMap& f);

}  // namespace dpstats::optimize
