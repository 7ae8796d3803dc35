// Rényi-DP accountant for the Poisson-subsampled Gaussian mechanism (DP-SGD's accountant), the
// usual epsilon-to-noise calibration, and the RDP -> (epsilon, delta) conversions.
//
// Neighbouring relation: add/remove one record (Poisson subsampling with rate q; the noise
// multiplier z is the noise standard deviation divided by the l2 sensitivity of one record).
//
//  * subsampled_gaussian_rdp: the bound of Mironov, Talwar & Zhang 2019 ("Rényi Differential
//    Privacy of the Sampled Gaussian Mechanism"), as in TF-Privacy and Opacus: for integer orders
//    the exact binomial expansion
//      A_a = sum_k C(a,k) (1-q)^(a-k) q^k exp((k^2 - k) / (2 z^2)),   RDP(a) = log(A_a) / (a - 1),
//    for fractional orders MTZ19's two-sided erfc series (§3.3). q = 1 gives a / (2 z^2).
//  * rdp_to_epsilon: the improved conversion (Balle et al. 2020 Thm 21; Canonne, Kamath & Steinke
//    2020 Prop. 12), eps = rdp + log((a-1)/a) - (log delta + log a) / (a - 1), minimised over the
//    orders; rdp_to_epsilon_classic: Mironov 2017's eps = rdp + log(1/delta) / (a - 1).
//  * calibrate_noise_multiplier: the smallest z (binary search, returned rounded up) whose
//    composed RDP gives epsilon <= target at delta.
//
// Lattice (secure) Gaussian: for a shift u on the integer lattice, E_{N_Z(0,s^2)}[(p_u/p_0)^k] =
// exp(k(k-1)|u|^2/(2 s^2)) exactly for integer k (the shifted normaliser is the same), so the
// integer-order binomial expansion above holds for the discrete Gaussian with z = s/K, K the
// lattice l2 sensitivity (mechanisms/gaussian.hpp). The training loops therefore account with
// integer orders only (kIntegerOrders); see docs/errata.md (classify section) for what this
// argument covers.
#pragma once
#include <cstddef>
#include <vector>

namespace dpstats {

// Opacus' default orders: 1.1, 1.2, ..., 10.9 and 12, 13, ..., 63.
std::vector<double> default_rdp_orders();
// Integer orders 2, 3, ..., 256 (the orders the training loops account with; see above).
std::vector<double> integer_rdp_orders();
// The orders of the rdp accountant (Budget, calculator): 1.01, ..., 1.09, 1.1, 1.2, ..., 10.9,
// 11, 12, ..., 256, 512, 1024, a superset of dp_accounting's and Opacus' default orders, so the
// epsilon is never larger than theirs for the same curve.
std::vector<double> accounting_rdp_orders();

struct PrivacyLoss;
// The RDP of one loss at `order` (docs/proofs/accounting.md §6): pure min(eps, a eps^2/2);
// approximate the same (its delta is counted apart: delta-approximate RDP); zcdp a rho (delta
// apart); gdp a mu^2/2; subsampled_gaussian (Poisson, add-remove) MTZ19. Refuses other samplings.
double loss_rdp(const PrivacyLoss& loss, double order);

// RDP of order `order` (> 1) of one step of the Poisson-subsampled Gaussian, q in [0, 1], z > 0.
double subsampled_gaussian_rdp(double q, double noise_multiplier, double order);

// (epsilon, best order) from an RDP curve rdp[i] at orders[i], delta in (0, 1).
struct RdpEpsilon {
  double epsilon = 0;
  double order = 0;
};
RdpEpsilon rdp_to_epsilon(const std::vector<double>& orders, const std::vector<double>& rdp,
                          double delta);
RdpEpsilon rdp_to_epsilon_classic(const std::vector<double>& orders, const std::vector<double>& rdp,
                                  double delta);

// Accumulates the RDP curve of a sequence of (subsampled) Gaussian releases ("what happened" is
// the caller's ledger; this is "how we count it").
class RdpAccountant {
 public:
  explicit RdpAccountant(std::vector<double> orders = integer_rdp_orders());
  // `steps` releases of the Poisson-subsampled Gaussian with rate q and multiplier z.
  void compose_subsampled_gaussian(double q, double noise_multiplier, std::size_t steps);
  // `count` releases of the (non-subsampled) Gaussian with multiplier z: RDP a / (2 z^2) each.
  void compose_gaussian(double noise_multiplier, std::size_t count);
  RdpEpsilon epsilon(double delta) const;          // improved conversion
  RdpEpsilon epsilon_classic(double delta) const;  // classic conversion
  const std::vector<double>& orders() const { return orders_; }
  const std::vector<double>& rdp() const { return rdp_; }

 private:
  std::vector<double> orders_, rdp_;
};

// The smallest noise multiplier z (to a relative 1e-6, rounded up) such that `steps` releases at
// rate q, composed with `extra` (RDP already spent elsewhere, on the same orders; may be empty),
// give epsilon <= target at delta (improved conversion). Throws InvalidArgument if no z <= 1e4
// reaches the target.
double calibrate_noise_multiplier(double q, std::size_t steps, double epsilon, double delta,
                                  const RdpAccountant& extra);
double calibrate_noise_multiplier(double q, std::size_t steps, double epsilon, double delta);

}  // namespace dpstats
