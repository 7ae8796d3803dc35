// The mechanisms `dpstats noise`, `dpstats.laplace` and `dpstats.gaussian` name: their names
// (EnumNames, parsed once), the command's declared options as one request, and the one dispatch
// the tool and the Python binding share, with the one rule on delta
// (mechanisms/noise_release.hpp checks the rest).
#pragma once
#include <array>
#include <concepts>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/noise_release.hpp"
#include "dpstats/names.hpp"
#include "dpstats/privacy/target.hpp"

namespace dpstats {

enum class NoiseMechanism { laplace, gaussian };

template <>
struct EnumNames<NoiseMechanism> {
  static constexpr std::string_view parameter = "mechanism";
  static constexpr std::array<std::pair<NoiseMechanism, std::string_view>, 2> names = {{
      {NoiseMechanism::laplace, "laplace"},
      {NoiseMechanism::gaussian, "gaussian"},
  }};
};

// `values` with `mechanism`'s noise for target `t` (secure noise). Laplace is pure DP: a delta
// other than 0 is an InvalidArgument; Gaussian takes delta in (0, 1) (gaussian_release's check).
inline Release<Vector> noise_release(NoiseMechanism mechanism, const Vector& values,
                                     double sensitivity, const PrivacyTarget& t, Rng& rng,
                                     Budget* budget = nullptr) {
  if (mechanism == NoiseMechanism::gaussian)
    return gaussian_release(values, sensitivity, t.epsilon, t.delta, rng, NoiseMode::secure, budget);
  require(t.delta == 0, "delta must be 0 for mechanism laplace (pure DP): omit it, got {}", t.delta);
  return laplace_release(values, sensitivity, t.epsilon, rng, NoiseMode::secure, budget);
}

// The noise command's declared options (src/options.cpp, command "noise") as a user gives them,
// listed once in visit_fields (dpstats/option_fields.hpp): the tool's flags
// (add_request_options) and the Python keywords (request_keywords) walk it. In Python the
// mechanism is the function (dpstats.laplace, dpstats.gaussian) and the sensitivity its
// positional argument.
struct NoiseRequest {
  std::optional<NoiseMechanism> mechanism;
  std::optional<double> sensitivity;
};

template <class R, class V>
  requires std::same_as<std::remove_cvref_t<R>, NoiseRequest>
void visit_fields(R&& r, V&& v) {
  v("mechanism", r.mechanism);
  v("sensitivity", r.sensitivity);
}

// The release `request` asks for; both options are required (InvalidArgument naming the absent one).
inline Release<Vector> noise_release(const NoiseRequest& request, const Vector& values,
                                     const PrivacyTarget& t, Rng& rng, Budget* budget = nullptr) {
  require(request.mechanism.has_value(), "mechanism is required: laplace or gaussian");
  require(request.sensitivity.has_value(),
          "sensitivity is required: the largest change of the values between neighbouring datasets");
  return noise_release(*request.mechanism, values, *request.sensitivity, t, rng, budget);
}

}  // namespace dpstats
