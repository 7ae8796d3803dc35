// Privacy-loss-distribution (PLD) accountant: pessimistic, so every reported epsilon (or delta) is
// an upper bound on the true one. Proofs: docs/proofs/accounting.md (§1-§4).
//
// A PLD is the distribution of the privacy loss L = log(P(x)/Q(x)), x ~ P, of a dominating pair
// (P, Q) of a mechanism, with an atom at +infinity for P-mass where Q = 0. For every real epsilon
//   delta(epsilon) = E[(1 - exp(epsilon - L))_+] + Pr[L = +inf]
// is the hockey-stick divergence H_{e^epsilon}(P || Q), and composition convolves the PLDs.
//
// Discretisation ("connect the dots", Doroshenko et al. 2022): losses live on a grid k * h; the
// mass in a cell (a, b] of the grid is split between a and b so that it keeps its probability and
// its Q-mass E[e^{-L}]. Each split is a chord of the convex map e^epsilon -> (1 - e^{epsilon-L})_+,
// so delta(epsilon) of the discretised PLD is >= the true one for every epsilon, and that is kept
// by composition (§2). Tails: upper tail mass goes to +infinity, lower tail mass is rounded up to
// the lowest kept grid point (both only increase delta), cut in proportion to how often the PLD
// enters the result (§2b). Rounding: the directly convolved bulk's relative error scales the
// masses up (a measure above the PLD; not amplified by composition), the FFT's absolute error
// bound goes to +infinity (§3). A PLD's masses may therefore add up to slightly more than 1.
//
// Self-composition: repeated squaring; grids are refined for a concentrated loss and coarsened
// by 2 (connect the dots again, pessimistic) once composition has spread it or a PLD exceeds
// max_buckets (§2b), so T = 10^7 costs ~24 squarings of a bounded size.
//
// Mechanisms (noise parameter, l1 (Laplace) or l2 (Gaussian) sensitivity Delta):
//   gaussian (sigma), laplace (scale b), discrete_gaussian (sigma of N_Z, integer Delta),
//   discrete_laplace (scale t: P(x) ~ exp(-|x|/t), integer Delta).
// Subsampling: Sampling::poisson with Neighbouring::add_remove (rate q; both directions of the
// pair are kept: remove ((1-q)B + qA, B) and add (B, (1-q)B + qA), A the shifted noise, B the
// centred one, and every delta is the larger of the two). q = 1 is the plain mechanism, for either
// relation (the sensitivity then is the caller's, for its relation). Poisson sampling under
// replace-one and sampling without replacement are refused (InvalidArgument): see §5 of the proofs.
#pragma once
#include <cstdint>
#include <vector>

#include "dpstats/privacy/privacy_loss.hpp"

namespace dpstats {

enum class PldMechanism { gaussian, laplace, discrete_gaussian, discrete_laplace };
const char* to_string(PldMechanism m);

struct PldOptions {
  // Grid interval h of a single mechanism's PLD, halved (down to 1e-7) until the loss's standard
  // deviation spans cells_per_deviation cells; every grid is this times a power of two.
  double discretization = 1e-4;
  std::size_t max_buckets = 1 << 17;  // a longer PLD gets a grid twice as coarse
  // A PLD longer than min_buckets also gets a grid twice as coarse while that grid still spans
  // its loss deviation with cells_per_deviation cells (composition spreads the loss).
  std::size_t min_buckets = 1 << 12;
  double cells_per_deviation = 8;
  // Mass cut from each tail per composition (moved pessimistically: the upper tail to +infinity,
  // the lower onto the lowest kept loss); self_compose scales it so that all its levels together
  // cut about this much, for any number of compositions.
  double tail_mass = 1e-16;
};

// One direction of a discretised PLD: mass[i] at loss (offset + i) * h, plus mass at +infinity.
struct PldPmf {
  double h = 1e-4;
  std::int64_t offset = 0;
  std::vector<double> mass;
  double infinity_mass = 0;

  double delta_for_epsilon(double epsilon) const;
  // The smallest epsilon >= 0 with delta_for_epsilon(epsilon) <= delta (+inf if none).
  double epsilon_for_delta(double delta) const;
};

class PrivacyLossDistribution {
 public:
  // The identity (no privacy loss): composing with it changes nothing.
  PrivacyLossDistribution();

  static PrivacyLossDistribution from_mechanism(PldMechanism mechanism, double noise,
                                                double sensitivity, double sampling_rate = 1,
                                                Sampling sampling = Sampling::poisson,
                                                Neighbouring neighbouring = Neighbouring::add_remove,
                                                const PldOptions& options = {});
  // One DP-SGD step: Gaussian noise multiplier z, sensitivity 1, rate q.
  static PrivacyLossDistribution subsampled_gaussian(double q, double noise_multiplier,
                                                     Sampling sampling, Neighbouring neighbouring,
                                                     const PldOptions& options = {});
  // Any epsilon-DP mechanism is dominated by randomized response (Kairouz, Oh & Viswanath 2015).
  static PrivacyLossDistribution from_pure(double epsilon, const PldOptions& options = {});
  // Any (epsilon, delta)-DP mechanism is dominated by KOV15's four-point pair.
  static PrivacyLossDistribution from_approximate(double epsilon, double delta,
                                                  const PldOptions& options = {});
  // mu-GDP is the pair (N(mu, 1), N(0, 1)) exactly.
  static PrivacyLossDistribution from_gdp(double mu, const PldOptions& options = {});
  // The PLD of a ledger loss (pure, approximate, gdp, subsampled_gaussian); zcdp is refused.
  static PrivacyLossDistribution from_loss(const PrivacyLoss& loss, const PldOptions& options = {});

  PrivacyLossDistribution compose(const PrivacyLossDistribution& other) const;
  PrivacyLossDistribution self_compose(std::uint64_t times) const;

  // The larger over both directions: an upper bound on delta at epsilon.
  double delta_for_epsilon(double epsilon) const;
  // An upper bound on the epsilon at delta in (0, 1).
  double epsilon_for_delta(double delta) const;

  const PldPmf& remove() const { return remove_; }
  const PldPmf& add() const { return add_; }
  const PldOptions& options() const { return options_; }

 private:
  PrivacyLossDistribution(PldPmf remove, PldPmf add, bool symmetric, PldOptions options);
  PrivacyLossDistribution composed(const PrivacyLossDistribution& other, double tail) const;
  PldPmf remove_, add_;
  bool symmetric_ = true;  // add_ == remove_ (only remove_ is composed then)
  PldOptions options_;
};

}  // namespace dpstats
