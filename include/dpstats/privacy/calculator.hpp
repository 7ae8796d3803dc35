// The privacy calculator behind `dpstats account` and `dpstats.account`: one implementation, so
// the tool and the Python module answer identically. Results are JSON objects.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/mechanisms/noise_mechanism.hpp"
#include "dpstats/names.hpp"

namespace dpstats {

// Which accountant answers `account dp-sgd` and `account compose --loss`: the tighter of the
// two, or the one named.
enum class CalculatorAccountant { best, pld, rdp };

template <>
struct EnumNames<CalculatorAccountant> {
  static constexpr std::string_view parameter = "accountant";
  static constexpr std::array<std::pair<CalculatorAccountant, std::string_view>, 3> names = {{
      {CalculatorAccountant::best, "best"},
      {CalculatorAccountant::pld, "pld"},
      {CalculatorAccountant::rdp, "rdp"},
  }};
};

// laplace -> {"scale", "secure_scale", "granularity"};
// gaussian -> {"sigma" (analytic Gaussian, Balle-Wang), "secure_sigma" and
// "granularity" (what the secure lattice mechanism uses for a scalar), "classic_sigma" (only when
// epsilon < 1), "rho" (zCDP of the secure mechanism)}.
nlohmann::json account_calibrate(NoiseMechanism mechanism, double sensitivity, double epsilon,
                                 double delta);

// From rho-zCDP or mu-GDP (exactly one given) at delta -> {"epsilon", "delta"}.
nlohmann::json account_convert(std::optional<double> rho, std::optional<double> mu, double delta);

// k-fold composition of (epsilon, delta) with slack delta_slack -> {"epsilon", "delta", "rule",
// "basic": {...}, "advanced": {...}, "optimal": {...}}; "epsilon"/"delta" are the best rule's.
nlohmann::json account_compose(double epsilon, double delta, long times, double delta_slack);

// DP-SGD (Poisson-subsampled Gaussian, add/remove, `steps` steps at rate q): exactly one of
// noise_multiplier (-> epsilon at delta) and epsilon (-> the smallest noise multiplier, to a
// relative 1e-6, rounded up). `accountant`: best (the tighter of pld and rdp), pld or rdp.
// Result: {"epsilon", "delta", "noise_multiplier", "sampling_rate", "steps", "accountant",
// "upper_bound": true, "pld": {"epsilon"}, "rdp": {"epsilon", "order"}, ...}.
nlohmann::json account_dp_sgd(double sampling_rate, std::optional<double> noise_multiplier,
                              std::optional<double> epsilon, long long steps, double delta,
                              CalculatorAccountant accountant = CalculatorAccountant::best);

// Heterogeneous composition of a list of losses (syntax in docs/guide.md, "account compose"):
//   pure:EPS  approx:EPS,DELTA  zcdp:RHO  gdp:MU  gaussian:sigma=S[,sensitivity=D]
//   laplace:scale=B[,sensitivity=D]  subsampled-gaussian:q=Q,sigma=S[,steps=T]
// each optionally followed by ",times=K". Result: {"epsilon", "delta", "accountant",
// "upper_bound": true, "pld": {...} or null, "rdp": {...} or null, "losses": [...]}; the
// epsilon is the smaller of the accountants that can count every loss.
nlohmann::json account_compose_losses(const std::vector<std::string>& losses, double delta,
                                      CalculatorAccountant accountant = CalculatorAccountant::best);

}  // namespace dpstats
