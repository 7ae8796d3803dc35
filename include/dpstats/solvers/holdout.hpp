// A held-out share of a fit's privacy units and a private validation loss on it (issue 27 item
// 3; docs/proofs/training.md §5, user-level.md and heavy-tailed.md "Holdout").
//
// Split: a unit is held out when a keyed hash of the unit itself falls below fraction · 2^64:
// of its values (a row: its features and label) or of its id (a user). The 128-bit key is drawn
// from the release's Rng (on rank 0, shared with every rank) and not released. So for every key
// a unit's side is a function of that unit alone: adding or removing one unit moves exactly one
// side by that unit and leaves every other unit where it was, the fit runs on one side and the
// loss release on the other, and the release is DP by the composition of both mechanisms
// (docs/proofs/training.md §5). Over the key, each unit is held out with probability about
// `fraction` (identical rows land on the same side).
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
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <variant>
#include <vector>

#include "dpstats/data/matrix.hpp"
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
  // A row by its values (bit patterns, in order; e.g. the features, then the label).
  bool held_out(std::span<const double> values) const;
  // The indices of the rows of X it keeps and holds out, in order; row i is judged by its values
  // followed by label(i) (a fit's rows: the features, then the label).
  struct Rows {
    std::vector<Eigen::Index> keep, held;
  };
  Rows rows(const ConstMatrixRef& X, const std::function<double(Eigen::Index)>& label) const;

  // Exactly k units held out, for a fit whose number of units N is public (replace-one): the
  // k = held_units(N) smallest units of every rank in the keyed order (the keyed hash of the unit,
  // then its words: a total order on distinct units; equal units are interchangeable). So the
  // training and held-out counts N - k and k are public, and replacing one unit changes each side
  // by at most one replaced unit (docs/proofs/user-level.md §5). `words[i]`: this rank's unit i
  // (a user: {id}; a row: its values' bit patterns, then the label's). Returns one flag per
  // unit: 1 when held out.
  std::int64_t held_units(std::int64_t units) const;  // round(fraction N) in [1, N - 1]; N >= 2
  std::vector<char> smallest(const std::vector<std::vector<std::uint64_t>>& words,
                             std::int64_t units, Communicator* comm = nullptr) const;
  // rows() with exactly held_units(N) held out (smallest), N the rows over every rank.
  Rows exact_rows(const ConstMatrixRef& X, const std::function<double(Eigen::Index)>& label,
                  Communicator* comm = nullptr) const;
  double fraction() const { return fraction_; }
  // The rules, for diagnostics (the key is not in them): by threshold, and the exact count.
  static const char* rule();
  static const char* exact_rule();

 private:
  double fraction_ = 0;
  std::uint64_t threshold_ = 0;
  std::array<std::uint64_t, 2> key_{};
  std::uint64_t hash(std::span<const std::uint64_t> words) const;
};

// Checks a holdout fraction and loss bound before anything is drawn.
void check_holdout(double fraction, double loss_bound);

class HoldoutLoss {
 public:
  // The mechanism on the clipped-loss sum, sensitivity loss_bound L: Gaussian at rho-zCDP or
  // Laplace at pure epsilon, each shrunk by 2^-45, so that a caller that takes the given loss off
  // its total composes within the total whatever the rounding of its subtraction.
  static HoldoutLoss gaussian(double loss_bound, double rho, NoiseMode mode);
  static HoldoutLoss laplace(double loss_bound, double epsilon, NoiseMode mode);
  // The mechanism's own entry (the plan charges it with the rest).
  LedgerEntry ledger_entry() const;
  const GaussianMechanism* gaussian_mechanism() const;  // null for Laplace
  double loss_bound() const { return L_; }
  // `losses`: this rank's held-out units' losses (any order, each clipped to [0, L] here; a NaN
  // counts as L). Sums every rank's exactly, draws the noise on rank 0, and returns the statement:
  // {units, loss_bound, loss, noise_sd, interval_95, population_interval_95, rule}; with no
  // held-out unit anywhere, {units: 0, loss: null}. For a public count of held-out units: the
  // replace-one fits' exact split (HoldoutSplit::smallest), or a non-private reference.
  nlohmann::json release(std::span<const double> losses, Rng& rng,
                         Communicator* comm = nullptr) const;
  // The same release when the number of held-out units m is private (issue 28: the split is a
  // keyed hash of each unit, so a neighbour moves m; under add/remove even the number of units
  // is private). The sum is taken on the box lattice of `capacity` terms (a public bound on m;
  // more is an InvalidArgument) and divided by the public expected count f·N (N `units`, f
  // `fraction`): {units_expected, loss_bound, loss, noise_sd, interval_95,
  // population_interval_95, rule, statement}. interval_95 is the noise's interval for the sum
  // per expected unit; population_interval_95 holds the expected clipped loss of a fresh unit
  // with probability >= 95% from three bounds at 5/3% each: the noise, Hoeffding's on the
  // held-out units' mean at m >= m_lo, and Hoeffding's on m ~ Binomial(N, f) (m in [m_lo, m_hi]).
  struct PublicCount {
    std::int64_t units = 0;  // N, public
    double fraction = 0;     // f
    std::int64_t capacity = 0;
  };
  nlohmann::json release(std::span<const double> losses, Rng& rng, Communicator* comm,
                         PublicCount count) const;

 private:
  // The noisy clipped-loss sum (nats) of every rank's losses on the box lattice of `capacity`
  // terms, and the noise's sd and its two-sided 95%, 97.5% and 1 - 5%/3 half-widths (nats).
  struct NoisySum {
    double sum = 0, sd = 0, half95 = 0, half975 = 0, half_third = 0;
  };
  NoisySum noisy_sum(std::span<const double> losses, Rng& rng, Communicator& comm,
                     std::int64_t capacity) const;
  HoldoutLoss(double L, std::variant<GaussianMechanism, LaplaceMechanism> m)
      : L_(L), mechanism_(std::move(m)) {}
  double L_;
  std::variant<GaussianMechanism, LaplaceMechanism> mechanism_;
};


}  // namespace dpstats::optimize
