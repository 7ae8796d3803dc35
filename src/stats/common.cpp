// Shared pieces of the statistics' drivers (src/stats/internal.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/error.hpp"
#include "dpstats/exact/exact_sum.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "internal.hpp"

namespace dpstats::stats::detail {

Shares shares(const StatOptions& o, bool clipped) {
  Shares s;
  if (!clipped) return s;
  s.clip_check = kClipCheckShare;
  if (o.bounds.empty()) s.scale = o.scale_share.value_or(kDefaultScaleShare);
  s.main = remainder_after(remainder_after(1.0, s.scale), s.clip_check);
  return s;
}

double total_rho(const StatOptions& o) {
  return epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta) * (1 - 1e-9);
}

ReleaseBudget release_budget(const StatOptions& o, Budget* caller) {
  return ReleaseBudget(o.privacy.loss(), o.privacy.delta > 0 ? Accountant::zcdp : Accountant::basic,
                       caller);
}

double pure_epsilon(double fraction, const StatOptions& o) {
  if (o.privacy.delta == 0) return o.privacy.epsilon * fraction;
  return std::sqrt(2 * total_rho(o) * fraction) * (1 - 1e-12);
}

Noise::Noise(double sensitivity, double fraction, const StatOptions& o, std::size_t dimension,
             std::string purpose, double unit)
    : purpose_(std::move(purpose)), unit_(unit) {
  if (o.privacy.delta == 0)
    laplace_.emplace(sensitivity, o.privacy.epsilon * fraction, dimension, o.run.noise);
  else
    gaussian_.emplace(
        GaussianMechanism::from_rho(sensitivity, total_rho(o) * fraction, dimension, o.run.noise));
}

LedgerEntry Noise::entry() const {
  return in_output_units(laplace_ ? laplace_->ledger_entry(purpose_) : gaussian_->ledger_entry(purpose_),
                         unit_);
}

double Noise::apply(double value, Rng& rng) const {
  return laplace_ ? laplace_->apply(value, rng) : gaussian_->apply(value, rng);
}

double Noise::noise_scale() const { return laplace_ ? laplace_->noise_scale() : gaussian_->sigma(); }

double Noise::bound(double beta) const {
  const double z = laplace_ ? std::log(1 / beta) : standard_normal_quantile(1 - beta / 2);
  return z * noise_scale() * unit_;
}

void validate_common(const StatOptions& o) {
  validate(o.privacy, DeltaRule::any);
  validate(o.run);
  if (o.scale_share)
    require(*o.scale_share > 0 && *o.scale_share < 1,
            fmt::format("scale_share must be in (0, 1), got {}", *o.scale_share));
  for (const auto& b : o.bounds) {
    check_finite(b.lower, "bounds lower");
    check_finite(b.upper, "bounds upper");
    require(b.lower < b.upper && std::isfinite(b.upper - b.lower),
            fmt::format("bounds must satisfy lower < upper (finite width), got ({}, {})", b.lower,
                        b.upper));
  }
}

void validate_table(const ConstMatrixRef& X) {
  require(X.rows() >= 1 && X.cols() >= 1,
          fmt::format("X must have at least one row and one column, got {} column(s){}",
                      X.cols(), X.rows() == 0 ? " and no row" : ""));  // the row count: not shown
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = 0; j < X.cols(); ++j)
      require(std::isfinite(X(i, j)), "X has a NaN or infinite value at row {}, column {}", i, j);
}

std::string fingerprint(const StatOptions& o, const char* statistic, Eigen::Index d) {
  return fingerprint_of(std::string("stat ") + statistic, o, d);
}

std::int64_t guarded_rows(const ConstMatrixRef& X, const StatOptions& o, Communicator& comm,
                          const char* statistic) {
  if (comm.size() == 1) {
    validate_table(X);
    return static_cast<std::int64_t>(X.rows());
  }
  check_agreement(comm, fingerprint(o, statistic, X.cols()), "the statistic's options and column count");
  all_or_none(comm, [&] {
    if (X.rows() > 0) validate_table(X);
  });
  const std::int64_t n = allreduce_count(comm, static_cast<std::int64_t>(X.rows()));
  require(n > 0, "X must have at least one row and one column, got 0 x {} (over {} ranks)",
          X.cols(), comm.size());
  return n;
}

