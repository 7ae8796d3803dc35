// A held-out share of a fit's privacy units and a private validation loss on it (issue 27 item
// 3; docs/proofs/training.md §5, user-level.md and heavy-tailed.md "Holdout").
//
// Split: unit `id` (a global row id, or a user id) is held out when a keyed hash of it falls
// below fraction · 2^64. The 128-bit key is drawn from the release's Rng (on rank 0, shared with
// every rank) and never released: each unit is held out independently with probability
// `fraction`, whatever the data, so the fit runs on the other units and the loss release on the
// held-out ones, and the release composes both mechanisms (each is DP in the whole table: one
// unit more moves one side by one unit).
//
// Release: S = sum over the held-out units of min(max(loss_u, 0), L), one term per unit in
// [0, L] (add/remove sensitivity L), summed exactly on the box lattice of the held-out count and
// noised by a mechanism planned and charged with the release's other mechanisms: Gaussian (zCDP
// rho) or Laplace (pure epsilon). Stated: the noisy mean clipped loss S~ / m (m held-out units;
// public, as the fits' n), its noise sd, a 95% interval for the held-out units' mean clipped loss
// (the noise alone) and one for the expected clipped loss of a fresh unit from the same
// population (the noise at 97.5% and Hoeffding's bound on the sampling error at 97.5%: the
// held-out units are independent of the model they evaluate).
#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <variant>

#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {
class Communicator;  // dpstats/comm/communicator.hpp
}

namespace dpstats::optimize {

class HoldoutSplit {
 public:
  // fraction in (0, 0.5] (InvalidArgument naming `holdout` otherwise). The key is drawn on rank 0
  // of `comm` (null: this process) and every rank gets it.
  HoldoutSplit(double fraction, Rng& rng, Communicator* comm = nullptr);
  bool held_out(std::uint64_t id) const;
  double fraction() const { return fraction_; }
  // The rule, for diagnostics (the key is not in it).
  static const char* rule();

 private:
  double fraction_ = 0;
  std::uint64_t threshold_ = 0;
  std::array<std::uint64_t, 2> key_{};
};

// Checks a holdout fraction and loss bound before anything is drawn.
void check_holdout(double fraction, double loss_bound);

class HoldoutLoss {
 public:
  // The mechanism on the clipped-loss sum, sensitivity loss_bound L: Gaussian at rho-zCDP or
  // Laplace at pure epsilon.
  static HoldoutLoss gaussian(double loss_bound, double rho, NoiseMode mode);
  static HoldoutLoss laplace(double loss_bound, double epsilon, NoiseMode mode);
  // The mechanism's own entry (the plan charges it with the rest).
  LedgerEntry ledger_entry() const;
  const GaussianMechanism* gaussian_mechanism() const;  // null for Laplace
  double loss_bound() const { return L_; }
  // `losses`: this rank's held-out units' losses (any order, each clipped to [0, L] here; a NaN
  // counts as L). Sums every rank's exactly, draws the noise on rank 0, and returns the statement:
  // {units, loss_bound, loss, noise_sd, interval_95, population_interval_95, rule}; with no
  // held-out unit anywhere, {units: 0, loss: null}.
  nlohmann::json release(std::span<const double> losses, Rng& rng,
                         Communicator* comm = nullptr) const;

 private:
  HoldoutLoss(double L, std::variant<GaussianMechanism, LaplaceMechanism> m)
      : L_(L), mechanism_(std::move(m)) {}
  double L_;
  std::variant<GaussianMechanism, LaplaceMechanism> mechanism_;
};

}  // namespace dpstats::optimize
