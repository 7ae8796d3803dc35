// The everyday statistics: private count, sum, mean, variance, standard deviation, quantiles and
// a categorical histogram, on the substrate's secure mechanisms (docs/proofs/stats.md).
//
// Neighbouring: count and histogram are private under add/remove of one row (a count under
// replace-one is not private information); sum, mean, variance, std and quantiles under
// replace-one with the number of rows n public (as every mean of the library).
//
// Per-column bounds: `bounds` holds one (lower, upper) per column, or one for every column. Each
// value is clipped to its column's bounds, so the bounds are the public scale of the release.
// When `bounds` is empty they are estimated privately per column (scale/clip_bounds.hpp) from
// `scale_share` of the budget; the estimate and its cost are in diagnostics["bounds_estimate"],
// and the release abstains with the scale layer's reason (scale/reliability.hpp: the cause and
// what would suffice) when the estimate is not usable. A private count of the rows outside the
// bounds, given or estimated, is released from kClipCheckShare of the budget
// (diagnostics["clipped_rows"], with a warning above 5% of the rows).
// Stated error (diagnostics["stated_error"], docs/proofs/stats.md): every release but the
// histogram states, at confidence 0.99, its noise term plus the clipped rows' term (sum, mean,
// variance, std: around the statistic of the column winsorised at the bounds widened by their
// width) or its rank error (quantiles: the estimate lies between two quantiles of the column).
//
// Noise: delta = 0 gives pure epsilon-DP (Laplace; quantiles: permute-and-flip), delta > 0
// Gaussian noise ((epsilon, delta)-DP, basic composition of the parts). Every entry point runs
// validate -> plan -> charge -> run -> seal (seam.hpp) and charges the caller's Budget when given.
// Ranks (issue 18; o.run.comm): every statistic, histogram included, takes each rank's own rows
// (values) and gives every rank the one-process seeded release; rank 0 draws the noise.
#pragma once
#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/names.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/profile.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/registry.hpp"
#include "dpstats/release.hpp"
#include "dpstats/run_control.hpp"

