// Per-column private clipping bounds (clip_bounds.hpp; docs/proofs/scale.md §7).
#include "dpstats/scale/clip_bounds.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "dpstats/scale/share.hpp"
#include "dpstats/scale/threshold_scan.hpp"
#include "column_stages.hpp"
#include "columns.hpp"
#include "grid_select.hpp"
#include "row_count.hpp"
#include "shared_pass.hpp"

namespace dpstats {
namespace {

using namespace scale_detail;

// A column's part of the selections' share in units: coarse anchor 6, refined anchor 6, each scan
// 14, the anchor's cell refined once more for the side counts 4, each side's count of the rows
// beyond that cell 2 (under add/remove the count of the rows takes 1/8 of the share first,
// row_count.hpp). Both anchor selections face ~2^17 cells and need about as much; a failed refine
// leaves bounds that still hold the data but are as wide as a coarse cell (1/32 of |anchor|). The
// side counts only need to tell a cell holding most rows (an atom: 98% zeros) from one holding a
// minority (§7b): with 2 units that is sure wherever the scans' rank error passes its rule and the
// atom holds at least 95% of the rows. The fine cell (kFinePoints over the anchor's cell) tells an
// atom from values that spread inside the anchor's cell (1e9 + N(0, 100^2) in a cell 1 400 wide);
// with 4 units its rank error is at most 0.45 n wherever the scans' rule passes.
constexpr std::size_t kCoarse = 6, kRefine = 6, kScan = 14, kFine = 4, kBeyond = 2, kColumn = 48;
// Without the sides' parts (ClipBoundsOptions::judge_sides false): the anchor and the scans alone.
constexpr std::size_t kColumnNoSides = kColumn - kFine - 2 * kBeyond;
constexpr std::size_t kFinePoints = 64;
// A dyadic grid of kFinePoints has at most 2 kFinePoints points (its step is the power of two at
// most the requested one): the fine selection's rank error is stated for that many.
constexpr std::size_t kFineGridBound = 2 * kFinePoints;
// The anchor should lie inside the data (rank error / n + alpha <= 1/2: its rank interval is
// inside [0, n], so the scans start between the data's extremes and the width stays near the
// data's); the scans' rank error must leave most rows inside the bounds. The coverage rests on
// the scans alone (§7b): the anchor's rule keeps the width useful, not the coverage valid.
constexpr double kAnchorTolerance = 0.5, kTolerance = 0.3;
// The fine cell is used only when its selection lands inside an atom of 95% of the rows: its rank
// interval [n/2 - t_f, n/2 + t_f] then lies inside the atom's ranks (§7b).
constexpr double kFineTolerance = 0.45;

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
  double e_coarse = 0, e_refine = 0, e_scan = 0, e_fine = 0, e_beyond = 0;
  GridIndex grid{};          // the signed log grid of the anchor's coarse cells
  GridIndex offsets{};       // the signed log grid of the scans' offsets (scan_per_octave)
  std::size_t zero = 0;      // offsets[zero] == 0
  double n = 0;              // rows the thresholds use: n, or n_low under add/remove
  std::int64_t threshold = 0;
  double anchor_rank_error = 0, scan_rank_error = 0, fine_rank_error = 0;
  double beyond_noise = 0;  // the side counts' noise bound (each exceeds it w.p. <= its beta)
  bool fine = false;        // the side counts look beyond the fine cell (fine_rank_error small)
};

// Every event the estimate's guarantees rest on: 2d scans, 2d side counts (when the sides are
// judged) and the row count (the anchors' rank errors, stated at the same level, move only the
// width: §7b).
double event_beta(const ClipBoundsOptions& o, std::size_t d) {
  return o.beta / static_cast<double>((o.judge_sides ? 4 : 2) * d + 1);
}

Plan make_plan(const ClipBoundsOptions& o, std::size_t d) {
  check_options(o);
  require(d >= 1, "d must be >= 1, got {}", d);
  const std::size_t total = (o.judge_sides ? kColumn : kColumnNoSides) * d;
  const PrivacyLoss share = selection_share(o.loss, o.neighbouring);
  Plan p{.o = o};
  p.e_coarse = units_epsilon(share, kCoarse, total);
  p.e_refine = units_epsilon(share, kRefine, total);
  p.e_scan = units_epsilon(share, kScan, total);
  p.e_fine = units_epsilon(share, kFine, total);
  p.e_beyond = units_epsilon(share, kBeyond, total);
  p.grid = GridIndex::log(o.per_octave, false);
  p.offsets = GridIndex::log(o.scan_per_octave, false);
  p.zero = p.offsets.grid().size() / 2;
  const double beta = event_beta(o, d);
  // The coarse selection decides where the scans start; the refine moves the anchor by at most
  // one coarse cell either way (a wider pair of bounds, released as such), so only the coarse
  // selection's rank error is judged.
  p.anchor_rank_error = grid_quantile_rank_error(p.e_coarse, p.grid.grid().size(), beta);
  p.scan_rank_error =
      ThresholdScan::rank_error(p.e_scan, p.offsets.grid().size() - p.zero, beta);
  p.fine_rank_error = grid_quantile_rank_error(p.e_fine, kFineGridBound, beta);
  // Laplace(b): P(|noise| > b ln(1/beta)) = beta.
  p.beyond_noise = std::log(1 / beta) / p.e_beyond;
  return p;
}

// The thresholds once the rows (or their lower bound) are known.
void set_rows(Plan& p, double n) {
  p.n = n;
  p.threshold = static_cast<std::int64_t>(std::ceil((1 - p.o.coverage / 2) * n));
  p.fine = p.o.judge_sides && p.fine_rank_error <= kFineTolerance * n;
}

// What reliability() judges of the anchor and of the scans, from the plan alone (n, the grid-end
// flags and the side counts are the run's): the run's facts (set_facts) and a dry run's (the
// entries' note) both come from here.
SelectionFacts anchor_facts(const Plan& p) {
  return {.rank_error = p.anchor_rank_error, .n = p.n, .tolerance = kAnchorTolerance,
          .alpha = p.o.alpha, .epsilon = p.e_coarse};
}
SelectionFacts tail_facts(const Plan& p) {
  return {.rank_error = p.scan_rank_error, .n = p.n, .tolerance = kTolerance, .alpha = 0,
          .epsilon = p.e_scan};
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

// The cell the side counts look beyond (§7b): the anchor's cell refined once more, or (no fine
// cell) the anchor's cell up to the scans' first offset.
struct SideCell {
  bool fine = false;
  double lo = 0, hi = 0;              // the fine cell [lo, hi)
  std::int64_t below = 0, above = 0;  // #{x < lo} and #{x >= hi}
};

// Per column, the dyadic grid of kFinePoints over the anchor's cell [a - r/2, a + r/2] on which
// the median's cell is selected when the plan trusts the fine selection (p.fine; else no grid);
// the grid reaches at most one step (<= r/63) past that cell, so the fine cell stays below the
// scans' first offset (>= r). A column whose cell is not finite draws its selection on a public
// stand-in grid and keeps the anchor's cell (cells[j].fine false).
std::vector<GridIndex> fine_grids(const Plan& p, const std::vector<RefinedMedian>& anchor,
                                  std::vector<SideCell>& cells) {
  std::vector<GridIndex> grids;
  if (!p.fine) return grids;
  grids.reserve(anchor.size());
  for (std::size_t j = 0; j < anchor.size(); ++j) {
    const double lo = anchor[j].location - anchor[j].resolution / 2;
    const double hi = anchor[j].location + anchor[j].resolution / 2;
    cells[j].fine = std::isfinite(lo) && std::isfinite(hi) && lo < hi;
    grids.push_back(GridIndex::dyadic(cells[j].fine ? lo : -1, cells[j].fine ? hi : 1, kFinePoints));
  }
  return grids;
}

// The fine cells from their grids' counts (d selections). Everything it reads of the data is the
// selection and the two counts the side counts add noise to.
void select_fine_cells(const std::vector<std::vector<std::int64_t>>& counts,
                       const std::vector<GridIndex>& grids, const Plan& p, ColumnGenerators& gens,
                       Communicator& comm, std::vector<SideCell>& cells) {
  const auto selected = select_columns(counts, 0.5, p.e_fine, gens, p.o.threads, comm);
  for (std::size_t j = 0; j < cells.size(); ++j) {
    const std::size_t k = selected[j];
    cells[j].lo = grids[j].point(k);
    cells[j].hi = grids[j].point(k + 1);
    cells[j].below = counts[j][k];
    cells[j].above = counts[j].back() - counts[j][k + 1];
  }
}

// The fine cells (when planned) and the counts of y = x - a_j on the offsets' grid, both from one
// read of the rows: the fine grids and the offsets depend on the anchor alone.
std::vector<std::vector<std::int64_t>> side_cells_and_offsets(
    const ConstMatrixRef& X, const Plan& p, const std::vector<RefinedMedian>& anchor,
    const std::vector<double>& a, ColumnGenerators& gens, Communicator& comm,
    std::vector<SideCell>& cells) {
  const std::size_t d = anchor.size();
  const auto offset = [&a](std::size_t j, double x) { return clamp_magnitude(x - a[j]); };
  const std::vector<const GridIndex*> offsets = same_grid(p.offsets, d);
  const std::vector<GridIndex> grids = fine_grids(p, anchor, cells);
  if (grids.empty()) return merged_column_counts(X, offsets, offset, p.o.threads, comm);
  std::vector<const GridIndex*> ptrs;
  for (const GridIndex& g : grids) ptrs.push_back(&g);
  auto [fine, counts] =
      merged_column_counts_pair(X, ptrs, identity(), offsets, offset, p.o.threads, comm);
  select_fine_cells(fine, grids, p, gens, comm, cells);
  return std::move(counts);
}

// Column j's two scans from its counts of y = x - a_j on the signed log grid (below[i] =
// #{y < p_i}, then n): the offsets are the positive grid points from the first one >= r_j.
void scan_tails(std::span<const std::int64_t> below, const SideCell& cell, ColumnClipBounds& c,
                const Plan& p, Rng& rng) {
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
  // The rows beyond the fine cell on each side, else beyond the anchor's cell: #{y >= delta_0}
  // and #{y < -delta_0}. The fine cell lies inside (a - r, a + r), inside the scans' first offset.
  if (!p.o.judge_sides) return;  // no side counts (set_facts leaves the sides unjudged)
  const LaplaceMechanism count(1.0, p.e_beyond);
  c.beyond_hi = count.apply(static_cast<double>(cell.fine ? cell.above : n - upper[0]), rng);
  c.beyond_lo = count.apply(static_cast<double>(cell.fine ? cell.below : n - lower[0]), rng);
}

// The facts reliability() judges: the anchor's selections, and the scans (whose grid end means
// the bound is +/- DBL_MAX).
void set_facts(ColumnClipBounds& c, const Plan& p) {
  c.anchor_facts = anchor_facts(p);
  c.anchor_facts.at_grid_end = c.anchor_at_end;
  const double designed_out = p.o.coverage / 2 * p.n;
  // The noisy counts say the anchor's cell holds more than half of the rows: an atom (§7b). Not
  // "surely": the sides' rules only add abstentions, and a margin of noise let a 90% atom pass.
  const bool atom = c.beyond_lo + c.beyond_hi < p.n / 2;
  auto side = [&](bool at_end, double beyond) {
    SelectionFacts f = tail_facts(p);
    f.at_grid_end = at_end;
    if (!p.o.judge_sides) return f;  // §6's rules alone
    f.side = true;
    f.beyond = beyond;
    f.beyond_noise = p.beyond_noise;
    f.designed_out = designed_out;
    f.atom = atom;
    return f;
  };
  c.lo_facts = side(c.lo_at_end, c.beyond_lo);
  c.hi_facts = side(c.hi_at_end, c.beyond_hi);
}

// Every column: the anchors (two passes, 2d selections), then the fine cells' and the offsets'
// counts (one pass, d selections) and the two scans per column, on rank 0 (columns in parallel
// when the generators split), given to every rank.
void estimate(const ConstMatrixRef& X, const Plan& p, Rng& rng, ClipBounds& out,
              ColumnBins* kept) {
  const auto d = static_cast<std::size_t>(X.cols());
  Communicator& comm = comm_or_single(p.o.comm);
  ColumnGenerators gens(rng, d);
  const std::vector<RefinedMedian> anchor = refined_medians(
      X, p.grid, p.o.refine_points, p.e_coarse, p.e_refine, gens, p.o.threads, comm, kept);
  std::vector<double> a(d);
  for (std::size_t j = 0; j < d; ++j) a[j] = anchor[j].location;
  std::vector<SideCell> cells(d);
  const auto counts = side_cells_and_offsets(X, p, anchor, a, gens, comm, cells);
  const std::vector<double> bounds = on_root(comm, [&] {
    std::vector<double> lo_hi(4 * d);  // lo, hi, rows beyond below, rows beyond above
    parallel_tasks(d, gens.split() && comm.size() == 1 ? p.o.threads : 1, [&](std::size_t j) {
      ColumnClipBounds c;
      c.anchor = a[j];
      c.resolution = anchor[j].resolution;
      scan_tails(counts[j], cells[j], c, p, gens[j]);
      lo_hi[4 * j] = c.lo;
      lo_hi[4 * j + 1] = c.hi;
      lo_hi[4 * j + 2] = c.beyond_lo;
      lo_hi[4 * j + 3] = c.beyond_hi;
    });
    return lo_hi;
  });
  for (std::size_t j = 0; j < d; ++j) {
    ColumnClipBounds& c = out.columns[j];
    c.anchor = a[j];
    c.resolution = anchor[j].resolution;
    c.anchor_at_end = anchor[j].at_end;
    c.lo = bounds[4 * j];
    c.hi = bounds[4 * j + 1];
    c.beyond_lo = bounds[4 * j + 2];
    c.beyond_hi = bounds[4 * j + 3];
    c.fine_cell = cells[j].fine;
    if (c.fine_cell) c.cell = {cells[j].lo, cells[j].hi};
    c.lo_at_end = c.lo == -kMaxDouble;
    c.hi_at_end = c.hi == kMaxDouble;
    set_facts(c, p);
  }
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
                    {"rows_beyond_anchor", !c.lo_facts.side && !c.hi_facts.side
                                               ? nlohmann::json(nullptr)
                                               : nlohmann::json({c.beyond_lo, c.beyond_hi})},
                    {"rows_beyond_cell", c.fine_cell ? nlohmann::json(c.cell)
                                                     : nlohmann::json("the anchor's cell")},
                    {"reliability", reliability(*this, j, "").json()}});
  }
  nlohmann::json j = {
      {"estimator", "private_clip_bounds (private median anchor, AboveThreshold scans outwards)"},
      {"columns", cols},
      {"coverage", coverage},
      {"quantiles", {q_lo, q_hi}},
      {"rank_error", rank_error},
      {"anchor_rank_error", anchor_rank_error},
      {"rows_beyond_noise", beyond_noise},
      {"fine_cell_rank_error", fine_rank_error},
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
  if (o.judge_sides) {
    per_column.push_back(
        grid_quantile_entry(p.e_fine, "clip bounds: the anchor's cell refined for the side counts"));
    per_column.push_back(LaplaceMechanism(1.0, p.e_beyond)
                             .ledger_entry("clip bounds: count of the rows above the anchor's cell"));
    per_column.push_back(LaplaceMechanism(1.0, p.e_beyond)
                             .ledger_entry("clip bounds: count of the rows below the anchor's cell"));
  }
  for (LedgerEntry& e : per_column) {
    e.purpose += fmt::format(" ({} columns)", d);
    e.count = static_cast<int>(d);
    entries.push_back(std::move(e));
  }
  if (dry_run_active()) {  // the checks the run will make (dry_run.hpp)
    const double margin = count_margin(o.loss, o.neighbouring, event_beta(o, d));
    const std::size_t first = entries.size() - per_column.size();  // the coarse anchor's entry
    note_planned_check({fmt::format("the clipping bounds' anchor (a private median; {} columns)",
                                    d), anchor_facts(p), margin, entries[first].purpose});
    note_planned_check({fmt::format("the clipping bounds ({} columns)", d), tail_facts(p), margin,
                        entries[first + 2].purpose});
  }
  return entries;
}

