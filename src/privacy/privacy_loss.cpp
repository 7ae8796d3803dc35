#include "dpstats/privacy/privacy_loss.hpp"

#include <fmt/format.h>

#include "dpstats/error.hpp"

namespace dpstats {

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

std::string PrivacyLoss::describe() const {
  switch (kind) {
    case LossKind::pure: return fmt::format("epsilon={}", epsilon);
    case LossKind::approximate: return fmt::format("(epsilon={}, delta={})", epsilon, delta);
    case LossKind::zcdp:
      return delta > 0 ? fmt::format("(rho={}, delta={})", rho, delta) : fmt::format("rho={}", rho);
    case LossKind::gdp: return fmt::format("mu={}", mu);
  }
  return "?";
}

const char* to_string(LossKind kind) {
  switch (kind) {
    case LossKind::pure: return "pure";
    case LossKind::approximate: return "approximate";
    case LossKind::zcdp: return "zcdp";
    case LossKind::gdp: return "gdp";
  }
  return "?";
}

const char* to_string(Neighbouring n) {
  return n == Neighbouring::replace_one ? "replace-one" : "add-remove";
}

const char* to_string(PrivacyUnit u) { return u == PrivacyUnit::record ? "record" : "user"; }

}  // namespace dpstats