ColumnBoundsPlan column_bounds(const ConstMatrixRef& X, const StatOptions& o, const Shares& shares,
                               ReleaseBudget& account, Rng& rng, nlohmann::json& diagnostics) {
  const auto d = static_cast<std::size_t>(X.cols());
  if (!o.bounds.empty()) {
    require(o.bounds.size() == 1 || o.bounds.size() == d,
            fmt::format("bounds must hold one (lower, upper) for all columns or one per column "
                        "({}), got {}", d, o.bounds.size()));
    return {o.bounds.size() == d ? o.bounds : std::vector<ColumnBounds>(d, o.bounds[0]),
            Reliability::ok("the given bounds"), false};
  }
  return estimate_bounds(X, o, shares, account, rng, diagnostics);
}

ExactSums exact_sums(const ConstMatrixRef& X, const std::vector<ColumnBounds>& bounds, double Q,
                     bool squares, int threads) {
  const Eigen::Index n = X.rows(), d = X.cols(), second = squares ? d : 0;
  // Columns of the one exact sum: [0, d) first, [d, d + second) squares, the last one counts the
  // rows with a value outside its bounds (terms 0 or 1).
  const Vector sums = exact::row_sums(
      n, d + second + 1, std::max(Q, 1.0), threads,
      [&](int, std::int64_t begin, std::int64_t end, std::uint64_t* w) {
        const Eigen::Index d = X.cols(), second = squares ? d : 0;  // local bounds: see row_sums
        for (std::int64_t i = begin; i < end; ++i) {
          bool out = false;
          for (Eigen::Index j = 0; j < d; ++j) {
            const auto& b = bounds[static_cast<std::size_t>(j)];
            const double x = X(i, j), width = b.upper - b.lower;
            out = out || x < b.lower || x > b.upper;
            const double c = std::clamp(x, b.lower, b.upper);
            exact::add(w[j], exact::unit_value((c - b.lower) / width, Q));
            if (squares) {
              const double u = (c - b.lower) / width - 0.5;  // in [-1/2, 1/2]
              exact::add(w[d + j], exact::unit_value(4 * u * u, Q));
            }
          }
          exact::add(w[d + second], out ? 1.0 : 0.0);
        }
      });
  return ExactSums{sums.head(d), sums.segment(d, second),
                   static_cast<std::int64_t>(sums[d + second])};
}

double clipped_threshold(std::size_t d) { return std::min(0.5, 0.1 * static_cast<double>(d)); }

ClippedFraction report_clipped(const Noise& noise, std::int64_t outside, double n, bool estimated,
                               double beta, Rng& rng, nlohmann::json& diagnostics) {
  const double noisy = std::clamp(noise.apply(static_cast<double>(outside), rng), 0.0, n);
  // A warning only when even a low estimate (4 noise scales below: exceeded with probability
  // <= e^-4 / 2 for Laplace) is above 5% of the rows, so noise alone rarely raises it.
  const double scale = noise.noise_scale() * noise.unit();
  const double low = std::max(0.0, noisy - 4 * scale);
  const ClippedFraction f{std::min(1.0, (noisy + noise.bound(beta)) / n),
                          std::max(0.0, noisy - 2 * scale) / n};
  nlohmann::json j = {{"noisy_count", noisy},
                      {"fraction", noisy / n},
                      {"fraction_upper", f.upper},
                      {"fraction_upper_confidence", 1 - beta},
                      {"fraction_low", f.low},
                      {"noise_scale", noise.noise_scale()},
                      {"budget_share", kClipCheckShare}};
  diagnostics["clipped_rows"] = j;
  const char* which = estimated ? "the privately estimated bounds" : "the given bounds";
  if (low / n > 0.05)
    diagnostics["warning"] = fmt::format(
        "about {:.1f}% of the rows lie outside {} and were clipped: the release estimates the "
        "clipped data (its stated error counts them); {}",
        100 * low / n, which,
        estimated ? "give wider bounds (--bounds; Python: bounds=) if the tail matters"
                  : "widen the bounds or omit them to estimate them privately");
  return f;
}

SealFacts facts(const StatOptions& o, Neighbouring neighbouring) {
  SealFacts f(true);  // docs/proofs/stats.md
  f.neighbouring = neighbouring;
  f.noise = o.run.noise;
  return f;
}

nlohmann::json bounds_json(const std::vector<ColumnBounds>& bounds) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& b : bounds) j.push_back({b.lower, b.upper});
  return j;
}

nlohmann::json noise_scales(const std::vector<Noise>& noises, double factor) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& m : noises) j.push_back(m.noise_scale() * m.unit() * factor);
  return j;
}

void sort_by_probability(Eigen::Ref<Vector> values, const std::vector<double>& probabilities) {
  std::vector<std::size_t> order(probabilities.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](auto a, auto b) { return probabilities[a] < probabilities[b]; });
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t r = 0; r < order.size(); ++r) values[static_cast<Eigen::Index>(order[r])] = sorted[r];
}

}  // namespace dpstats::stats::detail
