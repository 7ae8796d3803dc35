// Exponential mechanism over the cells of a public grid (grid_quantile.hpp). Quality of cell i:
// -dist(q n, [A_i, A_{i+1}]) with A_i = #{x < p_i}. Replace-one moves every A_i by at most 1;
// add/remove moves each A_i by 0 or 1 and q n by q; dist(t, [a, b]) = max(a - t, t - b, 0) is
// 1-Lipschitz in (t, a, b) for the sup norm, so the sensitivity is 1 (docs/proofs/scale.md §1).
#include "dpstats/scale/grid_quantile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "grid_counts.hpp"
#include "grid_select.hpp"

namespace dpstats {
namespace {

using namespace scale_detail;

void check_grid(std::span<const double> grid) {
  require(grid.size() >= 2, "grid must hold at least 2 points, got {}", grid.size());
  for (std::size_t i = 0; i < grid.size(); ++i) {
    require(std::isfinite(grid[i]), "grid[{}] must be finite", i);
    require(i == 0 || grid[i - 1] < grid[i], "grid must be strictly increasing, not at index {}",
            i);
  }
}

// The values, checked finite.
void check_values(std::span<const double> values) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    require(std::isfinite(values[i]), "values has a NaN or infinite value at index {}", i);
  }
}

}  // namespace

std::size_t log_grid_points(int per_octave, bool nonnegative) {
  require(per_octave >= 1 && per_octave <= 1024,
          "per_octave must be an integer in [1, 1024], got {}", per_octave);
  const std::size_t positive = 2046 * static_cast<std::size_t>(per_octave) + 1;
  return nonnegative ? positive + 1 : 2 * positive + 1;
}

std::vector<double> log_grid(int per_octave, bool nonnegative) {
  require(per_octave >= 1 && per_octave <= 1024,
          "per_octave must be an integer in [1, 1024], got {}", per_octave);
  constexpr int kMinExp = std::numeric_limits<double>::min_exponent - 1;  // -1022
  constexpr int kMaxExp = std::numeric_limits<double>::max_exponent - 1;  // 1023
  std::vector<double> positive;
  positive.reserve(static_cast<std::size_t>(kMaxExp - kMinExp + 1) * per_octave + 1);
  for (int k = kMinExp; k <= kMaxExp; ++k) {
    for (int j = 0; j < per_octave; ++j) {
      positive.push_back(std::ldexp(1.0 + static_cast<double>(j) / per_octave, k));
    }
  }
  positive.push_back(std::numeric_limits<double>::max());
  std::vector<double> grid;
  grid.reserve(2 * positive.size() + 1);
  if (!nonnegative) {
    for (auto it = positive.rbegin(); it != positive.rend(); ++it) grid.push_back(-*it);
  }
  grid.push_back(0.0);
  grid.insert(grid.end(), positive.begin(), positive.end());
  return grid;
}

std::vector<double> linear_grid(double lower, double upper, std::size_t points) {
  check_finite(lower, "lower");
  check_finite(upper, "upper");
  require(lower < upper, "lower must be < upper, got lower = {}, upper = {}", format_number(lower),
          format_number(upper));
  require(points >= 2, "points must be >= 2, got {}", points);
  const double last = static_cast<double>(points - 1);
  std::vector<double> grid;
  grid.reserve(points);
  for (std::size_t k = 0; k < points; ++k) {
    // Convex combination: no overflow even when upper - lower is not finite.
    const double t = static_cast<double>(k) / last;
    const double p = k + 1 == points ? upper : std::clamp(lower * (1 - t) + upper * t, lower, upper);
    if (grid.empty() || p > grid.back()) grid.push_back(p);
  }
  return grid;
}

std::vector<double> dyadic_grid(double lower, double upper, std::size_t points) {
  const DyadicSteps s = dyadic_steps(lower, upper, points);
  if (!s.exact) return linear_grid(lower, upper, points);
  std::vector<double> grid;
  grid.reserve(static_cast<std::size_t>(s.last - s.first) + 1);
  for (double k = s.first; k <= s.last; k += 1) grid.push_back(k * s.h);  // exact: |k| < 2^52
  return grid;
}

GridCell grid_quantile_cell(std::span<const double> values, std::span<const double> grid, double q,
                            double epsilon, Rng& rng) {
  require(q >= 0 && q <= 1, "q must be in [0, 1], got {}", format_number(q));
  check_epsilon(epsilon);
  check_grid(grid);
  require(!values.empty(), "values must hold at least one value, got 0");
  check_values(values);
  const auto n = static_cast<std::int64_t>(values.size());
  const std::size_t i = select_cell(counts_below({values.begin(), values.end()}, grid), n, q,
                                    epsilon, rng);
  return {grid[i], grid[i + 1], i};
}

GridCell grid_quantile_cell(std::span<const double> values, std::span<const double> grid, double q,
                            double epsilon, Rng& rng, Communicator& comm) {
  if (comm.size() == 1) return grid_quantile_cell(values, grid, q, epsilon, rng);
  require(q >= 0 && q <= 1, "q must be in [0, 1], got {}", format_number(q));
  check_epsilon(epsilon);
  check_grid(grid);
  std::vector<std::int64_t> words;  // the counts below each grid point, then the value count
  all_or_none(comm, [&] { check_values(values); });
  words = merged_counts_below(values, grid, comm);
  const std::int64_t n = words.back();
  require(n >= 1, "values must hold at least one value over the {} ranks, got 0", comm.size());
  const auto i = on_root(comm, [&] {
    return select_cell({words.data(), grid.size()}, n, q, epsilon, rng);
  });
  return {grid[i], grid[i + 1], i};
}

LedgerEntry grid_quantile_entry(double epsilon, std::string purpose) {
  ExponentialMechanismOptions selection;
  selection.epsilon = epsilon;
  selection.sensitivity = 1;
  selection.monotone = false;
  LedgerEntry e = exponential_mechanism_entry(selection, std::move(purpose));
  e.mechanism = "grid_quantile";
  return e;
}

double grid_quantile_rank_error(double epsilon, std::size_t grid_points, double beta) {
  check_epsilon(epsilon);
  require(grid_points >= 2, "grid_points must be >= 2, got {}", grid_points);
  require(beta > 0 && beta < 1, "beta must be in (0, 1), got {}", format_number(beta));
  const double cells = static_cast<double>(grid_points - 1);
  return 2 * (std::log(cells) + std::log(1 / beta)) / epsilon;
}

}  // namespace dpstats
