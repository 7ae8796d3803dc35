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
  // subsampled_gaussian: the noise is the lattice (discrete) Gaussian N_Z(0, s^2) of the secure
  // GaussianMechanism, z = s/K for the lattice l2 sensitivity K. Only integer-order RDP is proven
  // for it (rdp.hpp, docs/proofs/accounting.md §8): the rdp accountant then uses the integer
  // orders only, and the pld accountant (a continuous-Gaussian analysis) refuses the entry.
  bool discrete = false;

  static PrivacyLoss pure(double epsilon);
  static PrivacyLoss approximate(double epsilon, double delta);
  static PrivacyLoss zcdp(double rho, double delta = 0);
  static PrivacyLoss gdp(double mu);
  static PrivacyLoss subsampled_gaussian(double sampling_rate, double noise_multiplier,
                                         Sampling sampling = Sampling::poisson,
                                         Neighbouring neighbouring = Neighbouring::add_remove);
  // The same step with the lattice (discrete) Gaussian (secure noise mode): Poisson, add-remove.
  static PrivacyLoss subsampled_discrete_gaussian(double sampling_rate, double noise_multiplier);

  // "epsilon=1", "(epsilon=1, delta=1e-06)", "rho=0.5", "mu=1.2",
  // "subsampled-gaussian(q=0.01, sigma=1.1, poisson, add-remove)" (", discrete" appended for the
  // lattice Gaussian).
  std::string describe() const;
};

const char* to_string(LossKind kind);
const char* to_string(Neighbouring n);
const char* to_string(PrivacyUnit u);
const char* to_string(Sampling s);

}  // namespace dpstats