ClipBounds private_clip_bounds(const ConstMatrixRef& X, const ClipBoundsOptions& o,
                               ReleaseBudget& account, Rng& rng) {
  return scale_detail::private_clip_bounds(X, o, account, rng, nullptr);
}

ClipBounds scale_detail::private_clip_bounds(const ConstMatrixRef& X, const ClipBoundsOptions& o,
                                             ReleaseBudget& account, Rng& rng,
                                             SharedPass* shared) {
  const auto d = static_cast<std::size_t>(X.cols());
  Plan p = make_plan(o, std::max<std::size_t>(d, 1));
  Communicator& comm = comm_or_single(o.comm);
  const std::int64_t n =
      guarded_rows(X, comm, fingerprint_of("clip_bounds", o, X.cols()), was_checked(shared));
  ClipBounds out;
  out.entries = private_clip_bounds_entries(o, d);
  all_or_none(comm, [&] { account.claim(out.entries); });

  set_rows(p, rows_for_checks(n, o.loss, o.neighbouring, event_beta(o, d), comm, rng));
  out.coverage = o.coverage;
  out.q_lo = o.coverage / 2;
  out.q_hi = 1 - o.coverage / 2;
  out.rank_error = p.scan_rank_error;
  out.anchor_rank_error = p.anchor_rank_error;
  out.beyond_noise = p.beyond_noise;
  out.fine_rank_error = p.fine_rank_error;
  out.n = p.n;
  out.beta = o.beta;
  out.neighbouring = o.neighbouring;
  out.columns.resize(d);
  estimate(X, p, rng, out, coarse_pass(shared, o.per_octave));
  return out;
}

