// Running private quantile for streams: adaptive clipping (Andrew, Thakkar, McMahan & Ramaswamy
// 2021, "Differentially Private Learning with Adaptive Clipping"; docs/proofs/scale.md §4).
// Each step counts the rows whose norm is <= the current clip C, adds discrete Gaussian noise
// (GaussianMechanism, secure, l2 sensitivity 1: one row moves the count by at most 1 under
// replace-one and add/remove), and moves C geometrically towards the target quantile gamma:
//     C <- C * exp(-eta * (b~ / m - gamma)),   b~ = noisy count, m = the public batch size.
// Per step rho_step-zCDP; T steps compose to T rho_step (on disjoint batches the steps compose in
// parallel, which the caller may claim instead). C stays in [min_clip, max_clip].
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

struct AdaptiveClipOptions {
  double initial_clip = 1;        // > 0, finite (a private value from private_norm_quantile fits)
  double target_quantile = 0.5;   // gamma, in (0, 1)
  double learning_rate = 0.2;     // eta, in (0, 10]
  double rho_per_step = 0.001;    // > 0: the count's zCDP per step
  double min_clip = 0x1p-1022;    // clip range, 0 < min_clip <= initial_clip <= max_clip
  double max_clip = 1.7976931348623157e308;
  NoiseMode noise = NoiseMode::secure;
};

class AdaptiveClip {
 public:
  explicit AdaptiveClip(const AdaptiveClipOptions& o);  // checks every option

  double clip() const { return clip_; }
  std::size_t steps() const { return steps_; }
  std::size_t prepaid() const { return prepaid_; }
  double noise_sigma() const { return mechanism_.sigma(); }
  // The cost of one step (the Gaussian mechanism's own entry), and of `steps` steps (count).
  LedgerEntry step_entry() const;
  LedgerEntry plan(std::size_t steps) const;

  // Presents plan(steps) on `account` (claimed from its plan, or charged as the whole plan of an
  // account not charged yet: seam.hpp), then update_prepaid() spends the steps. A release is
  // charged once, before any noise, so there is no pay-as-you-go step.
  void prepay(std::size_t steps, ReleaseBudget& account);
  // Updates from this batch's norms; returns the new clip. batch_size is the public m (> 0);
  // under replace-one norms.size() is public and may be it.
  double update_prepaid(std::span<const double> norms, double batch_size, Rng& rng);

  nlohmann::json diagnostics() const;

 private:
  double step(std::span<const double> norms, double batch_size, Rng& rng);
  AdaptiveClipOptions o_;
  GaussianMechanism mechanism_;
  double clip_;
  std::size_t steps_ = 0, prepaid_ = 0;
};

}  // namespace dpstats
