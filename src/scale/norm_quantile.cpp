// Private quantile of row norms on the nonnegative log grid (norm_quantile.hpp;
// docs/proofs/scale.md §3).
#include "dpstats/scale/norm_quantile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "dpstats/scale/share.hpp"

namespace dpstats {
namespace {

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

void set_status(NormQuantile& r, const NormQuantileOptions& o, std::size_t n) {
  if (r.cell_hi <= std::numeric_limits<double>::min()) {
    r.status = ScaleStatus::degenerate;
    r.reason = "the released cell is [0, 2^-1022): (nearly) every value is 0";
  } else if (o.neighbouring == Neighbouring::replace_one &&
             r.rank_error / static_cast<double>(n) + o.alpha >= std::min(o.q, 1 - o.q)) {
    r.status = ScaleStatus::insufficient_data;
    r.reason = fmt::format(
        "rank error t = {} (beta = {}) with n = {} and alpha = {}: t/n + alpha >= min(q, 1-q), "
        "so the clip may land at the extremes of the data; give it a larger share or more rows",
        format_number(r.rank_error), format_number(o.beta), n, format_number(o.alpha));
  }
}

// values: this rank's; n: the values over every rank of comm.
NormQuantile select(std::span<const double> values, const NormQuantileOptions& o, Rng& rng,
                    Communicator& comm, std::size_t n) {
  NormQuantile r;
  r.q = o.q;
  r.epsilon = per_call_epsilon(o.loss, 1);
  r.entry = private_norm_quantile_entry(o);
  const std::vector<double> grid = log_grid(o.per_octave, true);
  r.rank_error = grid_quantile_rank_error(r.epsilon, grid.size(), o.beta);
  const GridCell cell = grid_quantile_cell(values, grid, o.q, r.epsilon, rng, comm);
  r.cell_lo = cell.lo;
  r.cell_hi = cell.hi;
  r.value = cell.hi;
  set_status(r, o, n);
  return r;
}

}  // namespace

LedgerEntry private_norm_quantile_entry(const NormQuantileOptions& o) {
  check_options(o);
  return grid_quantile_entry(per_call_epsilon(o.loss, 1),
                             fmt::format("scale: {}-quantile of row norms (log-grid cell)",
                                         format_number(o.q)));
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
  all_or_none(comm, [&] { account.claim(private_norm_quantile_entry(o)); });
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
  all_or_none(comm, [&] { account.claim(private_norm_quantile_entry(o)); });
  return select(values, o, rng, comm, n);
}

}  // namespace dpstats