Reliability planned_reliability(const ClipBoundsOptions& o, std::size_t d, double n,
                                std::string_view option) {
  require(n >= 1, "n must be >= 1, got {}", format_number(n));
  Plan p = make_plan(o, d);
  set_rows(p, rows_for_plan(n, o.loss, o.neighbouring, event_beta(o, d)));
  ClipBounds planned;
  planned.columns.resize(d);
  for (ColumnClipBounds& c : planned.columns) {
    // The side counts are the data's (§7b): the plan judges the rank errors alone, as for a
    // column whose anchor's cell holds no atom.
    c.beyond_lo = c.beyond_hi = p.n / 2;
    set_facts(c, p);
  }
  return reliability(planned, option);
}

Reliability reliability(const ClipBounds& b, std::size_t j, std::string_view option) {
  require(j < b.columns.size(), "column {} of {}", j, b.columns.size());
  const ColumnClipBounds& c = b.columns[j];
  const std::string name = fmt::format("the clipping bounds of column {}", j + 1);
  const Reliability parts[] = {
      assess(c.anchor_facts, name + " (their anchor, a private median)", option),
      assess(c.lo_facts, name + " (lower side)", option),
                               assess(c.hi_facts, name + " (upper side)", option)};
  return first_unusable(parts, name);
}

Reliability reliability(const ClipBounds& b, std::string_view option) {
  std::vector<Reliability> parts;
  for (std::size_t j = 0; j < b.columns.size(); ++j) parts.push_back(reliability(b, j, option));
  return first_unusable(parts, "the clipping bounds");
}

}  // namespace dpstats
