// Per-column private location to a fraction of the scale (location.hpp; docs/proofs/scale.md §2b).
#include "dpstats/scale/location.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/release.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "dpstats/scale/share.hpp"
#include "column_stages.hpp"
#include "columns.hpp"

namespace dpstats {
namespace {

using namespace scale_detail;
using Plan = ColumnPlan<LocationOptions>;
std::size_t calls_per_column(const LocationOptions& o) { return o.final_mad ? 5 : 4; }

void check_options(const LocationOptions& o) {
  check_column_options(o);
  require(o.window >= 1 && o.window <= 1e3, "window must be in [1, 1e3], got {}",
          format_number(o.window));
  require(o.recentre_points >= 3 && o.recentre_points <= (std::size_t{1} << 24),
          "recentre_points must be in [3, 2^24], got {}", o.recentre_points);
}

// The midpoints of the released MAD cells of |x - centre_j| (one pass, d selections).
std::vector<double> private_mads(const ConstMatrixRef& X, const std::vector<double>& centre,
                                 const Plan& p, ColumnGenerators& gens, Communicator& comm) {
  const std::size_t d = centre.size();
  const auto cells = column_quantile_cells(X, same_grid(p.abs_grid, d), distance_to(centre), 0.5,
                                           p.epsilon, gens, p.o.threads, comm);
  const std::span<const double> g = p.abs_grid.grid();
  std::vector<double> mad(d);
  for (std::size_t j = 0; j < d; ++j) mad[j] = g[cells[j]] + (g[cells[j] + 1] - g[cells[j]]) / 2;
  return mad;
}

// The five steps of location.hpp, each one pass over the rows for every column at once; every
// grid is public given the earlier releases.
void estimate(const ConstMatrixRef& X, const Plan& p, Rng& rng, LocationEstimate& out) {
  const auto d = static_cast<std::size_t>(X.cols());
  Communicator& comm = comm_or_single(p.o.comm);
  ColumnGenerators gens(rng, d);
  const std::vector<RefinedMedian> m1 = refined_medians(X, p.signed_grid, p.o.refine_points,
                                                        p.epsilon, p.epsilon, gens, p.o.threads,
                                                        comm);
  std::vector<double> centre(d);
  for (std::size_t j = 0; j < d; ++j) centre[j] = m1[j].location;
  const std::vector<double> s1 = private_mads(X, centre, p, gens, comm);
  std::vector<GridIndex> windows;
  std::vector<bool> collapsed(d);
  for (std::size_t j = 0; j < d; ++j) {
    ColumnLocation& c = out.columns[j];
    c.spread = std::min(kMadToSigma * s1[j], kMaxDouble);
    const double half = std::min(p.o.window * (c.spread + m1[j].resolution), kMaxDouble);
    const double lower = clamp_finite(centre[j] - half), upper = clamp_finite(centre[j] + half);
    // A window that rounds to one point keeps the refined cell (its selection runs on a dummy
    // grid and is ignored: it spends no more than charged).
    collapsed[j] = !(lower < upper);
    windows.push_back(
        collapsed[j]
            ? GridIndex::points(std::vector<double>{lower, std::nextafter(lower, kMaxDouble)})
            : GridIndex::dyadic(lower, upper, p.o.recentre_points));
  }
  std::vector<const GridIndex*> grids;
  for (const GridIndex& w : windows) grids.push_back(&w);
  const auto m2 = column_quantile_cells(X, grids, identity(), 0.5, p.epsilon, gens, p.o.threads,
                                        comm);
  for (std::size_t j = 0; j < d; ++j) {
    ColumnLocation& c = out.columns[j];
    const double lo = windows[j].point(m2[j]), hi = windows[j].point(m2[j] + 1);
    c.location = collapsed[j] ? m1[j].location : lo + (hi - lo) / 2;
    c.resolution = collapsed[j] ? m1[j].resolution : hi - lo;
    centre[j] = c.location;
  }
  const std::vector<double> mad = p.o.final_mad ? private_mads(X, centre, p, gens, comm) : s1;
  for (std::size_t j = 0; j < d; ++j) {
    ColumnLocation& c = out.columns[j];
    c.mad = mad[j];
    c.scale = std::min(kMadToSigma * c.mad, kMaxDouble);
    set_status(c, p, m1[j].at_end, "the location");
  }
}

nlohmann::json column_json(const ColumnLocation& c) {
  nlohmann::json j = {{"location", c.location}, {"scale", c.scale},
                      {"mad", c.mad},           {"resolution", c.resolution},
                      {"spread", c.spread},     {"status", to_string(c.status)}};
  if (!c.reason.empty()) j["reason"] = c.reason;
  return j;
}

}  // namespace

Vector LocationEstimate::location() const {
  Vector v(static_cast<Eigen::Index>(columns.size()));
  for (std::size_t j = 0; j < columns.size(); ++j) v[static_cast<Eigen::Index>(j)] = columns[j].location;
  return v;
}

Vector LocationEstimate::scale() const {
  Vector v(static_cast<Eigen::Index>(columns.size()));
  for (std::size_t j = 0; j < columns.size(); ++j) v[static_cast<Eigen::Index>(j)] = columns[j].scale;
  return v;
}

bool LocationEstimate::all_ok() const {
  return std::all_of(columns.begin(), columns.end(),
                     [](const ColumnLocation& c) { return c.status == ScaleStatus::ok; });
}

nlohmann::json LocationEstimate::diagnostics() const {
  return columns_diagnostics(
      *this, "private_location (log-grid median, refined, spread, re-centred, MAD)", column_json);
}

namespace {

// The failure probability of each event: every selection and, under add/remove, the row count.
double event_beta(const LocationOptions& o, std::size_t d) {
  return o.beta / static_cast<double>(calls_per_column(o) * d + (counts_rows(o.neighbouring) ? 1 : 0));
}

double rank_error_of(const LocationOptions& o, std::size_t d, double epsilon, std::size_t grid) {
  const std::size_t largest = std::max({grid, o.refine_points, o.recentre_points});
  return grid_quantile_rank_error(epsilon, largest, event_beta(o, d));
}

// The public plan of d columns (n unset): the run's and a dry run's.
Plan location_plan(const LocationOptions& o, std::size_t d) {
  Plan p = column_plan(o, calls_per_column(o) * d);
  p.rank_error = rank_error_of(o, d, p.epsilon, p.signed_grid.grid().size());
  return p;
}

}  // namespace

Ledger private_location_entries(const LocationOptions& o, std::size_t d) {
  check_options(o);
  require(d >= 1, "d must be >= 1, got {}", d);
  Ledger entries =
      o.final_mad
          ? column_entries(o, d, "location",
                           {"coarse median cell on the log grid", "refined median on a linear grid",
                            "spread (MAD cell) for the window",
                            "re-centred median on a linear grid", "MAD cell around the location"})
          : column_entries(o, d, "location",
                           {"coarse median cell on the log grid", "refined median on a linear grid",
                            "spread (MAD cell) for the window",
                            "re-centred median on a linear grid"});
  if (dry_run_active())
    note_planned_check({fmt::format("the location ({} columns)", d),
                        planned_column_facts(location_plan(o, d)),
                        count_margin(o.loss, o.neighbouring, event_beta(o, d)),
                        entries.back().purpose});
  return entries;
}

std::optional<std::string> private_location_shortfall(const LocationOptions& o, std::size_t n,
                                                      std::size_t d) {
  check_options(o);
  require(d >= 1, "d must be >= 1, got {}", d);
  if (o.neighbouring != Neighbouring::replace_one) return std::nullopt;
  const double e = per_call_epsilon(selection_share(o.loss, o.neighbouring),
                                    calls_per_column(o) * d);
  const std::size_t grid = log_grid_points(o.per_octave);
  const double t = rank_error_of(o, d, e, grid);
  const SelectionFacts f{.rank_error = t, .tolerance = 0.3, .alpha = o.alpha, .epsilon = e};
  if (n >= 1 && static_cast<double>(n) >= rows_needed(f)) return std::nullopt;  // the one rule
  return fmt::format("a private location of {} columns from {} rows at {} per selection has rank "
                     "error t = {} (probability beta = {}): t/n + alpha > 0.3",
                     d, n, format_number(e), format_number(t), format_number(o.beta));
}

LocationEstimate private_location(const ConstMatrixRef& X, const LocationOptions& o,
                                  ReleaseBudget& account, Rng& rng) {
  check_options(o);
  Communicator& comm = comm_or_single(o.comm);
  const std::int64_t n = guarded_rows(X, comm, fingerprint_of("location", o, X.cols()));
  const auto d = static_cast<std::size_t>(X.cols());
  LocationEstimate out;
  out.entries = private_location_entries(o, d);
  all_or_none(comm, [&] { account.claim(out.entries); });

  Plan p = location_plan(o, d);
  p.n = rows_for_checks(n, o.loss, o.neighbouring, event_beta(o, d), comm, rng);
  stamp(out, p, d);
  estimate(X, p, rng, out);
  return out;
}

}  // namespace dpstats