namespace dpstats::stats {

enum class Statistic { count, sum, mean, variance, std, quantiles, histogram };

struct ColumnBounds {
  double lower = 0, upper = 0;  // lower < upper, finite
};

template <class V>
void visit_fields(const ColumnBounds& b, V& v) {
  v("lower", b.lower);
  v("upper", b.upper);
}

// The share of epsilon (and delta) that checks whether user-given bounds bite.
inline constexpr double kClipCheckShare = 0.05;
// sum, mean, variance, std without bounds and without a given scale_share: the bounds' share.
// 0.6: half for the bounds' selections and scans (40 of their 48 units, as before issue 27's
// side counts), 10% for the fine cell and the side counts that catch a column whose rows mostly
// equal one value (docs/proofs/scale.md §7b).
inline constexpr double kDefaultScaleShare = 0.6;

struct StatOptions {
  PrivacyTarget privacy;
  Profile profile = Profile::practical;  // no statistic has a paper profile; kept for the seam
  RunControl run;
  std::vector<ColumnBounds> bounds;  // one per column or one for all; empty: estimated privately
  // (0, 1): budget share for estimating absent bounds; given, used as is. Absent: sum, mean,
  // variance, std take kDefaultScaleShare (on a small table the bounds decide whether anything
  // can be released: the sweep's 3 000 ratings need it at epsilon 0.3; the statistic's own noise
  // is then at most 2.5 times as large); quantiles plan it from n, d, k and the target so that
  // both the bounds' and the selections' rank errors pass, 0.5 when they do there (their bounds
  // skip the atom sides' 8 units: docs/proofs/scale.md §9). Give bounds when they are public.
  std::optional<double> scale_share;
  std::vector<double> quantiles;     // quantiles: the probabilities, each in [0, 1]
  std::size_t grid_size = 1024;      // quantiles: candidates per column, evenly spaced in bounds
  std::vector<std::string> categories;  // histogram: public categories (empty: selected privately)
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp).
template <class V>
void visit_fields(const StatOptions& o, V& v) {
  v("epsilon", o.privacy.epsilon);
  v("delta", o.privacy.delta);
  v("profile", o.profile);
  v("noise", o.run.noise);
  v("bounds", o.bounds);
  v("scale_share", o.scale_share);
  v("quantiles", o.quantiles);
  v("grid_size", o.grid_size);
  v("categories", o.categories);
}

// The statistics' declared options as a user gives them (absent: StatOptions' default). Listed
// once in visit_fields (dpstats/option_fields.hpp): the tool's flags, the Python keywords and
// the options a request sets walk it; which statistic reads which is each declaration's
// `methods` (src/options.cpp), read by the registry below.
struct StatRequest {
  std::optional<std::vector<double>> bounds;  // LO,HI once for every column, or per column
  std::optional<double> scale_share;          // shared (--scale-share); listed for Python
  std::optional<std::vector<double>> quantiles;
  std::optional<int> grid_size;
  std::optional<std::vector<std::string>> categories;
};

template <class R, class V>
  requires std::same_as<std::remove_cvref_t<R>, StatRequest>
void visit_fields(R&& r, V&& v) {
  v("bounds", r.bounds);
  v("scale_share", r.scale_share);
  v("quantiles", r.quantiles);
  v("grid_size", r.grid_size);
  v("categories", r.categories);
}

// `o` with the options `request` sets for statistic `s`: an option `s` does not read is the
// registry's InvalidArgument naming it, bounds that are not LO,HI pairs name the count.
void apply_request(Statistic s, const StatRequest& request, StatOptions& o);

// count: the number of rows (estimate of length 1), add/remove.
Release<Vector> count(const ConstMatrixRef& X, const StatOptions& o, Rng& rng,
                      Budget* budget = nullptr);
// sum, mean, variance, std: one value per column.
Release<Vector> sum(const ConstMatrixRef& X, const StatOptions& o, Rng& rng,
                    Budget* budget = nullptr);
Release<Vector> mean(const ConstMatrixRef& X, const StatOptions& o, Rng& rng,
                     Budget* budget = nullptr);
Release<Vector> variance(const ConstMatrixRef& X, const StatOptions& o, Rng& rng,
                         Budget* budget = nullptr);
Release<Vector> std_dev(const ConstMatrixRef& X, const StatOptions& o, Rng& rng,
                        Budget* budget = nullptr);
// quantiles: column j's quantiles at estimate[j * k .. j * k + k) for k = o.quantiles.size(),
// nondecreasing in the probability: one grid cell per quantile over the bounds, or without them
// over the estimated bounds widened 3 times (a quantile in a heavy tail is not capped).
Release<Vector> quantiles(const ConstMatrixRef& X, const StatOptions& o, Rng& rng,
                          Budget* budget = nullptr);

struct Histogram {
  std::vector<std::string> categories;  // released categories (sorted)
  Vector counts;                        // their noisy counts (>= 0)
};
// histogram of one categorical column (one string per row), add/remove. With public
// `categories` every one of them is released (others are dropped, pure DP when delta = 0);
// without, categories are selected privately (stability histogram; needs delta > 0).
Release<Histogram> histogram(std::span<const std::string> values, const StatOptions& o, Rng& rng,
                             Budget* budget = nullptr);

// The numeric statistics by name (everything but histogram), for the tool and Python.
Release<Vector> numeric(Statistic s, const ConstMatrixRef& X, const StatOptions& o, Rng& rng,
                        Budget* budget = nullptr);

// One registry for the tool and Python: each statistic, its summary and the options it reads.
std::span<const MethodInfo> registry();

}  // namespace dpstats::stats

template <>
struct dpstats::EnumNames<dpstats::stats::Statistic> {
  using E = dpstats::stats::Statistic;
  static constexpr std::string_view parameter = "statistic";
  static constexpr std::array<std::pair<E, std::string_view>, 7> names = {
      {{E::count, "count"},
       {E::sum, "sum"},
       {E::mean, "mean"},
       {E::variance, "variance"},
       {E::std, "std"},
       {E::quantiles, "quantiles"},
       {E::histogram, "histogram"}}};
};
