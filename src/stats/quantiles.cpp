// Private quantiles of each column (stats/stats.hpp; docs/proofs/stats.md, "Quantiles").
// Each (column, probability) selects one cell of the linear grid of grid_size points over the
// column's range (scale/grid_quantile.hpp: cells scored by the distance of qn from their rank
// interval), so the release states its rank error exactly: with probability >= 1 - kStatedBeta
// every estimate lies in [Q(q - t/n) - h, Q(q + (t + 1)/n) + h] (capped to the range), t the
// selections' rank error plus the rows outside the range (a private count: a value outside
// counts below or above every cell: only a quantile that may lie beyond the range carries those
// rows, interior ones do not), h the grid step.
//  * given bounds: the range is the bounds;
//  * no bounds: the scale layer's clipping bounds (about the 0.005- and 0.995-quantiles, from
//    scale_share of the budget, used only when its reliability rule allows) widened kRangeWiden
//    times about their centre, so a quantile in a heavy tail is not capped at a clipping bound
//    (issue 27 case 3); the rows still outside widen the stated rank error instead.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "dpstats/comm/json.hpp"
#include "dpstats/error.hpp"
#include "dpstats/scale/clip_bounds.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "internal.hpp"

namespace dpstats::stats {

using detail::Noise;

namespace {

constexpr double kRangeWiden = 3;   // the estimated range: 3 times the clipping bounds' width
constexpr double kTolerance = 0.25; // the largest rank error / n a release states
// The bounds' share by default: their anchor and scans (40 units without the sides' 8) then get
// what kDefaultScaleShare gives them in sum and mean (0.6 x 40/48); the selections keep 0.45.
constexpr double kDefaultQuantileShare = 0.5;

struct QuantilePlan {
  std::vector<ColumnBounds> range;          // per column
  std::vector<std::vector<double>> grid;    // per column
  double epsilon = 0, beta = 0;             // per selection
  double rank_error = 0;                    // t of every selection
  Noise clip_check;                         // the rows outside the range
};

std::vector<ColumnBounds> widened(std::vector<ColumnBounds> b) {
  for (auto& c : b) {
    const double mid = c.lower + (c.upper - c.lower) / 2, half = (c.upper - c.lower) / 2;
    c = {std::max(mid - kRangeWiden * half, -std::numeric_limits<double>::max()),
         std::min(mid + kRangeWiden * half, std::numeric_limits<double>::max())};
  }
  return b;
}

// The grid over a column's range. Its cells are [p_i, p_{i+1}) (A_i = #{x < p_i}) and the rows
// outside the range are those below lower or above upper, so the last point lies one ulp above
// upper: a row equal to upper (a 0/1 flag with --bounds 0,1, a percentage at 100) is in the last
// cell. With upper itself as the last point such rows were in no cell and in no count: every
// cell's rank interval stopped below them, and the 0.95-quantile of a flag with 30% ones came out
// anywhere in (0, 1) (0.56, 0.83 at epsilon 3), 500 rows beyond its stated rank error of 38.
std::vector<double> range_grid(const ColumnBounds& r, std::size_t points) {
  const double top = std::nextafter(r.upper, std::numeric_limits<double>::infinity());
  return linear_grid(r.lower, std::isfinite(top) ? top : r.upper, points);
}

QuantilePlan plan_quantiles(const StatOptions& o, const detail::ColumnBoundsPlan& bounds,
                            const detail::Shares& shares) {
  const std::size_t d = bounds.bounds.size(), k = o.quantiles.size();
  const double selections = static_cast<double>(d * k);
  QuantilePlan p{bounds.estimated ? widened(bounds.bounds) : bounds.bounds, {},
                 detail::pure_epsilon(shares.main, o) / selections, detail::kStatedBeta / 2 / selections,
                 0, Noise(1, shares.clip_check, o, 1, "rows outside the quantiles' range", 1)};
  for (const auto& r : p.range) p.grid.push_back(range_grid(r, o.grid_size));
  p.rank_error = grid_quantile_rank_error(p.epsilon, o.grid_size, p.beta);
  return p;
}

// The rank error of the estimate for probability q: the selections' t, plus -- only when the
// q-quantile may lie beyond the range -- the rows that put it there: with R <= `outside` rows
// outside the range, the best cell's distance from qn is at most max(0, R - qn, R - (1 - q) n)
// (0 when qn lies between the rows below the range and those above it; docs/proofs/stats.md,
// "Quantiles"). An interior quantile's rank error is t alone.
double rank_error_at(double q, double t, double outside, double n) {
  return t + std::max({0.0, outside - q * n, outside - (1 - q) * n});
}

// The release's shares at the bounds' share s: the bounds without the sides' parts (§7b: the rows
// an atom hides beyond a collapsed range are carried by the extreme quantiles' rank error).
detail::Shares quantile_shares(const StatOptions& o, std::optional<double> s) {
  StatOptions at = o;
  if (s) at.scale_share = *s;
  detail::Shares shares = detail::shares(at, true);
  shares.judge_sides = false;
  return shares;
}

// The selections' own t at the bounds' share s, as plan_quantiles computes it (public values
// only; every estimate's rank error is at least t).
double planned_selection_rank_error(const StatOptions& o, double s, std::size_t d) {
  const detail::Shares shares = quantile_shares(o, s);
  const double selections = static_cast<double>(d * o.quantiles.size());
  return grid_quantile_rank_error(detail::pure_epsilon(shares.main, o) / selections, o.grid_size,
                                  detail::kStatedBeta / 2 / selections);
}

// The largest stated rank error the plan can foresee at the bounds' share s: t, and for an
// extreme quantile the rows outside the range at the count's noise bound alone (the count's
// upper bound when no row is outside).
double planned_rank_error(const StatOptions& o, double s, std::size_t d, double n) {
  const detail::Shares shares = quantile_shares(o, s);
  const double t = planned_selection_rank_error(o, s, d);
  const double outside = Noise(1, shares.clip_check, o, 1, "rows outside the quantiles' range", 1)
                             .bound(detail::kStatedBeta / 2);
  double worst = t;
  for (double q : o.quantiles) worst = std::max(worst, rank_error_at(q, t, outside, n));
  return worst;
}

// The smallest s in (lo, hi] with usable(s) (monotone: false below it, true from it), when
// usable(hi); else nullopt.
template <class F>
std::optional<double> smallest(F usable, double lo, double hi) {
  if (!usable(hi)) return std::nullopt;
  for (int i = 0; i < 60 && hi - lo > 1e-6 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (usable(mid) ? hi : lo) = mid;
  }
  return hi;
}

// The bounds' share without bounds (docs/proofs/scale.md §9, "stat quantiles"): given, used as
// is; absent, from n, d, k and the target only. The bounds' rule needs s >= s_b and the
// selections' (planned_rank_error <= kTolerance n) s < s_q:
// kDefaultQuantileShare when it lies in [s_b, s_q), else the middle of that interval, else the
// default (the release then abstains with the rule's reason, as any release whose plan fails).
nlohmann::json plan_scale_share(StatOptions& o, std::int64_t n, std::size_t d) {
  if (o.scale_share) return {{"value", *o.scale_share}, {"source", "given"}};
  const auto nd = static_cast<double>(n);
  const double top = 1 - 2 * kClipCheckShare;
  const auto bounds_ok = [&](double s) {
    return planned_reliability(detail::bounds_clip_options(o, quantile_shares(o, s)), d, nd,
                               "--bounds").usable;
  };
  const auto selections_ok = [&](double s) {
    return planned_rank_error(o, s, d, nd) <= kTolerance * nd;
  };
  // selections_ok is true below s_q: the smallest share at which it fails, from the top down.
  const auto s_b = smallest(bounds_ok, 0, top);
  const auto s_q_fails = smallest([&](double s) { return !selections_ok(s); }, 0, top);
  const double s_q = s_q_fails ? *s_q_fails : top;
  double s = kDefaultQuantileShare;
  const bool fits = s_b && selections_ok(*s_b) && *s_b <= s_q;
  if (fits && !(bounds_ok(s) && selections_ok(s))) s = (*s_b + s_q) / 2;
  o.scale_share = s;
  return {{"value", s},
          {"source", "planned"},
          {"usable", fits},
          {"rule", "from n, d, k and the budget only: the default 0.5 when both the bounds' and "
                   "the selections' rank errors meet their rules there, else the middle of the "
                   "shares where both do"}};
}

// The release's plan: the range's estimate (when absent), then one selection per (column,
// probability) and the count of the rows outside the range -- fixed by the target, d and k, not
// by the range an earlier stage releases.
Ledger planned(const StatOptions& o, const detail::Shares& shares, std::size_t d) {
  const std::size_t count = d * o.quantiles.size();
  Ledger l = detail::bounds_plan(o, shares, d);
  LedgerEntry e = grid_quantile_entry(
      detail::pure_epsilon(shares.main, o) / static_cast<double>(count),
      "quantile: a cell of the grid over the range");
  e.count = static_cast<int>(count);
  l.push_back(std::move(e));
  l.push_back(Noise(1, shares.clip_check, o, 1, "rows outside the quantiles' range", 1).entry());
  return l;
}

// The rows outside the range counted (over every rank), noised on rank 0; the count's upper
// confidence bound in rows, and diagnostics["clipped_rows"] (and a warning) on every rank.
double rows_outside(const ConstMatrixRef& X, const QuantilePlan& p, std::int64_t n, bool estimated,
                    const StatOptions& o, Communicator& comm, Rng& rng, nlohmann::json& diagnostics) {
  const detail::ExactSums s = detail::exact_sums(X, p.range, 1, false, o.run.threads);
  const std::int64_t outside = allreduce_count(comm, s.outside_rows);
  const auto nd = static_cast<double>(n);
  const nlohmann::json got = on_root_json(comm, [&] {
    nlohmann::json j;
    j["upper"] = detail::report_clipped(p.clip_check, outside, nd, estimated,
                                        detail::kStatedBeta / 2, rng, j).upper;
    return j;
  });
  diagnostics["clipped_rows"] = got["clipped_rows"];
  if (got.contains("warning")) diagnostics["warning"] = got["warning"];
  return got["upper"].get<double>() * nd;
}


void state_error(const QuantilePlan& p, const std::vector<double>& rank_error, std::int64_t n,
                 std::size_t k, nlohmann::json& diagnostics) {
  std::vector<double> resolution, ranks;
  nlohmann::json range = nlohmann::json::array();
  for (std::size_t j = 0; j < p.range.size(); ++j) {
    range.push_back({p.range[j].lower, p.range[j].upper});
    const double h = (p.grid[j].back() - p.grid[j].front()) / static_cast<double>(p.grid[j].size() - 1);
    resolution.insert(resolution.end(), k, h);
    ranks.insert(ranks.end(), rank_error.begin(), rank_error.end());
  }
  diagnostics["stated_error"] = {
      {"rank_error", ranks},
      {"rank_error_fraction", *std::max_element(rank_error.begin(), rank_error.end()) / static_cast<double>(n)},
      {"selection_rank_error", p.rank_error},
      {"resolution", resolution},
      {"range", range},
      {"confidence", 1 - detail::kStatedBeta},
      {"meaning", "with probability >= confidence every estimate lies between the column's "
                  "(q - rank_error/n)- and (q + (rank_error + 1)/n)-quantiles, widened by its "
                  "resolution on each side (a rank beyond the data: the end of the range); "
                  "rank_error is the selections' own (selection_rank_error) plus, for a quantile "
                  "that may lie beyond the range, the rows outside it"}};
}

// The reason public values already show the release would abstain (the bounds' rank errors, or
// the selections' own t, which every estimate's rank error includes), or nothing. The release
// would abstain on it after charging; it abstains before.
std::optional<std::string> planned_abstention(const StatOptions& o, const detail::Shares& shares,
                                              std::size_t d, double n) {
  if (auto bounds = detail::planned_bounds_abstention(o, shares, d, n)) return bounds;
  const Reliability r = assess({.rank_error = planned_selection_rank_error(o, shares.scale, d),
                                .n = n,
                                .tolerance = kTolerance},
                               "the quantiles' ranks", "--bounds");
  if (r.usable) return std::nullopt;
  return r.reason();
}

}  // namespace

Release<Vector> quantiles(const ConstMatrixRef& X, const StatOptions& given, Rng& rng,
                          Budget* budget) {
  // validate
  StatOptions o = given;
  detail::validate_common(o);
  require(!o.quantiles.empty(), "quantiles needs at least one probability, got none");
  for (double q : o.quantiles)
    require(q >= 0 && q <= 1, fmt::format("quantiles must each be in [0, 1], got {}", q));
  require(o.grid_size >= 2 && o.grid_size <= (std::size_t{1} << 24),
          fmt::format("grid_size must be in [2, 2^24], got {}", o.grid_size));
  Communicator& comm = comm_or_single(o.run.comm);
  const std::int64_t n = detail::guarded_rows(X, o, comm, "quantiles");
  const auto d = static_cast<std::size_t>(X.cols());
  const std::size_t k = o.quantiles.size();
  // plan: the range (given, or estimated -- planned with the rest -- and used only when usable),
  // the grids
  ReleaseBudget account = detail::release_budget(o, budget);
  nlohmann::json diagnostics = nlohmann::json::object();
  if (o.bounds.empty()) diagnostics["scale_share"] = plan_scale_share(o, n, d);
  const detail::Shares shares = quantile_shares(o, std::nullopt);
  std::optional<detail::ColumnBoundsPlan> public_bounds;  // checked before anything is charged
  if (!o.bounds.empty())
    public_bounds = detail::column_bounds(X, o, shares, account, rng, diagnostics);
  SealFacts facts = detail::facts(o, Neighbouring::replace_one);
  if ((facts.abstained = planned_abstention(o, shares, d, static_cast<double>(n))))
    return seal(Vector(), account, facts, rng, std::move(diagnostics));  // nothing charged
  // charge: the whole plan (the budget lives on rank 0)
  all_or_none(comm, [&] { account.charge(planned(o, shares, d)); });
  const detail::ColumnBoundsPlan bounds =
      public_bounds ? *public_bounds : detail::column_bounds(X, o, shares, account, rng, diagnostics);
  if (!bounds.reliability.usable) {
    facts.abstained = bounds.reliability.reason();
    return seal(Vector(), account, facts, rng, std::move(diagnostics));
  }
  const QuantilePlan p = plan_quantiles(o, bounds, shares);
  // run: each column's selections (counts over every rank, rank 0 draws); sorting each column's
  // answers by q is post-processing
  Vector estimate(static_cast<Eigen::Index>(d * k));
  std::vector<double> column(static_cast<std::size_t>(X.rows()));
  for (std::size_t j = 0; j < d; ++j) {
    for (Eigen::Index i = 0; i < X.rows(); ++i) column[static_cast<std::size_t>(i)] = X(i, static_cast<Eigen::Index>(j));
    for (std::size_t t = 0; t < k; ++t)
      estimate[static_cast<Eigen::Index>(j * k + t)] =
          grid_quantile_cell(column, p.grid[j], o.quantiles[t], p.epsilon, rng, comm).midpoint();
    detail::sort_by_probability(estimate.segment(static_cast<Eigen::Index>(j * k), static_cast<Eigen::Index>(k)), o.quantiles);
  }
  const double outside = rows_outside(X, p, n, bounds.estimated, o, comm, rng, diagnostics);
  const auto nd = static_cast<double>(n);
  std::vector<double> rank_error;  // per probability, the same for every column
  for (double q : o.quantiles) rank_error.push_back(rank_error_at(q, p.rank_error, outside, nd));
  // seal: abstain rather than state an interval wider than kTolerance of the rows
  diagnostics["n"] = n;
  diagnostics["epsilon_per_quantile"] = p.epsilon;
  const Reliability r = assess({.rank_error = *std::max_element(rank_error.begin(), rank_error.end()),
                                .n = nd, .tolerance = kTolerance, .epsilon = p.epsilon},
                               "the quantiles' ranks", "--bounds");
  if (!r.usable) {
    facts.abstained = r.reason();
    return seal(Vector(), account, facts, rng, std::move(diagnostics));
  }
  state_error(p, rank_error, n, k, diagnostics);
  return seal(std::move(estimate), account, facts, rng, std::move(diagnostics));
}

}  // namespace dpstats::stats
