// Exponential mechanism over a finite candidate set: permute-and-flip (exact) and Gumbel-max
// (floating point, research only).
#include "dpstats/mechanisms/exponential.hpp"

#include "dpstats/mechanisms/draw_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <numeric>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/random/bernoulli.hpp"

namespace dpstats {
namespace {

// Shrink of ε that absorbs the floating-point rounding of the exponent (exponential.hpp): the
// computed γ = fl(fl(q* − q_i) · fl(fl(ε') / (cΔ))) carries a relative error below 4·2^-53, so
// with ε' = ε(1 − 2^-40) it lies in [1 − 2^-39, 1 − 2^-41] · ε (q* − q_i) / (cΔ): every exponent is
// that of an exact run at some ε'' < ε, never above.
constexpr double kEpsilonShrink = 1.0 - 0x1p-40;

void check_options(std::span<const double> quality, const ExponentialMechanismOptions& o) {
  check_epsilon(o.epsilon);
  check_positive(o.sensitivity, "sensitivity");
  require(!quality.empty(), "quality must hold at least one candidate score, got 0 candidates");
  for (std::size_t i = 0; i < quality.size(); ++i) {
    require(std::isfinite(quality[i]), "quality[{}] must be finite, got a NaN or infinite score",
            i);
  }
}

// c = 1 for monotone quality functions, 2 otherwise (McKenna & Sheldon 2020, Thm 1 / Cor. 1).
double sensitivity_factor(const ExponentialMechanismOptions& o) { return o.monotone ? 1.0 : 2.0; }

}  // namespace

std::size_t permute_and_flip(std::span<const double> quality, const ExponentialMechanismOptions& o,
                             Rng& rng) {
  check_options(quality, o);
  const std::size_t n = quality.size();
  const double q_star = *std::max_element(quality.begin(), quality.end());
  const double rate = (o.epsilon * kEpsilonShrink) / (sensitivity_factor(o) * o.sensitivity);
  DrawLog::note("exponential", sensitivity_factor(o) * o.sensitivity / o.epsilon);

  // Lazy Fisher–Yates: step k swaps a uniform pick from the unvisited suffix into position k,
  // so the visited prefix is a uniformly random ordered sample without replacement.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t pick = k + static_cast<std::size_t>(rng.uniform_below(n - k));
    std::swap(order[k], order[pick]);
    const std::size_t i = order[k];
    const double gamma = (q_star - quality[i]) * rate;
    // exp(-γ) is exactly 0 only for γ = +inf (a gap that overflows a double): never accepted.
    if (std::isfinite(gamma) && bernoulli_exp(rng, gamma)) return i;
  }
  // Unreachable: the maximiser has γ = 0 and is accepted with probability 1 when visited.
  throw std::logic_error("permute_and_flip: no candidate accepted");
}

std::size_t gumbel_max(std::span<const double> quality, const ExponentialMechanismOptions& o,
                       Rng& rng) {
  check_options(quality, o);
  const double rate = o.epsilon / (sensitivity_factor(o) * o.sensitivity);
  DrawLog::note("exponential", sensitivity_factor(o) * o.sensitivity / o.epsilon);
  std::size_t best = 0;
  double best_score = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < quality.size(); ++i) {
    // U in (0, 1): 53 random bits centred in their cell, so log(U) and log(-log U) are finite.
    const double u = (static_cast<double>(rng.next_u64() >> 11) + 0.5) * 0x1.0p-53;
    const double score = quality[i] * rate - std::log(-std::log(u));
    if (score > best_score) {
      best_score = score;
      best = i;
    }
  }
  return best;
}

LedgerEntry exponential_mechanism_entry(const ExponentialMechanismOptions& o, std::string purpose) {
  check_epsilon(o.epsilon);
  check_positive(o.sensitivity, "sensitivity");
  LedgerEntry e;
  e.mechanism = "exponential";
  e.purpose = std::move(purpose);
  e.sensitivity = o.sensitivity;
  e.noise_scale = sensitivity_factor(o) * o.sensitivity / o.epsilon;
  e.loss = PrivacyLoss::pure(o.epsilon);
  return e;
}

}  // namespace dpstats
