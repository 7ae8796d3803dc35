// The privacy calculator behind `dpstats account` and `dpstats.account`: one implementation, so
// the tool and the Python module answer identically. Results are JSON objects.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace dpstats {

// mechanism "laplace" -> {"scale", "secure_scale", "granularity"};
// mechanism "gaussian" -> {"sigma" (analytic Gaussian, Balle-Wang), "secure_sigma" and
// "granularity" (what the secure lattice mechanism uses for a scalar), "classic_sigma" (only when
// epsilon < 1), "rho" (zCDP of the secure mechanism)}.
nlohmann::json account_calibrate(const std::string& mechanism, double sensitivity, double epsilon,
                                 double delta);

// From rho-zCDP or mu-GDP (exactly one given) at delta -> {"epsilon", "delta"}.
nlohmann::json account_convert(std::optional<double> rho, std::optional<double> mu, double delta);

// k-fold composition of (epsilon, delta) with slack delta_slack -> {"epsilon", "delta", "rule",
// "basic": {...}, "advanced": {...}, "optimal": {...}}; "epsilon"/"delta" are the best rule's.
nlohmann::json account_compose(double epsilon, double delta, long times, double delta_slack);

}  // namespace dpstats
