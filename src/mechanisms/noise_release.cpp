#include "dpstats/mechanisms/noise_release.hpp"

#include <fmt/format.h>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/seam.hpp"

namespace dpstats {

namespace {

void check_values(const Vector& values, double sensitivity, double epsilon) {
  require(values.size() > 0, "values must not be empty");
  for (Eigen::Index i = 0; i < values.size(); ++i) {
    require(std::isfinite(values[i]), "values has a NaN or infinite entry at position {}", i + 1);
  }
  check_noise_parameters(sensitivity, epsilon);
}

// Charge, then noise, then seal: the guarantee is what the one ledger entry composes to.
template <class Mechanism>
Release<Vector> noisy_release(const Vector& values, const Mechanism& m, const PrivacyLoss& total,
                              Rng& rng, Budget* caller) {
  ReleaseBudget account(total, Accountant::basic, caller);
  account.charge(m.ledger_entry("values"));
  Vector noisy = m.apply(values, rng);
  SealFacts facts(true);
  facts.noise = m.mode();
  return seal(std::move(noisy), account, facts, rng, {{"granularity", m.granularity()}});
}

}  // namespace

// The lattice mechanisms need their granularity sensitivity/(d·2^20) in [2^-1000, 2^900]; the
// range below keeps it there for any d up to 10^9, named as the user gave it (issue #21).
void check_noise_parameters(double sensitivity, double epsilon) {
  constexpr double kMinSensitivity = 1e-280;
  constexpr double kMaxSensitivity = 1e250;
  validate(PrivacyTarget{epsilon, 0});  // epsilon in the range every release takes
  require(std::isfinite(sensitivity) && sensitivity >= kMinSensitivity &&
              sensitivity <= kMaxSensitivity,
          fmt::format("sensitivity must be in [{}, {}], got {}", kMinSensitivity, kMaxSensitivity,
                      sensitivity));
}

Release<Vector> laplace_release(const Vector& values, double l1_sensitivity, double epsilon,
                                Rng& rng, NoiseMode noise, Budget* budget) {
  check_values(values, l1_sensitivity, epsilon);
  LaplaceMechanism m(l1_sensitivity, epsilon, static_cast<std::size_t>(values.size()), noise);
  Release<Vector> r = noisy_release(values, m, PrivacyLoss::pure(epsilon), rng, budget);
  r.diagnostics["scale"] = m.noise_scale();
  return r;
}

Release<Vector> gaussian_release(const Vector& values, double l2_sensitivity, double epsilon,
                                 double delta, Rng& rng, NoiseMode noise, Budget* budget) {
  check_values(values, l2_sensitivity, epsilon);
  check_delta_positive(delta);
  auto m = GaussianMechanism::from_epsilon_delta(l2_sensitivity, epsilon, delta,
                                                 static_cast<std::size_t>(values.size()), noise);
  Release<Vector> r = noisy_release(values, m, PrivacyLoss::approximate(epsilon, delta), rng, budget);
  r.diagnostics["sigma"] = m.sigma();
  r.diagnostics["rho"] = m.rho();
  return r;
}

}  // namespace dpstats
