// RDP of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019) and conversions; see
// include/dpstats/privacy/rdp.hpp.
#include "dpstats/privacy/rdp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "dpstats/error.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "log_space.hpp"

namespace dpstats {
namespace {

using privacy_detail::kInf;
constexpr auto log_add = privacy_detail::add;
constexpr auto log_sub = privacy_detail::subtract;

// log erfc(x) = log 2 + log Phi(-x sqrt 2), accurate in both tails.
double log_erfc(double x) { return std::log(2.0) + log_normal_cdf(-x * std::sqrt(2.0)); }

double log_binomial(double a, double k) {
  return std::lgamma(a + 1) - std::lgamma(k + 1) - std::lgamma(a - k + 1);
}

// log A_a for integer a (MTZ19 §3.3 eq. for integer alpha).
double log_a_int(double q, double z, int a) {
  double log_a = -kInf;
  const double lq = std::log(q), l1q = std::log1p(-q);
  for (int k = 0; k <= a; ++k) {
    const double term = log_binomial(a, k) + k * lq + (a - k) * l1q +
                        (static_cast<double>(k) * k - k) / (2 * z * z);
    log_a = log_add(log_a, term);
  }
  return log_a;
}

// log A_a for fractional a (MTZ19 §3.3, the two-sided series; as in TF-Privacy).
double log_a_frac(double q, double z, double a) {
  double log_a0 = -kInf, log_a1 = -kInf;
  const double z0 = z * z * std::log(1 / q - 1) + 0.5;
  const double lq = std::log(q), l1q = std::log1p(-q);
  for (int i = 0; i < 100000; ++i) {
    // Generalised binomial coefficient C(a, i), sign tracked separately.
    double log_coef = 0;
    bool positive = true;
    for (int j = 0; j < i; ++j) {
      const double f = (a - j) / (j + 1);
      if (f < 0) positive = !positive;
      log_coef += std::log(std::fabs(f));
    }
    const double j = a - i;
    const double log_t0 = log_coef + i * lq + j * l1q;
    const double log_t1 = log_coef + j * lq + i * l1q;
    const double log_e0 = std::log(0.5) + log_erfc((i - z0) / (std::sqrt(2.0) * z));
    const double log_e1 = std::log(0.5) + log_erfc((z0 - j) / (std::sqrt(2.0) * z));
    const double log_s0 = log_t0 + (static_cast<double>(i) * i - i) / (2 * z * z) + log_e0;
    const double log_s1 = log_t1 + (j * j - j) / (2 * z * z) + log_e1;
    if (positive) {
      log_a0 = log_add(log_a0, log_s0);
      log_a1 = log_add(log_a1, log_s1);
    } else {
      log_a0 = log_sub(log_a0, log_s0);
      log_a1 = log_sub(log_a1, log_s1);
    }
    if (std::max(log_s0, log_s1) < -30) break;
  }
  return log_add(log_a0, log_a1);
}

void check_curve(const std::vector<double>& orders, const std::vector<double>& rdp, double delta) {
  require(!orders.empty() && orders.size() == rdp.size(),
          fmt::format("RDP curve: orders and rdp must have the same nonzero length, got {} and {}",
                      orders.size(), rdp.size()));
  check_delta_positive(delta, "delta");
  for (double a : orders) require(a > 1, "RDP orders must be > 1, got {}", a);
}

// Relative margin covering the floating-point error of the sums above.
constexpr double kMargin = 1e-10;

}  // namespace

std::vector<double> default_rdp_orders() {
  std::vector<double> o;
  for (int x = 1; x < 100; ++x) o.push_back(1 + x / 10.0);
  for (int a = 12; a < 64; ++a) o.push_back(a);
  return o;
}

std::vector<double> integer_rdp_orders() {
  std::vector<double> o;
  for (int a = 2; a <= 256; ++a) o.push_back(a);
  return o;
}

std::vector<double> accounting_rdp_orders() {
  std::vector<double> o;
  for (int x = 1; x < 10; ++x) o.push_back(1 + x / 100.0);
  for (int x = 1; x < 100; ++x) o.push_back(1 + x / 10.0);
  for (int a = 11; a <= 256; ++a) o.push_back(a);
  o.push_back(512);
  o.push_back(1024);
  return o;
}

double loss_rdp(const PrivacyLoss& l, double a) {
  switch (l.kind) {
    case LossKind::pure:
    case LossKind::approximate:  // (BS16 Prop. 3.3 and §8; proofs §6)
      return std::min(l.epsilon, a * l.epsilon * l.epsilon / 2) * (1 + kMargin);
    case LossKind::zcdp: return a * l.rho * (1 + kMargin);
    case LossKind::gdp: return a * l.mu * l.mu / 2 * (1 + kMargin);
    case LossKind::subsampled_gaussian:
      require(l.sampling == Sampling::poisson && l.neighbouring == Neighbouring::add_remove,
              fmt::format("loss: the rdp accountant counts Poisson subsampling under add-remove, "
                          "got {} under {}",
                          to_string(l.sampling), to_string(l.neighbouring)));
      // The lattice Gaussian: only the integer-order expansion is proven (rdp.hpp header;
      // docs/proofs/accounting.md §8); a fractional order contributes no bound.
      if (l.discrete && a != std::floor(a)) return kInf;
      return subsampled_gaussian_rdp(l.sampling_rate, l.noise_multiplier, a);
  }
  return 0;
}

double subsampled_gaussian_rdp(double q, double noise_multiplier, double order) {
  require(q >= 0 && q <= 1, fmt::format("sampling rate q must be in [0, 1], got {}", q));
  check_positive(noise_multiplier, "noise_multiplier");
  require(order > 1 && std::isfinite(order), fmt::format("RDP order must be > 1, got {}", order));
  const double z = noise_multiplier;
  if (q == 0) return 0;
  if (q == 1) return order / (2 * z * z);
  const double log_a = (order == std::floor(order) && order <= 1e6)
                           ? log_a_int(q, z, static_cast<int>(order))
                           : log_a_frac(q, z, order);
  return std::max(0.0, log_a / (order - 1)) * (1 + kMargin);
}

RdpEpsilon rdp_to_epsilon(const std::vector<double>& orders, const std::vector<double>& rdp,
                          double delta) {
  check_curve(orders, rdp, delta);
  RdpEpsilon best{kInf, orders.front()};
  for (std::size_t i = 0; i < orders.size(); ++i) {
    const double a = orders[i];
    const double eps =
        rdp[i] + std::log1p(-1 / a) - (std::log(delta) + std::log(a)) / (a - 1);
    if (eps < best.epsilon) best = {eps, a};
  }
  best.epsilon = std::max(0.0, best.epsilon);
  return best;
}

RdpEpsilon rdp_to_epsilon_classic(const std::vector<double>& orders, const std::vector<double>& rdp,
                                  double delta) {
  check_curve(orders, rdp, delta);
  RdpEpsilon best{kInf, orders.front()};
  for (std::size_t i = 0; i < orders.size(); ++i) {
    const double eps = rdp[i] + std::log(1 / delta) / (orders[i] - 1);
    if (eps < best.epsilon) best = {eps, orders[i]};
  }
  return best;
}

RdpAccountant::RdpAccountant(std::vector<double> orders)
    : orders_(std::move(orders)), rdp_(orders_.size(), 0.0) {
  require(!orders_.empty(), "RdpAccountant needs at least one order");
  for (double a : orders_) require(a > 1, "RDP orders must be > 1, got {}", a);
}

void RdpAccountant::compose_subsampled_gaussian(double q, double noise_multiplier,
                                                std::size_t steps) {
  for (std::size_t i = 0; i < orders_.size(); ++i)
    rdp_[i] += static_cast<double>(steps) * subsampled_gaussian_rdp(q, noise_multiplier, orders_[i]);
}

void RdpAccountant::compose_gaussian(double noise_multiplier, std::size_t count) {
  check_positive(noise_multiplier, "noise_multiplier");
  for (std::size_t i = 0; i < orders_.size(); ++i)
    rdp_[i] += static_cast<double>(count) * orders_[i] / (2 * noise_multiplier * noise_multiplier) *
               (1 + kMargin);
}

RdpEpsilon RdpAccountant::epsilon(double delta) const { return rdp_to_epsilon(orders_, rdp_, delta); }
RdpEpsilon RdpAccountant::epsilon_classic(double delta) const {
  return rdp_to_epsilon_classic(orders_, rdp_, delta);
}

double calibrate_noise_multiplier(double q, std::size_t steps, double epsilon, double delta,
                                  const RdpAccountant& extra) {
  check_epsilon(epsilon, "epsilon");
  check_delta_positive(delta, "delta");
  require(q > 0 && q <= 1, fmt::format("sampling rate q must be in (0, 1], got {}", q));
  require(steps >= 1, "steps must be >= 1");
  auto eps_at = [&](double z) {
    RdpAccountant acc(extra.orders());
    acc.compose_subsampled_gaussian(q, z, steps);
    std::vector<double> total = acc.rdp();
    for (std::size_t i = 0; i < total.size(); ++i) total[i] += extra.rdp()[i];
    return rdp_to_epsilon(extra.orders(), total, delta).epsilon;
  };
  double hi = 1;
  while (eps_at(hi) > epsilon) {
    hi *= 2;
    require(hi <= 1e4, fmt::format("no noise multiplier <= 1e4 reaches epsilon = {} at delta = {} "
                                   "(q = {}, {} steps)",
                                   epsilon, delta, q, steps));
  }
  double lo = hi / 2;
  if (eps_at(lo) <= epsilon) {
    while (lo > 1e-3 && eps_at(lo) <= epsilon) lo /= 2;
    hi = lo * 2;
  }
  // eps_at(lo) > epsilon >= eps_at(hi)
  while (hi - lo > 1e-6 * hi) {
    const double mid = 0.5 * (lo + hi);
    (eps_at(mid) <= epsilon ? hi : lo) = mid;
  }
  return hi;
}

double calibrate_noise_multiplier(double q, std::size_t steps, double epsilon, double delta) {
  return calibrate_noise_multiplier(q, steps, epsilon, delta, RdpAccountant());
}

}  // namespace dpstats
