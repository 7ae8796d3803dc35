// q_range-ht (PRIME Alg 15; docs/proofs/substrate.md §8): median over disjoint parts of
// q_range centres.
#include "dpstats/mechanisms/range_ht.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/range.hpp"
#include "dpstats/random/partition.hpp"

namespace dpstats {
namespace {

void check_options(const RangeHtOptions& o) {
  check_epsilon(o.epsilon);
  check_delta_positive(o.delta);
  check_positive(o.sigma, "sigma");
  require(o.alpha > 0 && o.alpha < 0.5, fmt::format("alpha must be in (0, 0.5), got {}", o.alpha));
  require(o.zeta > 0 && o.zeta < 1, fmt::format("zeta must be in (0, 1), got {}", o.zeta));
  require(o.partitions >= 0 && o.partitions <= 100000,
          fmt::format("partitions must be in [0, 100000] (0 = paper), got {}", o.partitions));
  check_positive(o.bin_sigma, "bin_sigma");
  check_positive(o.B_const, "B_const");
}

RangeOptions part_options(const RangeHtOptions& o, int m) {
  RangeOptions r;
  r.epsilon = o.parallel ? o.epsilon : o.epsilon / m;
  r.delta = o.parallel ? o.delta : o.delta / m;
  r.sigma = o.bin_sigma * o.sigma;
  r.zeta = o.zeta;
  r.paper_cap = o.paper_cap;
  return r;
}

}  // namespace

int q_range_ht_partitions(const RangeHtOptions& o) {
  check_options(o);
  if (o.partitions > 0) return o.partitions;
  return static_cast<int>(std::ceil(200 * std::log(2 / o.zeta)));  // Alg 15: m = 200 ln(2/ζ)
}

LedgerEntry q_range_ht_entry(const RangeHtOptions& o, std::size_t d) {
  const int m = q_range_ht_partitions(o);
  LedgerEntry e = q_range_entry(part_options(o, m), d, "q_range-ht part");
  e.purpose = fmt::format("q_range-ht: {} disjoint parts, each {} ({})", m, e.purpose,
                          o.parallel ? "parallel composition: one part's loss"
                                     : "the paper's split, composed basically");
  if (!o.parallel) {
    e.loss = PrivacyLoss::approximate(e.loss.epsilon * m, e.loss.delta * m);
  }
  // What ran: d histograms in each of the m parts (the composite's loss is stated above).
  e.blocks[0][0].count *= m;
  e.blocks[0][0].purpose = "one coordinate's histogram, in each part";
  return e;
}

RangeOptions q_range_ht_part_options(const RangeHtOptions& o) {
  return part_options(o, q_range_ht_partitions(o));
}

std::vector<int> q_range_ht_parts(std::int64_t n, const RangeHtOptions& o, Rng& rng) {
  const int m = q_range_ht_partitions(o);
  require(n >= 2 * m, fmt::format("q_range-ht needs n >= 2m = {} rows ({} parts), got {}", 2 * m,
                                  m, n));
  return random_parts(n, m, rng);  // public randomness
}

std::optional<RangeHtResult> q_range_ht_median(const std::vector<Eigen::VectorXd>& centres,
                                               int failed, const RangeHtOptions& o,
                                               Eigen::Index d) {
  if (centres.empty()) return std::nullopt;
  RangeHtResult out;
  out.centre.resize(d);
  std::vector<double> col(centres.size());
  for (Eigen::Index j = 0; j < d; ++j) {
    for (std::size_t l = 0; l < centres.size(); ++l) col[l] = centres[l][j];
    std::sort(col.begin(), col.end());
    const std::size_t k = col.size();
    out.centre[j] = k % 2 ? col[k / 2] : (col[k / 2 - 1] + col[k / 2]) / 2;
  }
  out.side = o.B_const * o.sigma / std::sqrt(o.alpha);
  out.ball_radius = std::sqrt(static_cast<double>(d)) * out.side / 2;
  out.partitions = q_range_ht_partitions(o);
  out.failed = failed;
  out.entry = q_range_ht_entry(o, static_cast<std::size_t>(d));
  return out;
}

namespace {

// Alg 15 on n rows of d columns, row i written by copy_row(i, out) (a matrix's, or a view's).
template <class CopyRow>
std::optional<RangeHtResult> range_ht(Eigen::Index n, Eigen::Index d, CopyRow copy_row,
                                      const RangeHtOptions& o, Rng& rng) {
  const int m = q_range_ht_partitions(o);
  // The rows of each part in row order (q_range counts: the order within a part is free).
  const auto rows = rows_of_parts(q_range_ht_parts(n, o, rng), m);
  const RangeOptions opts = part_options(o, m);
  std::vector<Eigen::VectorXd> centres;
  int failed = 0;
  RowMatrix Y;
  for (const auto& r : rows) {
    Y.resize(static_cast<Eigen::Index>(r.size()), d);
    for (std::size_t k = 0; k < r.size(); ++k)
      copy_row(static_cast<Eigen::Index>(r[k]), Y.row(static_cast<Eigen::Index>(k)).data());
    const auto res = q_range(Y, opts, rng);
    if (res) {
      centres.push_back(res->centre);
    } else {
      ++failed;
    }
  }
  return q_range_ht_median(centres, failed, o, d);
}

}  // namespace

std::optional<RangeHtResult> q_range_ht(const ConstMatrixRef& X, const RangeHtOptions& o,
                                        Rng& rng) {
  const auto copy_row = [&](Eigen::Index i, double* out) {
    std::copy(X.row(i).data(), X.row(i).data() + X.cols(), out);
  };
  return range_ht(X.rows(), X.cols(), copy_row, o, rng);
}

std::optional<RangeHtResult> q_range_ht(const AffineRows& X, const RangeHtOptions& o, Rng& rng) {
  const auto copy_row = [&](Eigen::Index i, double* out) { X.row(i, out); };
  return range_ht(X.rows(), X.cols(), copy_row, o, rng);
}

}  // namespace dpstats
