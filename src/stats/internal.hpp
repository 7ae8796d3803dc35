// Pieces shared by the statistics' drivers (src/stats/ only).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/stats/stats.hpp"

namespace dpstats::stats::detail {

// Fractions of the release's budget: the statistic itself, the check of user-given bounds, the
// private estimate of absent bounds. They add up to at most 1.
struct Shares {
  double main = 1, clip_check = 0, scale = 0;
};
Shares shares(const StatOptions& o);

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
  double scale() const;  // Laplace b or Gaussian sigma, in units of the noised value
  double unit() const { return unit_; }

 private:
  std::optional<LaplaceMechanism> laplace_;
  std::optional<GaussianMechanism> gaussian_;
  std::string purpose_;
  double unit_;
};

void validate_common(const StatOptions& o);
// At least one row and column, every value finite (before anything is charged).
void validate_table(const ConstMatrixRef& X);

// The planned entries of the bounds' private estimate (empty when the caller gave bounds): part
// of the release's plan, charged with the statistic's own entries.
Ledger bounds_plan(const StatOptions& o, const Shares& shares, std::size_t d);

// The per-column bounds: the caller's (one for all columns or one per column), or estimated
// privately from shares.scale of the budget (drawing bounds_plan's entries, stated in
// diagnostics).
std::vector<ColumnBounds> column_bounds(const ConstMatrixRef& X, const StatOptions& o,
                                        const Shares& shares, ReleaseBudget& account, Rng& rng,
                                        nlohmann::json& diagnostics);

// Absent bounds, estimated privately per column from `fraction` of the budget (the scale layer's
// private_scale with these options).
ScaleOptions bounds_scale_options(const StatOptions& o, double fraction);
std::vector<ColumnBounds> estimate_bounds(const ConstMatrixRef& X, const StatOptions& o,
                                          double fraction, ReleaseBudget& account, Rng& rng,
                                          nlohmann::json& diagnostics);

struct ExactSums {
  Vector first, second;            // per column, in quantum units (exact integers)
  std::int64_t outside_rows = 0;   // rows with a value outside its column's bounds
};
// Column j: clip to bounds[j], map [lower, upper] to [0, Q] (first) and (x - centre)^2 in
// [0, w^2/4] to [0, Q] (second, when `squares`), round, add in the one exact sum
// (mechanisms/exact_sum.hpp; n Q < 2^53).
ExactSums exact_sums(const ConstMatrixRef& X, const std::vector<ColumnBounds>& bounds, double Q,
                     bool squares, int threads);

// diagnostics["clipped_rows"]: a private count of rows outside user-given bounds.
void report_clipped(const Noise& noise, std::int64_t outside, double n, Rng& rng,
                    nlohmann::json& diagnostics);

SealFacts facts(const StatOptions& o, Neighbouring neighbouring);
nlohmann::json bounds_json(const std::vector<ColumnBounds>& bounds);
nlohmann::json noise_scales(const std::vector<Noise>& noises, double factor);
nlohmann::json grid_steps(const std::vector<ColumnBounds>& bounds, std::size_t grid);
// Rearranges `values` so that they are nondecreasing in `probabilities` (post-processing).
void sort_by_probability(Eigen::Ref<Vector> values, const std::vector<double>& probabilities);

}  // namespace dpstats::stats::detail
