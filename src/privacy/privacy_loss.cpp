#include "dpstats/privacy/privacy_loss.hpp"

#include "dpstats/privacy/ledger.hpp"

#include <fmt/format.h>

#include "dpstats/error.hpp"

namespace dpstats {

const char* to_string(NoiseKind k) {
  switch (k) {
    case NoiseKind::none: return "none";
    case NoiseKind::gaussian: return "gaussian";
    case NoiseKind::laplace: return "laplace";
    case NoiseKind::discrete_laplace: return "discrete_laplace";
  }
  return "?";
}

PrivacyLoss PrivacyLoss::pure(double epsilon) {
  require(std::isfinite(epsilon) && epsilon >= 0,
          fmt::format("epsilon must be a finite number >= 0, got {}", epsilon));
  return {LossKind::pure, epsilon, 0, 0, 0};
}

PrivacyLoss PrivacyLoss::approximate(double epsilon, double delta) {
  require(std::isfinite(epsilon) && epsilon >= 0,
          fmt::format("epsilon must be a finite number >= 0, got {}", epsilon));
  require(std::isfinite(delta) && delta >= 0 && delta <= 1,
          fmt::format("delta must be in [0, 1], got {}", delta));
  return {LossKind::approximate, epsilon, delta, 0, 0};
}

PrivacyLoss PrivacyLoss::zcdp(double rho, double delta) {
  require(std::isfinite(rho) && rho >= 0, fmt::format("rho must be a finite number >= 0, got {}", rho));
  require(std::isfinite(delta) && delta >= 0 && delta <= 1,
          fmt::format("delta must be in [0, 1], got {}", delta));
  return {LossKind::zcdp, 0, delta, rho, 0};
}

PrivacyLoss PrivacyLoss::gdp(double mu) {
  require(std::isfinite(mu) && mu >= 0, fmt::format("mu must be a finite number >= 0, got {}", mu));
  return {LossKind::gdp, 0, 0, 0, mu};
}

PrivacyLoss PrivacyLoss::subsampled_gaussian(double sampling_rate, double noise_multiplier,
                                             Sampling sampling, Neighbouring neighbouring) {
  require(std::isfinite(sampling_rate) && sampling_rate >= 0 && sampling_rate <= 1,
          fmt::format("sampling_rate must be in [0, 1], got {}", sampling_rate));
  require(std::isfinite(noise_multiplier) && noise_multiplier > 0,
          fmt::format("noise_multiplier must be a finite number > 0, got {}", noise_multiplier));
  PrivacyLoss l;
  l.kind = LossKind::subsampled_gaussian;
  l.sampling_rate = sampling_rate;
  l.noise_multiplier = noise_multiplier;
  l.sampling = sampling;
  l.neighbouring = neighbouring;
  return l;
}

PrivacyLoss PrivacyLoss::subsampled_discrete_gaussian(double sampling_rate,
                                                      double noise_multiplier) {
  PrivacyLoss l = subsampled_gaussian(sampling_rate, noise_multiplier);
  l.discrete = true;
  return l;
}

PrivacyLoss PrivacyLoss::discrete_gdp(double mu) {
  PrivacyLoss l = gdp(mu);
  l.discrete = true;
  return l;
}

std::string PrivacyLoss::describe() const {
  switch (kind) {
    case LossKind::pure: return fmt::format("epsilon={}", epsilon);
    case LossKind::approximate: return fmt::format("(epsilon={}, delta={})", epsilon, delta);
    case LossKind::zcdp:
      return delta > 0 ? fmt::format("(rho={}, delta={})", rho, delta) : fmt::format("rho={}", rho);
    case LossKind::gdp: return fmt::format("mu={}{}", mu, discrete ? ", discrete" : "");
    case LossKind::subsampled_gaussian:
      return fmt::format("subsampled-gaussian(q={}, sigma={}, {}, {}{})", sampling_rate,
                         noise_multiplier, to_string(sampling), to_string(neighbouring),
                         discrete ? ", discrete" : "");
  }
  return "?";
}

const char* to_string(LossKind kind) {
  switch (kind) {
    case LossKind::pure: return "pure";
    case LossKind::approximate: return "approximate";
    case LossKind::zcdp: return "zcdp";
    case LossKind::gdp: return "gdp";
    case LossKind::subsampled_gaussian: return "subsampled_gaussian";
  }
  return "?";
}

const char* to_string(Neighbouring n) {
  return n == Neighbouring::replace_one ? "replace-one" : "add-remove";
}

const char* to_string(PrivacyUnit u) { return u == PrivacyUnit::record ? "record" : "user"; }

const char* to_string(Sampling s) {
  return s == Sampling::poisson ? "poisson" : "without-replacement";
}

}  // namespace dpstats
