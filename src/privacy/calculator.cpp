#include "dpstats/privacy/calculator.hpp"

#include <fmt/format.h>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/mechanisms/noise_release.hpp"
#include "dpstats/privacy/calibration.hpp"
#include "dpstats/privacy/composition.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats {

nlohmann::json account_calibrate(NoiseMechanism mechanism, double sensitivity, double epsilon,
                                 double delta) {
  check_positive(sensitivity, "sensitivity");
  check_epsilon(epsilon);
  check_noise_parameters(sensitivity, epsilon);  // the ranges `dpstats noise` takes (issue #21)
  nlohmann::json out = {{"mechanism", name_of(mechanism)}, {"sensitivity", sensitivity},
                        {"epsilon", epsilon}};
  if (mechanism == NoiseMechanism::laplace) {
    require(delta == 0, fmt::format("laplace is pure DP: delta must be 0, got {}", delta));
    const LaplaceMechanism secure(sensitivity, epsilon);
    out["delta"] = 0.0;
    out["scale"] = laplace_scale(sensitivity, epsilon);
    out["secure_scale"] = secure.noise_scale();
    out["granularity"] = secure.granularity();
  } else {
    check_delta_positive(delta);
    const auto secure = GaussianMechanism::from_epsilon_delta(sensitivity, epsilon, delta);
    out["delta"] = delta;
    out["sigma"] = analytic_gaussian_sigma(sensitivity, epsilon, delta);
    out["secure_sigma"] = secure.sigma();
    out["granularity"] = secure.granularity();
    out["rho"] = secure.rho();
    if (epsilon < 1) out["classic_sigma"] = classic_gaussian_sigma(sensitivity, epsilon, delta);
  }
  return out;
}

nlohmann::json account_convert(std::optional<double> rho, std::optional<double> mu, double delta) {
  require(rho.has_value() != mu.has_value(), "give exactly one of rho and mu");
  check_delta_positive(delta);
  if (rho) {
    return {{"from", "zcdp"}, {"rho", *rho}, {"epsilon", zcdp_to_epsilon(*rho, delta)},
            {"delta", delta}};
  }
  return {{"from", "gdp"}, {"mu", *mu}, {"epsilon", gdp_to_epsilon(*mu, delta)}, {"delta", delta}};
}

nlohmann::json account_compose(double epsilon, double delta, long times, double delta_slack) {
  check_epsilon(epsilon);
  check_delta(delta);
  require(times >= 1, fmt::format("times must be >= 1, got {}", times));
  check_delta_positive(delta_slack, "delta_slack");
  auto pair = [](const EpsilonDelta& e) {
    return nlohmann::json{{"epsilon", e.epsilon}, {"delta", e.delta}};
  };
  const std::vector<EpsilonDelta> copies(static_cast<std::size_t>(times), {epsilon, delta});
  const EpsilonDelta basic = basic_composition(copies);
  const EpsilonDelta advanced = advanced_composition(epsilon, delta, times, delta_slack);
  const EpsilonDelta optimal = optimal_composition(epsilon, delta, times, delta_slack);
  const EpsilonDelta* best = &basic;
  const char* rule = "basic";
  if (advanced.epsilon < best->epsilon) best = &advanced, rule = "advanced";
  if (optimal.epsilon < best->epsilon) best = &optimal, rule = "optimal";
  return {{"epsilon", best->epsilon}, {"delta", best->delta}, {"rule", rule},
          {"times", times},           {"basic", pair(basic)}, {"advanced", pair(advanced)},
          {"optimal", pair(optimal)}};
}

}  // namespace dpstats
