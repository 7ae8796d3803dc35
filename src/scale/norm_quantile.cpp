// Private quantile of row norms on the nonnegative log grid (norm_quantile.hpp;
// docs/proofs/scale.md §3).
#include "dpstats/scale/norm_quantile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "dpstats/scale/share.hpp"
#include "column_stages.hpp"
#include "row_count.hpp"

namespace dpstats {
namespace {

using namespace scale_detail;

constexpr double kMaxDouble = std::numeric_limits<double>::max();

void check_options(const NormQuantileOptions& o) {
  check_share(o.loss);
  require(o.q > 0 && o.q < 1, "q must be in (0, 1), got {}", format_number(o.q));
  require(o.alpha >= 0 && o.alpha < 1, "alpha must be in [0, 1), got {}", format_number(o.alpha));
  require(o.beta > 0 && o.beta < 1, "beta must be in (0, 1), got {}", format_number(o.beta));
  require(o.per_octave >= 1 && o.per_octave <= 1024,
          "per_octave must be an integer in [1, 1024], got {}", o.per_octave);
  require(o.threads >= 1 && o.threads <= 256, "threads must be in [1, 256], got {}", o.threads);
  if (o.centre) {
    for (Eigen::Index j = 0; j < o.centre->size(); ++j) {
      require(std::isfinite((*o.centre)[j]), "centre[{}] must be finite", j);
    }
  }
}

// ||x_i - c||_2 with every difference clamped to the finite range, overflow-safe.
std::vector<double> row_norms(const ConstMatrixRef& X, const std::optional<Vector>& centre,
                              int threads) {
  std::vector<double> norms(static_cast<std::size_t>(X.rows()));
  constexpr std::size_t kBlock = 4096;
  const std::size_t blocks = (norms.size() + kBlock - 1) / kBlock;
  parallel_tasks(blocks, threads, [&](std::size_t b) {
    Vector diff(X.cols());
    for (std::size_t i = b * kBlock; i < std::min(norms.size(), (b + 1) * kBlock); ++i) {
      for (Eigen::Index j = 0; j < X.cols(); ++j) {
        const double c = centre ? (*centre)[j] : 0.0;
        diff[j] = std::clamp(X(static_cast<Eigen::Index>(i), j) - c, -kMaxDouble, kMaxDouble);
      }
      norms[i] = std::min(diff.stableNorm(), kMaxDouble);
    }
  });
  return norms;
}

// The failure probability of each event: the selection and, under add/remove, the row count.
double event_beta(const NormQuantileOptions& o) {
  return counts_rows(o.neighbouring) ? o.beta / 2 : o.beta;
}

// What reliability() judges, from the options alone (n, the grid end and the spread are the
// run's): the run's facts (set_status) and a dry run's (the entries' note) come from here.
SelectionFacts planned_facts(const NormQuantileOptions& o) {
  const double e = per_call_epsilon(selection_share(o.loss, o.neighbouring), 1);
  const std::size_t points = GridIndex::log(o.per_octave, true).grid().size();
  return {.rank_error = grid_quantile_rank_error(e, points, event_beta(o)),
          .tolerance = std::min(o.q, 1 - o.q), .alpha = o.alpha, .epsilon = e};
}

// The facts reliability() judges, and the status read off them: the released cell at the top of
// the grid or a rank error that reaches min(q, 1 - q) of the rows (the clip may sit at an extreme
// of the data) is insufficient_data; a cell [0, 2^-1022) is degenerate.
void set_status(NormQuantile& r, const NormQuantileOptions& o, std::size_t grid_size, double n) {
  r.facts = planned_facts(o);
  r.facts.n = n;
  r.facts.at_grid_end = r.cell_hi == kMaxDouble && grid_size > 2;
  r.facts.degenerate = r.cell_hi <= std::numeric_limits<double>::min();
  SelectionFacts rank = r.facts;
  rank.degenerate = false;
  const Reliability check = assess(rank, "the quantile", "");
  if (!check.usable) {
    r.status = ScaleStatus::insufficient_data;
    r.reason = check.cause + "; " + check.would_suffice;
  } else if (r.facts.degenerate) {
    r.status = ScaleStatus::degenerate;
    r.reason = "the released cell is [0, 2^-1022): (nearly) every value is 0";
  }
}

// values: this rank's; n: the values over every rank of comm. Charges nothing (the caller has).
NormQuantile select(std::span<const double> values, const NormQuantileOptions& o, Rng& rng,
                    Communicator& comm, std::size_t n) {
  NormQuantile r;
  r.q = o.q;
  r.epsilon = per_call_epsilon(selection_share(o.loss, o.neighbouring), 1);
  r.entries = private_norm_quantile_entries(o);
  const GridIndex grid = GridIndex::log(o.per_octave, true);
  const std::size_t points = grid.grid().size();
  r.rank_error = planned_facts(o).rank_error;
  const double rows = rows_for_checks(static_cast<std::int64_t>(n), o.loss, o.neighbouring,
                                      event_beta(o), comm, rng);
  // One pass over the values (no copy or sort), the selection on rank 0.
  const Eigen::Map<const RowMatrix> column(values.data(), static_cast<Eigen::Index>(values.size()),
                                           1);
  ColumnGenerators gens(rng, 1);
  const std::size_t cell = column_quantile_cells(column, same_grid(grid, 1), identity(), o.q,
                                                 r.epsilon, gens, o.threads, comm)[0];
  r.cell_lo = grid.grid()[cell];
  r.cell_hi = grid.grid()[cell + 1];
  r.value = r.cell_hi;
  set_status(r, o, points, rows);
  return r;
}

}  // namespace

SelectionFacts planned_norm_quantile_facts(const NormQuantileOptions& o, double n) {
  check_options(o);
  require(n >= 1, "n must be >= 1, got {}", format_number(n));
  const double e = per_call_epsilon(selection_share(o.loss, o.neighbouring), 1);
  return {.rank_error = grid_quantile_rank_error(e, log_grid_points(o.per_octave, true),
                                                 event_beta(o)),
          .n = rows_for_plan(n, o.loss, o.neighbouring, event_beta(o)),
          .tolerance = std::min(o.q, 1 - o.q), .alpha = o.alpha, .epsilon = e};
}

Ledger private_norm_quantile_entries(const NormQuantileOptions& o) {
  check_options(o);
  Ledger entries;
  if (counts_rows(o.neighbouring)) entries.push_back(row_count_entry(o.loss, "scale"));
  const double e = per_call_epsilon(selection_share(o.loss, o.neighbouring), 1);
  entries.push_back(grid_quantile_entry(
      e, fmt::format("scale: {}-quantile of row norms (log-grid cell)", format_number(o.q))));
  if (dry_run_active())
    note_planned_check({fmt::format("the {} quantile of the row norms", format_number(o.q)),
                        planned_facts(o), count_margin(o.loss, o.neighbouring, event_beta(o)),
                        entries.back().purpose});
  return entries;
}

NormQuantile private_norm_quantile(const ConstMatrixRef& X, const NormQuantileOptions& o,
                                   ReleaseBudget& account, Rng& rng) {
  check_options(o);
  if (o.centre) {
    require(o.centre->size() == X.cols(), "centre must have d = {} entries, got {}", X.cols(),
            o.centre->size());
  }
  Communicator& comm = comm_or_single(o.comm);
  std::size_t n = static_cast<std::size_t>(X.rows());
  if (comm.size() == 1) {
    check_data(X);
  } else {
    all_or_none(comm, [&] {
      if (X.rows() > 0) check_data(X);
    });
    n = static_cast<std::size_t>(allreduce_count(comm, static_cast<std::int64_t>(X.rows())));
  }
  const std::vector<double> norms = row_norms(X, o.centre, o.threads);
  all_or_none(comm, [&] { account.claim(private_norm_quantile_entries(o)); });
  return select(norms, o, rng, comm, n);
}

NormQuantile private_value_quantile(std::span<const double> values, const NormQuantileOptions& o,
                                    ReleaseBudget& account, Rng& rng) {
  check_options(o);
  require(!o.centre, "centre applies to private_norm_quantile only");
  Communicator& comm = comm_or_single(o.comm);
  all_or_none(comm, [&] {
    for (std::size_t i = 0; i < values.size(); ++i) {
      require(std::isfinite(values[i]) && values[i] >= 0,
              "values must be finite and >= 0, not at index {}", i);
    }
  });
  const auto n = comm.size() == 1
                     ? values.size()
                     : static_cast<std::size_t>(
                           allreduce_count(comm, static_cast<std::int64_t>(values.size())));
  require(n > 0, "values must hold at least one value, got 0");
  all_or_none(comm, [&] { account.claim(private_norm_quantile_entries(o)); });
  return select(values, o, rng, comm, n);
}

}  // namespace dpstats
