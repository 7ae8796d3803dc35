// Private quantile: exact permute-and-flip over a public grid with quality -|#{x_i < c} - q n|
// (q rounded to a multiple of 2^-60; the scores computed exactly in integers).
// Sensitivity 1: replace-one moves each count by at most 1; add/remove moves a count by 0 or 1
// while q n moves by q, so the quality moves by at most max(q, 1 - q) <= 1. Not monotone.
#include "dpstats/mechanisms/quantile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "../scale/grid_select.hpp"

namespace dpstats {
namespace {

void check_options(const QuantileOptions& o) {
  require(o.q >= 0 && o.q <= 1, fmt::format("q must be in [0, 1], got {}", o.q));
  check_finite(o.lower, "lower");
  check_finite(o.upper, "upper");
  require(o.lower < o.upper,
          fmt::format("lower must be < upper, got lower = {}, upper = {}", o.lower, o.upper));
  require(std::isfinite(o.upper - o.lower),
          fmt::format("upper - lower must be finite, got lower = {}, upper = {}", o.lower, o.upper));
  require(o.candidates >= 2, fmt::format("candidates must be >= 2, got {}", o.candidates));
  check_epsilon(o.epsilon);
}

ExponentialMechanismOptions selection_options(const QuantileOptions& o) {
  ExponentialMechanismOptions e;
  e.epsilon = o.epsilon;
  e.sensitivity = 1;
  e.monotone = false;
  return e;
}

// Candidate k of the evenly spaced public grid; the last one is exactly `upper`.
double grid_point(const QuantileOptions& o, std::size_t k) {
  if (k + 1 == o.candidates) return o.upper;
  const double step = (o.upper - o.lower) / static_cast<double>(o.candidates - 1);
  return o.lower + step * static_cast<double>(k);
}

// below[k] = #{clamp(x_i) < candidate k} for this process's values (checked finite).
std::vector<std::int64_t> counts_below(std::span<const double> values, const QuantileOptions& o) {
  std::vector<double> sorted(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    require(std::isfinite(values[i]), "values has a NaN or infinite value at index {}", i);
    sorted[i] = std::clamp(values[i], o.lower, o.upper);
  }
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::int64_t> below(o.candidates);
  for (std::size_t k = 0; k < o.candidates; ++k)
    below[k] = std::lower_bound(sorted.begin(), sorted.end(), grid_point(o, k)) - sorted.begin();
  return below;
}

// The candidate chosen for the counts of n values. The scores are exact (docs/proofs/scale.md
// §1b): |A_k - q n| in units of 2^-60 rows is an integer below 2^124 (q rounded to a multiple of
// 2^-60), and each quality is minus its gap to the best, converted once, so the best quality is
// exactly 0 and permute-and-flip's q* - q_k is that one rounding of an exact integer. (In doubles,
// q n and A_k - q n were rounded separately and neighbours' scores could differ by more than 1.)
double select(std::span<const std::int64_t> below, std::int64_t n, const QuantileOptions& o,
              Rng& rng) {
  using scale_detail::i128;
  const i128 target = static_cast<i128>(scale_detail::quantile_units(o.q)) * n;
  std::vector<i128> dist(o.candidates);
  for (std::size_t k = 0; k < o.candidates; ++k) {
    const i128 a = static_cast<i128>(below[k]) << 60;
    dist[k] = a > target ? a - target : target - a;
  }
  const i128 best = *std::min_element(dist.begin(), dist.end());
  std::vector<double> quality(o.candidates);
  for (std::size_t k = 0; k < o.candidates; ++k)
    quality[k] = -scale_detail::to_double(dist[k] - best) * 0x1p-60;
  return grid_point(o, permute_and_flip(quality, selection_options(o), rng));
}

}  // namespace

double private_quantile(std::span<const double> values, const QuantileOptions& o, Rng& rng) {
  check_options(o);
  require(!values.empty(), "values must hold at least one value, got 0");
  return select(counts_below(values, o), static_cast<std::int64_t>(values.size()), o, rng);
}

double private_quantile(std::span<const double> values, const QuantileOptions& o, Rng& rng,
                        Communicator& comm) {
  if (comm.size() == 1) return private_quantile(values, o, rng);
  check_options(o);
  std::vector<std::int64_t> words;  // the counts below each candidate, then the value count
  all_or_none(comm, [&] {
    words = counts_below(values, o);
    words.push_back(static_cast<std::int64_t>(values.size()));
  });
  comm.allreduce_sum(words);
  const std::int64_t n = words.back();
  require(n >= 1, "values must hold at least one value over the {} ranks, got 0", comm.size());
  words.pop_back();
  return on_root(comm, [&] { return select(words, n, o, rng); });
}

LedgerEntry private_quantile_entry(const QuantileOptions& o, std::string purpose) {
  check_options(o);
  LedgerEntry e = exponential_mechanism_entry(selection_options(o), std::move(purpose));
  e.mechanism = "private_quantile";
  return e;
}

}  // namespace dpstats
