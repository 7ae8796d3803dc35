// AboveThreshold (Dwork & Roth Alg. 1; Lyu, Su & Li 2017 Alg. 1) on the secure lattice Laplace.
//
// Both noises come from LaplaceMechanism objects built with the same sensitivity Δ and dimension 1,
// so they share the power-of-two lattice g (chosen from (Δ, d) only, laplace.hpp): the threshold
// as LaplaceMechanism(Δ, ε/2), the queries as LaplaceMechanism(Δ, ε/4) (monotone: ε/2), i.e. noise
// scales 2Δ/ε and 4Δ/ε (2Δ/ε) up to the lattice's rounding allowance.
//
// Why the lattice version is ε-DP. Let K = floor(Δ/g) + 1: rounding to g·Z moves neighbouring
// query answers apart by at most K lattice steps, and the mechanisms' discrete Laplace scales are
// t_T >= K/(ε/2) and t_Q >= K/(ε/4) (monotone: K/(ε/2)) steps. The threshold is public, so its
// rounding is the same on both sides. The usual coupling of the SVT proof then works on integers:
// shift the threshold noise by K steps (cost K/t_T <= ε/2) and the halting query's noise by 2K
// steps (cost 2K/t_Q <= ε/2); for monotone queries, shift one of them by K steps (<= ε/2 each,
// ε in total). Every comparison is between exact lattice points: queries and threshold are
// clamped (public, 1-Lipschitz, order-preserving) to ±2^51·g so that the noisy values, which
// are k·g with |k| < 2^53 unless the noise alone exceeds 2^52 steps (probability below
// exp(-2^52 / t)), are exact doubles and the comparison of the returned doubles is the
// comparison of the integers.
#include "dpstats/mechanisms/above_threshold.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/draw_log.hpp"

namespace dpstats {
namespace {

// Clamp bound in lattice steps (see the comment at the top of the file).
constexpr double kClampSteps = 0x1p51;

double checked_sensitivity(double sensitivity) {
  check_positive(sensitivity, "sensitivity");
  return sensitivity;
}

double checked_epsilon(double epsilon) {
  check_epsilon(epsilon);
  return epsilon;
}

double checked_threshold(double threshold) {
  check_finite(threshold, "threshold");
  return threshold;
}

double clamp_to_lattice_range(double x, double g) {
  const double bound = kClampSteps * g;
  return std::clamp(x, -bound, bound);
}

}  // namespace

AboveThreshold::AboveThreshold(double threshold, double sensitivity, double epsilon, Rng& rng,
                               bool monotone)
    : sensitivity_(checked_sensitivity(sensitivity)),
      epsilon_(checked_epsilon(epsilon)),
      rng_(&rng),
      threshold_noise_(sensitivity_, epsilon_ / 2),
      query_noise_(sensitivity_, monotone ? epsilon_ / 2 : epsilon_ / 4),
      noisy_threshold_(0) {
  checked_threshold(threshold);
  // The proof above needs one lattice for both noises.
  if (threshold_noise_.granularity() != query_noise_.granularity()) {
    throw std::logic_error(fmt::format(
        "AboveThreshold: threshold and query noise use different lattices ({} vs {})",
        threshold_noise_.granularity(), query_noise_.granularity()));
  }
  DrawLog::note("above_threshold", query_noise_.noise_scale());  // one draw: the whole run's queries
  const DrawLog::Inner inner;
  noisy_threshold_ = threshold_noise_.apply(
      clamp_to_lattice_range(threshold, threshold_noise_.granularity()), *rng_);
}

bool AboveThreshold::query(double value) {
  require(!halted_,
          "AboveThreshold has halted: it answered 'above' once and its budget is spent; build a "
          "new AboveThreshold (with new budget) for further queries");
  check_finite(value, "value");
  const DrawLog::Inner inner;
  const double noisy =
      query_noise_.apply(clamp_to_lattice_range(value, query_noise_.granularity()), *rng_);
  if (noisy >= noisy_threshold_) halted_ = true;
  return halted_;
}

// Pending queries. The query noise is the lattice Laplace release of 0: g·Y for the integer noise
// Y (|Y| <= 2^62 after the release's clamp). query(v) releases g·(round(clamp(v)/g) + Y); above()
// computes the same integer sum (exactly: Y = noise/g is a power-of-two scaling of an integer
// below 2^53 in magnitude unless |Y| > 2^52, the event the file's proof already excludes, of
// probability below exp(-2^52 / t)) and compares it with the noisy threshold. round and clamp are
// non-decreasing, so above() is non-decreasing in v.
AboveThreshold::Pending AboveThreshold::next_query() {
  require(!halted_,
          "AboveThreshold has halted: it answered 'above' once and its budget is spent; build a "
          "new AboveThreshold (with new budget) for further queries");
  Pending p;
  p.granularity_ = query_noise_.granularity();
  const DrawLog::Inner inner;
  p.noise_ = query_noise_.apply(0.0, *rng_);
  p.threshold_ = noisy_threshold_;
  return p;
}

bool AboveThreshold::Pending::above(double value) const {
  check_finite(value, "value");
  const double g = granularity_;
  const double k = std::nearbyint(clamp_to_lattice_range(value, g) * (1 / g));
  return (k + noise_ * (1 / g)) * g >= threshold_;
}

bool AboveThreshold::record(const Pending&, bool above) {
  require(!halted_, "AboveThreshold has halted: record() after the first 'above'");
  if (above) halted_ = true;
  return halted_;
}

LedgerEntry AboveThreshold::ledger_entry(std::string purpose) const {
  LedgerEntry e;
  e.mechanism = "above_threshold";
  e.purpose = std::move(purpose);
  e.sensitivity = sensitivity_;
  e.noise_scale = query_noise_.noise_scale();
  e.loss = loss();
  return e;
}

LedgerEntry AboveThreshold::entry(double sensitivity, double epsilon, bool monotone,
                                  std::string purpose) {
  checked_sensitivity(sensitivity);
  checked_epsilon(epsilon);
  const LaplaceMechanism query(sensitivity, monotone ? epsilon / 2 : epsilon / 4);
  LedgerEntry e;
  e.mechanism = "above_threshold";
  e.purpose = std::move(purpose);
  e.sensitivity = sensitivity;
  e.noise_scale = query.noise_scale();
  e.loss = PrivacyLoss::pure(epsilon);
  return e;
}

}  // namespace dpstats
