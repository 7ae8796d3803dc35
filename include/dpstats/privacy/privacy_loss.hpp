// Privacy-loss values (design.md §3): pure epsilon, approximate (epsilon, delta), rho-zCDP
// (optionally delta-approximate, Bun & Steinke 2016 §8), mu-GDP (Dong, Roth & Su 2019) and one
// step of the subsampled Gaussian (DP-SGD's event; counted by the rdp and pld accountants,
// docs/proofs/accounting.md).
#pragma once
#include <string>

namespace dpstats {

enum class LossKind { pure, approximate, zcdp, gdp, subsampled_gaussian };

// Neighbouring relation and privacy unit are explicit wherever they matter.
enum class Neighbouring { replace_one, add_remove };
enum class PrivacyUnit { record, user };
// How a step's batch is drawn: every record independently with probability q (Poisson), or a
// uniformly random subset of fixed size q * n (without replacement).
enum class Sampling { poisson, without_replacement };

// The width tau (in lattice units) of the data-free kernel that couples the lattice Gaussian to
// the continuous one (docs/proofs/accounting.md §9): eta = 2 sum_{m>=1} exp(-2 pi^2 tau^2 m^2)
// < 2e-137 at tau = 4.
inline constexpr double kLatticeCouplingWidth = 4;

struct PrivacyLoss {
  LossKind kind = LossKind::pure;
  double epsilon = 0;  // pure, approximate
  double delta = 0;    // approximate; for zcdp: the delta of delta-approximate zCDP
  double rho = 0;      // zcdp
  double mu = 0;       // gdp
  // subsampled_gaussian: one step that samples the batch at rate q and adds Gaussian noise of
  // standard deviation noise_multiplier * C to a sum of per-record contributions of l2 norm <= C.
  double sampling_rate = 0;     // q in [0, 1]
  double noise_multiplier = 0;  // sigma / C > 0
  Sampling sampling = Sampling::poisson;
  Neighbouring neighbouring = Neighbouring::add_remove;
  // subsampled_gaussian and gdp: the noise is the lattice (discrete) Gaussian N_Z(0, s^2) of the
  // secure GaussianMechanism, and the stated noise_multiplier z (gdp: 1/mu) satisfies
  // (K z)^2 <= s^2 - kLatticeCouplingWidth^2 for the lattice l2 sensitivity K. Such noise is,
  // up to a pointwise likelihood factor 1 +- 2e-137 per coordinate, the continuous Gaussian of
  // multiplier z followed by a data-free kernel (docs/proofs/accounting.md §9): the pld
  // accountant analyses it as that continuous Gaussian plus a coupling slack; the rdp accountant
  // keeps the integer orders for the subsampled step (§8).
  bool discrete = false;

  static PrivacyLoss pure(double epsilon);
  static PrivacyLoss approximate(double epsilon, double delta);
  static PrivacyLoss zcdp(double rho, double delta = 0);
  static PrivacyLoss gdp(double mu);
  // mu-GDP of a lattice Gaussian coupled as above (mu = 1/z).
  static PrivacyLoss discrete_gdp(double mu);
  static PrivacyLoss subsampled_gaussian(double sampling_rate, double noise_multiplier,
                                         Sampling sampling = Sampling::poisson,
                                         Neighbouring neighbouring = Neighbouring::add_remove);
  // The same step with the lattice (discrete) Gaussian (secure noise mode): Poisson, add-remove.
  static PrivacyLoss subsampled_discrete_gaussian(double sampling_rate, double noise_multiplier);

  // "epsilon=1", "(epsilon=1, delta=1e-06)", "rho=0.5", "mu=1.2" (", discrete" appended),
  // "subsampled-gaussian(q=0.01, sigma=1.1, poisson, add-remove)" (", discrete" appended for the
  // lattice Gaussian).
  std::string describe() const;
};

const char* to_string(LossKind kind);
const char* to_string(Neighbouring n);
const char* to_string(PrivacyUnit u);
const char* to_string(Sampling s);

}  // namespace dpstats
