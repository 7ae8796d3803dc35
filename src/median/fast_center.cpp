#include "dpstats/median/fast_center.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"

namespace dpstats {

std::int64_t fast_center_partners(std::int64_t n, double delta) {
  check_delta_positive(delta);
  require(n >= 1, "n must be >= 1");
  return static_cast<std::int64_t>(
      std::ceil(kFastCenterSampleConstant * std::log(18.0 * static_cast<double>(n) / delta)));
}

LedgerEntry fast_center_entry(std::int64_t n, double r_hat, double epsilon, double delta) {
  check_positive(r_hat, "r_hat");
  check_epsilon(epsilon);
  check_delta_positive(delta);
  LedgerEntry e;
  e.mechanism = "fast_center";
  e.purpose = "fast_center (KLTY Alg. 3)";
  e.sensitivity = 400 * r_hat / static_cast<double>(n);
  e.loss = PrivacyLoss::approximate(epsilon, delta);
  return e;
}

FastCenterResult fast_center(const ConstMatrixRef& X, double r_hat, double epsilon, double delta,
                             Rng& rng) {
  check_data(X);
  check_positive(r_hat, "r_hat");
  check_epsilon(epsilon);
  check_delta_positive(delta);
  const auto n = static_cast<std::int64_t>(X.rows());
  const Eigen::Index d = X.cols();
  require(n >= 20, fmt::format("FastCenter needs n >= 20 (KLTY Lemma 9), got n = {}", n));
  FastCenterResult res;
  res.k = fast_center_partners(n, delta);
  res.ledger = fast_center_entry(n, r_hat, epsilon, delta);

  // Lines 2–6: weights from k sampled partners per row (fresh, with replacement).
  const double radius2 = 4 * r_hat * r_hat;  // ||x_i − x_j|| ≤ 2 r̂
  const auto k = static_cast<double>(res.k);
  std::vector<double> p(static_cast<std::size_t>(n));
  double Z = 0;
  {
    RandomBits bits(rng);
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t f = 0;
      const double* xi = X.data() + i * d;
      for (std::int64_t s = 0; s < res.k; ++s) {
        const auto j = static_cast<std::int64_t>(bits.uniform_below(static_cast<std::uint64_t>(n)));
        const double* xj = X.data() + j * d;
        double acc = 0;
        for (Eigen::Index c = 0; c < d; ++c) acc += (xi[c] - xj[c]) * (xi[c] - xj[c]);
        f += acc <= radius2;
      }
      const double pi = std::clamp((static_cast<double>(f) - 0.5 * k) / (0.25 * k), 0.0, 1.0);
      p[static_cast<std::size_t>(i)] = pi;
      Z += pi;
    }
  }
  // Lines 7–9: the gate, BoundedLaplace(24/ε, L) by rejection on the secure lattice Laplace.
  const double L = kFastCenterGateScale / epsilon * std::log(24 / delta);
  const LaplaceMechanism gate(12, epsilon / 2);  // Δ(Z) = 12, scale 24/ε
  double xi = 0;
  do {
    xi = gate.apply(0.0, rng);
  } while (std::abs(xi) > L);
  const auto nn = static_cast<double>(n);
  // Lines 11–12: noise scale as printed, as a secure Gaussian of at least that σ.
  res.sigma = kFastCenterNoiseConstant * r_hat * std::sqrt(std::log(12 / delta)) / (nn * epsilon);
  if (Z + xi - L <= kFastCenterGateFraction * nn) {
    res.failed = true;
    res.centre = Vector::Zero(d);
    return res;
  }
  Vector mean = Vector::Zero(d);
  for (std::int64_t i = 0; i < n; ++i)
    if (p[static_cast<std::size_t>(i)] > 0) mean += p[static_cast<std::size_t>(i)] * X.row(i).transpose();
  mean /= Z;
  const auto g = GaussianMechanism::from_sigma(400 * r_hat / nn, res.sigma, static_cast<std::size_t>(d));
  res.sigma = g.sigma();
  res.centre = g.apply(mean, rng);
  return res;
}

}  // namespace dpstats
