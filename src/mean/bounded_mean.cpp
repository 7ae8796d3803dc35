#include "dpstats/mean/bounded_mean.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/mean/clipped_sum.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/privacy/budget.hpp"

namespace dpstats {

Release<Vector> bounded_mean(const ConstMatrixRef& X, const BoundedMeanOptions& o, Rng& rng) {
  check_epsilon(o.epsilon);
  check_delta(o.delta);
  check_finite(o.lower, "lower bound");
  check_finite(o.upper, "upper bound");
  require(o.lower < o.upper,
          fmt::format("bounds must satisfy lower < upper, got lower = {}, upper = {}", o.lower,
                      o.upper));
  // quantised_clipped_sum validates X (shape, NaN/Inf) in its own pass, before any noise.

  const auto n = static_cast<std::int64_t>(X.rows());
  const auto d = static_cast<std::size_t>(X.cols());
  const QuantisedSum qs =
      quantised_clipped_sum(X, Vector::Constant(X.cols(), o.lower), o.upper - o.lower, o.threads);

  Release<Vector> r;
  r.seeded = rng.seeded();
  r.noise = o.noise;
  Budget budget(o.delta > 0 ? PrivacyLoss::approximate(o.epsilon, o.delta)
                            : PrivacyLoss::pure(o.epsilon),
                Accountant::basic);
  // Sensitivities in units of the quantised sum: one replaced row moves each coordinate by <= Q.
  Vector noisy;
  const double per_unit = qs.width / (static_cast<double>(n) * qs.quantum);  // of the mean
  if (o.delta == 0) {
    LaplaceMechanism lap(static_cast<double>(d) * qs.quantum, o.epsilon, d, o.noise);
    budget.spend(in_output_units(lap.ledger_entry("clipped sum"), per_unit));
    noisy = lap.apply(qs.sums, rng);
    r.diagnostics["noise_scale"] = lap.scale() * qs.width / (static_cast<double>(n) * qs.quantum);
  } else {
    auto gauss = GaussianMechanism::from_epsilon_delta(std::sqrt(static_cast<double>(d)) * qs.quantum,
                                                       o.epsilon, o.delta, d, o.noise);
    budget.spend(in_output_units(gauss.ledger_entry("clipped sum"), per_unit));
    noisy = gauss.apply(qs.sums, rng);
    r.diagnostics["noise_scale"] = gauss.sigma() * qs.width / (static_cast<double>(n) * qs.quantum);
  }
  r.estimate = qs.to_mean(noisy, n);

  const PrivacyLoss spent = budget.spent();
  r.privacy.epsilon = spent.epsilon;
  r.privacy.delta = spent.delta;
  r.privacy.certified = o.noise == NoiseMode::secure;
  r.ledger = budget.ledger();
  r.diagnostics["mechanism"] = o.delta == 0 ? "laplace" : "gaussian";
  r.diagnostics["bounds"] = {o.lower, o.upper};
  r.diagnostics["sum_quantum"] = qs.quantum;
  return r;
}

}  // namespace dpstats
