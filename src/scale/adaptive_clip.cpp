// Adaptive clipping: a running private quantile for streams (adaptive_clip.hpp;
// docs/proofs/scale.md §4).
#include "dpstats/scale/adaptive_clip.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "dpstats/error.hpp"

namespace dpstats {
namespace {

const AdaptiveClipOptions& checked(const AdaptiveClipOptions& o) {
  check_positive(o.initial_clip, "initial_clip");
  check_positive(o.min_clip, "min_clip");
  check_positive(o.max_clip, "max_clip");
  require(o.min_clip <= o.initial_clip && o.initial_clip <= o.max_clip,
          "need min_clip <= initial_clip <= max_clip, got {}, {}, {}", format_number(o.min_clip),
          format_number(o.initial_clip), format_number(o.max_clip));
  require(o.target_quantile > 0 && o.target_quantile < 1,
          "target_quantile must be in (0, 1), got {}", format_number(o.target_quantile));
  require(o.learning_rate > 0 && o.learning_rate <= 10, "learning_rate must be in (0, 10], got {}",
          format_number(o.learning_rate));
  check_positive(o.rho_per_step, "rho_per_step");
  return o;
}

}  // namespace

AdaptiveClip::AdaptiveClip(const AdaptiveClipOptions& o)
    : o_(checked(o)),
      mechanism_(GaussianMechanism::from_rho(1.0, o.rho_per_step, 1, o.noise)),
      clip_(o.initial_clip) {}

LedgerEntry AdaptiveClip::step_entry() const {
  return mechanism_.ledger_entry("scale: adaptive clip, noisy count of norms <= clip (one step)");
}

LedgerEntry AdaptiveClip::plan(std::size_t steps) const {
  require(steps >= 1 && steps <= 1000000000, "steps must be in [1, 1e9], got {}", steps);
  LedgerEntry e = step_entry();
  e.purpose = fmt::format("scale: adaptive clip, noisy counts of norms <= clip ({} steps)", steps);
  e.count = static_cast<int>(steps);
  return e;
}

void AdaptiveClip::prepay(std::size_t steps, ReleaseBudget& account) {
  account.claim(plan(steps));
  prepaid_ += steps;
}

double AdaptiveClip::update_prepaid(std::span<const double> norms, double batch_size, Rng& rng) {
  check_positive(batch_size, "batch_size");
  require(prepaid_ > 0, "update_prepaid: no prepaid step left (call prepay first)");
  --prepaid_;
  return step(norms, batch_size, rng);
}

double AdaptiveClip::step(std::span<const double> norms, double batch_size, Rng& rng) {
  double below = 0;
  for (std::size_t i = 0; i < norms.size(); ++i) {
    require(!std::isnan(norms[i]), "norms has a NaN at index {}", i);
    if (norms[i] <= clip_) below += 1;
  }
  const double noisy = mechanism_.apply(below, rng);
  const double fraction = noisy / batch_size;
  // Post-processing of the noisy count; the exponent is bounded so exp never overflows.
  const double exponent = std::clamp(-o_.learning_rate * (fraction - o_.target_quantile), -700.0,
                                     700.0);
  clip_ = std::clamp(clip_ * std::exp(exponent), o_.min_clip, o_.max_clip);
  ++steps_;
  return clip_;
}

nlohmann::json AdaptiveClip::diagnostics() const {
  return {{"estimator", "adaptive_clip (Andrew et al. 2021, geometric update)"},
          {"clip", clip_},
          {"steps", steps_},
          {"target_quantile", o_.target_quantile},
          {"learning_rate", o_.learning_rate},
          {"rho_per_step", mechanism_.rho()},
          {"noise_sigma", mechanism_.sigma()}};
}

}  // namespace dpstats
