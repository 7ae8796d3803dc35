// Pieces shared by the statistics' drivers (src/stats/ only).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/scale/clip_bounds.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/stats/stats.hpp"

namespace dpstats::stats::detail {

// Fractions of the release's budget: the statistic itself, the private count of the rows outside
// the bounds (given or estimated), the private estimate of absent bounds. They add up to at most 1.
struct Shares {
  double main = 1, clip_check = 0, scale = 0;
  // The estimated bounds judge the sides an atom hides (docs/proofs/scale.md §7b); quantiles do
  // not need it: their stated rank error carries every row outside their range.
  bool judge_sides = true;
};
// `clipped`: the statistic clips to per-column bounds (sum, mean, variance, std, and quantiles
// with given bounds), so it counts the rows outside them, and estimates them when absent.
Shares shares(const StatOptions& o, bool clipped);

// delta = 0: the basic accountant (every part pure epsilon-DP, Laplace);
// delta > 0: zCDP, the target met through the tight conversion (Gaussian parts by rho).
ReleaseBudget release_budget(const StatOptions& o, Budget* caller);
// The rho a delta > 0 target affords (slightly below the exact conversion, so that the parts'
// rounding never exceeds it).
double total_rho(const StatOptions& o);
// The pure epsilon of a `fraction` of the budget (zCDP counts pure epsilon as epsilon^2 / 2).
double pure_epsilon(double fraction, const StatOptions& o);

// One noise draw per value: Laplace (delta = 0) or Gaussian (delta > 0) at a fraction of the
// budget. `unit`: how much of the released quantity one unit of the noised value is.
class Noise {
 public:
  Noise(double sensitivity, double fraction, const StatOptions& o, std::size_t dimension,
        std::string purpose, double unit);
  LedgerEntry entry() const;
  // The released quantity's units per noised unit, once an earlier stage has released the
  // bounds that fix it (the mechanism, and so its charge, does not depend on them).
  void set_unit(double unit) { unit_ = unit; }
  double apply(double value, Rng& rng) const;
  double noise_scale() const;  // Laplace b or Gaussian sigma, in units of the noised value
  double unit() const { return unit_; }
  // The t with P(|noise| > t) <= beta, in released units (Laplace: b ln(1/beta); Gaussian:
  // sigma z_{1 - beta/2}).
  double bound(double beta) const;

 private:
  std::optional<LaplaceMechanism> laplace_;
  std::optional<GaussianMechanism> gaussian_;
  std::string purpose_;
  double unit_;
};

void validate_common(const StatOptions& o);
// At least one row and column, every value finite (before anything is charged).
void validate_table(const ConstMatrixRef& X);
// What every rank must pass alike (the guard before the first collective).
std::string fingerprint(const StatOptions& o, const char* statistic, Eigen::Index d);
// The rows of every rank after the guard (one process: validate_table and X.rows()).
std::int64_t guarded_rows(const ConstMatrixRef& X, const StatOptions& o, Communicator& comm,
                          const char* statistic);

// The planned entries of the bounds' private estimate (empty when the caller gave bounds): part
// of the release's plan, charged with the statistic's own entries.
Ledger bounds_plan(const StatOptions& o, const Shares& shares, std::size_t d);
// The reason the bounds' estimate is foreseen unusable from public values alone (their rank
// errors at shares.scale with d columns and the public n: scale/clip_bounds.hpp's
// planned_reliability), or nothing (also when the caller gave bounds). Such a release would
// abstain on that reason after charging; it abstains before charging instead.
std::optional<std::string> planned_bounds_abstention(const StatOptions& o, const Shares& shares,
                                                     std::size_t d, double n);

// The per-column bounds, and whether a release may rest on them: the caller's (one for all
// columns or one per column; always usable), or estimated privately from shares.scale of the
// budget (drawing bounds_plan's entries, stated in diagnostics["bounds_estimate"]) and judged by
// the scale layer's one rule (scale/reliability.hpp).
struct ColumnBoundsPlan {
  std::vector<ColumnBounds> bounds;
  Reliability reliability;
  bool estimated = false;
};
ColumnBoundsPlan column_bounds(const ConstMatrixRef& X, const StatOptions& o, const Shares& shares,
                               ReleaseBudget& account, Rng& rng, nlohmann::json& diagnostics);

// Absent bounds, estimated privately per column from shares.scale of the budget (the scale
// layer's private_clip_bounds with these options; judge_sides as shares says).
ClipBoundsOptions bounds_clip_options(const StatOptions& o, const Shares& shares);
ColumnBoundsPlan estimate_bounds(const ConstMatrixRef& X, const StatOptions& o, const Shares& shares,
                                 ReleaseBudget& account, Rng& rng, nlohmann::json& diagnostics);

struct ExactSums {
  Vector first, second;            // per column, in quantum units (exact integers)
  std::int64_t outside_rows = 0;   // rows with a value outside its column's bounds
};
// Column j: clip to bounds[j], map [lower, upper] to [0, Q] (first) and (x - centre)^2 in
// [0, w^2/4] to [0, Q] (second, when `squares`), round, add in the one exact sum
// (exact/exact_sum.hpp; n Q < 2^53).
ExactSums exact_sums(const ConstMatrixRef& X, const std::vector<ColumnBounds>& bounds, double Q,
                     bool squares, int threads);

// The confidence of every stated error of the statistics (diagnostics["stated_error"]).
inline constexpr double kStatedBeta = 0.01;

// Estimated bounds are designed to leave out 1% of each column's rows (scale/clip_bounds.hpp);
// a release warns when a low estimate of the rows they clipped exceeds 5% of the rows (as with
// given bounds) and abstains when it exceeds 10% per column: the tail the bounds were meant to
// hold lies beyond them (issue 27 case 3; docs/proofs/stats.md, "Stated error").
double clipped_threshold(std::size_t d);

// What the private count of the clipped rows says, as fractions of n: the upper confidence bound
// at 1 - beta (what the stated errors' clipping terms use) and a low estimate (2 noise scales
// below the count: the true fraction is below it with probability <= e^-2 / 2).
struct ClippedFraction {
  double upper = 1, low = 0;
};
// diagnostics["clipped_rows"]: a private count of the rows outside the bounds (given or
// estimated), with a warning when even a low estimate (4 scales below) exceeds 5% of the rows.
ClippedFraction report_clipped(const Noise& noise, std::int64_t outside, double n, bool estimated,
                               double beta, Rng& rng, nlohmann::json& diagnostics);

SealFacts facts(const StatOptions& o, Neighbouring neighbouring);
nlohmann::json bounds_json(const std::vector<ColumnBounds>& bounds);
nlohmann::json noise_scales(const std::vector<Noise>& noises, double factor);
// Rearranges `values` so that they are nondecreasing in `probabilities` (post-processing).
void sort_by_probability(Eigen::Ref<Vector> values, const std::vector<double>& probabilities);

}  // namespace dpstats::stats::detail
