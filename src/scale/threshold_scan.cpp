// AboveThreshold over integer counts (threshold_scan.hpp; docs/proofs/scale.md §7).
#include "dpstats/scale/threshold_scan.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/draw_log.hpp"
#include "dpstats/random/discrete_laplace.hpp"
#include "exact_coins.hpp"

namespace dpstats {
namespace {

constexpr std::uint64_t kDen = std::uint64_t{1} << 20;

// t_num with t_num / 2^20 >= 2 / epsilon (rounded up, with a margin for the division's rounding),
// below 2^56 as the discrete Laplace sampler requires.
std::uint64_t scale_num(double epsilon) {
  check_epsilon(epsilon);
  const double num = std::ceil(2.0 / epsilon * static_cast<double>(kDen) * (1 + 0x1p-48)) + 1;
  require(num < 0x1p56, "ThresholdScan: epsilon must be >= 2^-35, got {}", format_number(epsilon));
  return static_cast<std::uint64_t>(num);
}

}  // namespace

ThresholdScan::ThresholdScan(std::int64_t threshold, double epsilon, Rng& rng)
    : num_(scale_num(epsilon)), den_(kDen), epsilon_(epsilon), bits_(rng) {
  DrawLog::note("above_threshold", noise_scale());  // one draw: the whole scan's noises
  const DiscreteLaplace noise(num_, den_);
  noisy_threshold_ = static_cast<scale_detail::i128>(threshold) + noise(bits_);
}

bool ThresholdScan::above(std::int64_t count) {
  require(!halted_, "ThresholdScan has halted: it answered 'above' once; a new scan needs a new "
                    "budget");
  // count + nu >= T + rho  <=>  nu >= (T + rho) - count, an exact integer (|.| < 2^65).
  halted_ = scale_detail::discrete_laplace_at_least(bits_, noisy_threshold_ - count, num_, den_);
  return halted_;
}

double ThresholdScan::noise_scale() const {
  return static_cast<double>(num_) / static_cast<double>(den_);
}

LedgerEntry ThresholdScan::entry(double epsilon, std::string purpose) {
  LedgerEntry e;
  e.mechanism = "above_threshold";
  e.purpose = std::move(purpose);
  e.sensitivity = 1;
  e.noise_scale = static_cast<double>(scale_num(epsilon)) / static_cast<double>(kDen);
  e.loss = PrivacyLoss::pure(epsilon);
  return e;
}

LedgerEntry ThresholdScan::ledger_entry(std::string purpose) const {
  return entry(epsilon_, std::move(purpose));
}

double ThresholdScan::rank_error(double epsilon, std::size_t steps, double beta) {
  require(beta > 0 && beta < 1, "beta must be in (0, 1), got {}", format_number(beta));
  require(steps >= 1, "steps must be >= 1, got {}", steps);
  const double t = static_cast<double>(scale_num(epsilon)) / static_cast<double>(kDen);
  return t * (std::log(4 / beta) + std::log(4 * static_cast<double>(steps) / beta));
}

}  // namespace dpstats
