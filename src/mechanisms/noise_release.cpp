#include "dpstats/mechanisms/noise_release.hpp"

#include <fmt/format.h>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/seam.hpp"

namespace dpstats {

namespace {

void check_values(const Vector& values) {
  require(values.size() > 0, "values must not be empty");
  for (Eigen::Index i = 0; i < values.size(); ++i) {
    require(std::isfinite(values[i]), "values has a NaN or infinite entry at position {}", i + 1);
  }
}

// Charge, then noise, then seal: the guarantee is what the one ledger entry composes to.
template <class Mechanism>
Release<Vector> noisy_release(const Vector& values, const Mechanism& m, const PrivacyLoss& total,
                              Rng& rng, Budget* caller) {
  ReleaseBudget account(total, Accountant::basic, caller);
  account.charge(m.ledger_entry("values"));
  Vector noisy = m.apply(values, rng);
  return seal(std::move(noisy), account, {.noise = m.mode()}, rng,
              {{"granularity", m.granularity()}});
}

}  // namespace

Release<Vector> laplace_release(const Vector& values, double l1_sensitivity, double epsilon,
                                Rng& rng, NoiseMode noise, Budget* budget) {
  check_values(values);
  LaplaceMechanism m(l1_sensitivity, epsilon, static_cast<std::size_t>(values.size()), noise);
  Release<Vector> r = noisy_release(values, m, PrivacyLoss::pure(epsilon), rng, budget);
  r.diagnostics["scale"] = m.scale();
  return r;
}

Release<Vector> gaussian_release(const Vector& values, double l2_sensitivity, double epsilon,
                                 double delta, Rng& rng, NoiseMode noise, Budget* budget) {
  check_values(values);
  check_delta_positive(delta);
  auto m = GaussianMechanism::from_epsilon_delta(l2_sensitivity, epsilon, delta,
                                                 static_cast<std::size_t>(values.size()), noise);
  Release<Vector> r = noisy_release(values, m, PrivacyLoss::approximate(epsilon, delta), rng, budget);
  r.diagnostics["sigma"] = m.sigma();
  r.diagnostics["rho"] = m.rho();
  return r;
}

}  // namespace dpstats
