// Per-column private clipping bounds (clip_bounds.hpp; docs/proofs/scale.md §7).
#include "dpstats/scale/clip_bounds.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "dpstats/scale/share.hpp"
#include "dpstats/scale/threshold_scan.hpp"
#include "column_stages.hpp"
#include "columns.hpp"
#include "grid_select.hpp"
#include "row_count.hpp"

namespace dpstats {
namespace {

using namespace scale_detail;

// A column's part of the selections' share in units: coarse anchor 6, refined anchor 6, each scan
// 14 (under add/remove the count of the rows takes 1/8 of the share first, row_count.hpp). Both
// anchor selections face ~2^17 cells and need about as much; a failed refine leaves bounds that
// still hold the data but are as wide as a coarse cell (1/32 of |anchor|).
constexpr std::size_t kCoarse = 6, kRefine = 6, kScan = 14, kColumn = 40;
// The anchor must lie inside the data (rank error / n + alpha <= 1/2: its rank interval is inside
// [0, n], so the scans start between the data's extremes); the scans' rank error must leave most
// rows inside the bounds.
constexpr double kAnchorTolerance = 0.5, kTolerance = 0.3;

void check_options(const ClipBoundsOptions& o) {
  check_share(o.loss);
  require(o.coverage > 0 && o.coverage < 0.5, "coverage must be in (0, 0.5), got {}",
          format_number(o.coverage));
  require(o.alpha >= 0 && o.alpha < 0.3, "alpha must be in [0, 0.3), got {}",
          format_number(o.alpha));
  require(o.beta > 0 && o.beta < 1, "beta must be in (0, 1), got {}", format_number(o.beta));
  require(o.per_octave >= 1 && o.per_octave <= 1024,
          "per_octave must be an integer in [1, 1024], got {}", o.per_octave);
  require(o.scan_per_octave >= 1 && o.scan_per_octave <= 1024,
          "scan_per_octave must be an integer in [1, 1024], got {}", o.scan_per_octave);
  require(o.refine_points >= 3 && o.refine_points <= (std::size_t{1} << 24),
          "refine_points must be in [3, 2^24], got {}", o.refine_points);
  require(o.threads >= 1 && o.threads <= 256, "threads must be in [1, 256], got {}", o.threads);
}

// The public plan: every epsilon, the grid, and (once n is known) the threshold and rank errors.
struct Plan {
  const ClipBoundsOptions& o;
  double e_coarse = 0, e_refine = 0, e_scan = 0;
  GridIndex grid{};          // the signed log grid of the anchor's coarse cells
  GridIndex offsets{};       // the signed log grid of the scans' offsets (scan_per_octave)
  std::size_t zero = 0;      // offsets[zero] == 0
  double n = 0;              // rows the thresholds use: n, or n_low under add/remove
  std::int64_t threshold = 0;
  double anchor_rank_error = 0, scan_rank_error = 0;
};

Plan make_plan(const ClipBoundsOptions& o, std::size_t d) {
  check_options(o);
  require(d >= 1, "d must be >= 1, got {}", d);
  const std::size_t total = kColumn * d;
  const PrivacyLoss share = selection_share(o.loss, o.neighbouring);
  Plan p{.o = o};
  p.e_coarse = units_epsilon(share, kCoarse, total);
  p.e_refine = units_epsilon(share, kRefine, total);
  p.e_scan = units_epsilon(share, kScan, total);
  return p;
}

// The thresholds and stated rank errors once the rows (or their lower bound) are known.
void set_rows(Plan& p, std::size_t d, double n) {
  p.n = n;
  p.threshold = static_cast<std::int64_t>(std::ceil((1 - p.o.coverage / 2) * n));
  const double beta = p.o.beta / static_cast<double>(4 * d + 1);  // every event of the estimate
  // The coarse selection decides where the scans start; the refine moves the anchor by at most
  // one coarse cell either way (a wider pair of bounds, released as such), so only the coarse
  // selection's rank error is judged.
  const std::size_t offsets = log_grid_points(p.o.scan_per_octave);  // offsets[size / 2] == 0
  p.anchor_rank_error =
      grid_quantile_rank_error(p.e_coarse, log_grid_points(p.o.per_octave), beta);
  p.scan_rank_error = ThresholdScan::rank_error(p.e_scan, offsets - offsets / 2, beta);
}

// The scan over offsets: counts[k] for the k-th offset from `first`; the index where it halts,
// or counts.size() when it walks past the last one.
std::size_t scan(std::span<const std::int64_t> counts, const Plan& p, Rng& rng) {
  ThresholdScan s(p.threshold, p.e_scan, rng);
  for (std::size_t k = 0; k < counts.size(); ++k)
    if (s.above(counts[k])) return k;
  return counts.size();
}

double up(double x) { return std::min(std::nextafter(x, kMaxDouble * 2), kMaxDouble); }
double down(double x) { return std::max(std::nextafter(x, -kMaxDouble * 2), -kMaxDouble); }

// Column j's two scans from its counts of y = x - a_j on the signed log grid (below[i] =
// #{y < p_i}, then n): the offsets are the positive grid points from the first one >= r_j.
void scan_tails(std::span<const std::int64_t> below, ColumnClipBounds& c, const Plan& p,
                Rng& rng) {
  const std::span<const double> g = p.offsets.grid();
  const std::int64_t n = below.back();
  const auto first = static_cast<std::size_t>(
      std::lower_bound(g.begin() + static_cast<std::ptrdiff_t>(p.zero) + 1, g.end(),
                       c.resolution) - g.begin());
  const std::size_t steps = g.size() - first;
  std::vector<std::int64_t> upper(steps), lower(steps);
  for (std::size_t k = 0; k < steps; ++k) {
    upper[k] = below[first + k];                     // #{y < delta_k}
    lower[k] = n - below[2 * p.zero - (first + k)];  // #{y >= -delta_k}
  }
  const std::size_t hi_k = scan(upper, p, rng), lo_k = scan(lower, p, rng);
  c.hi_at_end = hi_k == steps;
  c.lo_at_end = lo_k == steps;
  c.hi = c.hi_at_end ? kMaxDouble : up(c.anchor + g[first + hi_k]);
  c.lo = c.lo_at_end ? -kMaxDouble : down(c.anchor - g[first + lo_k]);
}

// The facts reliability() judges: the anchor's selections, and the scans (whose grid end means
// the bound is +/- DBL_MAX).
void set_facts(ColumnClipBounds& c, const Plan& p) {
  c.anchor_facts = {.rank_error = p.anchor_rank_error, .n = p.n, .tolerance = kAnchorTolerance,
                    .alpha = p.o.alpha, .epsilon = p.e_coarse, .at_grid_end = c.anchor_at_end};
  c.tail_facts = {.rank_error = p.scan_rank_error, .n = p.n, .tolerance = kTolerance,
                  .alpha = 0, .epsilon = p.e_scan, .at_grid_end = c.lo_at_end || c.hi_at_end};
}

// Every column: the anchors (two passes, 2d selections), then the offsets' counts (one pass) and
// the two scans per column, on rank 0 (columns in parallel when the generators split), given to
// every rank.
void estimate(const ConstMatrixRef& X, const Plan& p, Rng& rng, ClipBounds& out) {
  const auto d = static_cast<std::size_t>(X.cols());
  Communicator& comm = comm_or_single(p.o.comm);
  ColumnGenerators gens(rng, d);
  const std::vector<RefinedMedian> anchor = refined_medians(
      X, p.grid, p.o.refine_points, p.e_coarse, p.e_refine, gens, p.o.threads, comm);
  std::vector<double> a(d);
  for (std::size_t j = 0; j < d; ++j) a[j] = anchor[j].location;
  const auto counts = merged_column_counts(
      X, same_grid(p.offsets, d), [&a](std::size_t j, double x) { return clamp_magnitude(x - a[j]); },
      p.o.threads, comm);
  const std::vector<double> bounds = on_root(comm, [&] {
    std::vector<double> lo_hi(2 * d);
    parallel_tasks(d, gens.split() && comm.size() == 1 ? p.o.threads : 1, [&](std::size_t j) {
      ColumnClipBounds c;
      c.anchor = a[j];
      c.resolution = anchor[j].resolution;
      scan_tails(counts[j], c, p, gens[j]);
      lo_hi[2 * j] = c.lo;
      lo_hi[2 * j + 1] = c.hi;
    });
    return lo_hi;
  });
  for (std::size_t j = 0; j < d; ++j) {
    ColumnClipBounds& c = out.columns[j];
    c.anchor = a[j];
    c.resolution = anchor[j].resolution;
    c.anchor_at_end = anchor[j].at_end;
    c.lo = bounds[2 * j];
    c.hi = bounds[2 * j + 1];
    c.lo_at_end = c.lo == -kMaxDouble;
    c.hi_at_end = c.hi == kMaxDouble;
    set_facts(c, p);
  }
}

// What every rank must pass alike: the options that shape the estimate (exact floats) and d.
std::string fingerprint(const ClipBoundsOptions& o, Eigen::Index d) {
  return fmt::format("clip_bounds d={} loss={} {:a} {:a} {:a} coverage={:a} alpha={:a} beta={:a} "
                     "per_octave={} scan_per_octave={} refine={} neighbouring={}",
                     d, static_cast<int>(o.loss.kind), o.loss.epsilon, o.loss.delta, o.loss.rho,
                     o.coverage, o.alpha, o.beta, o.per_octave, o.scan_per_octave,
                     o.refine_points, static_cast<int>(o.neighbouring));
}

}  // namespace

Vector ClipBounds::lo() const {
  Vector v(static_cast<Eigen::Index>(columns.size()));
  for (std::size_t j = 0; j < columns.size(); ++j) v[static_cast<Eigen::Index>(j)] = columns[j].lo;
  return v;
}

Vector ClipBounds::hi() const {
  Vector v(static_cast<Eigen::Index>(columns.size()));
  for (std::size_t j = 0; j < columns.size(); ++j) v[static_cast<Eigen::Index>(j)] = columns[j].hi;
  return v;
}

bool ClipBounds::all_usable() const { return reliability(*this, "").usable; }

nlohmann::json ClipBounds::diagnostics() const {
  nlohmann::json cols = nlohmann::json::array();
  for (std::size_t j = 0; j < columns.size(); ++j) {
    const ColumnClipBounds& c = columns[j];
    cols.push_back({{"lo", c.lo},
                    {"hi", c.hi},
                    {"anchor", c.anchor},
                    {"resolution", c.resolution},
                    {"lo_at_end", c.lo_at_end},
                    {"hi_at_end", c.hi_at_end},
                    {"anchor_at_end", c.anchor_at_end},
                    {"reliability", reliability(*this, j, "").json()}});
  }
  nlohmann::json j = {
      {"estimator", "private_clip_bounds (private median anchor, AboveThreshold scans outwards)"},
      {"columns", cols},
      {"coverage", coverage},
      {"quantiles", {q_lo, q_hi}},
      {"rank_error", rank_error},
      {"anchor_rank_error", anchor_rank_error},
      {"beta", beta},
      {"neighbouring", to_string(neighbouring)},
      {"charged", ledger_json(entries)}};
  if (neighbouring == Neighbouring::add_remove) j["n_lower_bound"] = n;
  return j;
}

Ledger private_clip_bounds_entries(const ClipBoundsOptions& o, std::size_t d) {
  const Plan p = make_plan(o, d);
  Ledger entries;
  if (counts_rows(o.neighbouring)) entries.push_back(row_count_entry(o.loss, "clip bounds"));
  Ledger per_column = {
      grid_quantile_entry(p.e_coarse, "clip bounds: anchor, median cell on the log grid"),
      grid_quantile_entry(p.e_refine, "clip bounds: anchor, median on a linear grid"),
      ThresholdScan::entry(p.e_scan, "clip bounds: upper bound, scan of offsets upwards"),
      ThresholdScan::entry(p.e_scan, "clip bounds: lower bound, scan of offsets downwards")};
  for (LedgerEntry& e : per_column) {
    e.purpose += fmt::format(" ({} columns)", d);
    e.count = static_cast<int>(d);
    entries.push_back(std::move(e));
  }
  return entries;
}

ClipBounds private_clip_bounds(const ConstMatrixRef& X, const ClipBoundsOptions& o,
                               ReleaseBudget& account, Rng& rng) {
  const auto d = static_cast<std::size_t>(X.cols());
  Plan p = make_plan(o, std::max<std::size_t>(d, 1));
  Communicator& comm = comm_or_single(o.comm);
  const std::int64_t n = guarded_rows(X, comm, fingerprint(o, X.cols()));
  ClipBounds out;
  out.entries = private_clip_bounds_entries(o, d);
  all_or_none(comm, [&] { account.claim(out.entries); });

  p.grid = GridIndex::log(o.per_octave, false);
  p.offsets = GridIndex::log(o.scan_per_octave, false);
  p.zero = p.offsets.grid().size() / 2;
  set_rows(p, d, rows_for_checks(n, o.loss, o.neighbouring, o.beta / static_cast<double>(4 * d + 1),
                                 comm, rng));
  out.coverage = o.coverage;
  out.q_lo = o.coverage / 2;
  out.q_hi = 1 - o.coverage / 2;
  out.rank_error = p.scan_rank_error;
  out.anchor_rank_error = p.anchor_rank_error;
  out.n = p.n;
  out.beta = o.beta;
  out.neighbouring = o.neighbouring;
  out.columns.resize(d);
  estimate(X, p, rng, out);
  return out;
}

Reliability planned_reliability(const ClipBoundsOptions& o, std::size_t d, double n,
                                std::string_view option) {
  require(n >= 1, "n must be >= 1, got {}", format_number(n));
  Plan p = make_plan(o, d);
  const double beta = o.beta / static_cast<double>(4 * d + 1);
  set_rows(p, d, rows_for_plan(n, o.loss, o.neighbouring, beta));
  ClipBounds planned;
  planned.columns.resize(d);
  for (ColumnClipBounds& c : planned.columns) set_facts(c, p);
  return reliability(planned, option);
}

Reliability reliability(const ClipBounds& b, std::size_t j, std::string_view option) {
  require(j < b.columns.size(), "column {} of {}", j, b.columns.size());
  const ColumnClipBounds& c = b.columns[j];
  const std::string name = fmt::format("the clipping bounds of column {}", j + 1);
  const Reliability parts[] = {
      assess(c.anchor_facts, name + " (their anchor, a private median)", option),
      assess(c.tail_facts, name, option)};
  return first_unusable(parts, name);
}

Reliability reliability(const ClipBounds& b, std::string_view option) {
  std::vector<Reliability> parts;
  for (std::size_t j = 0; j < b.columns.size(); ++j) parts.push_back(reliability(b, j, option));
  return first_unusable(parts, "the clipping bounds");
}

}  // namespace dpstats
