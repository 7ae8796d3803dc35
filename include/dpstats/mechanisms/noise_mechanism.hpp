// The mechanisms `dpstats noise`, `dpstats.laplace` and `dpstats.gaussian` name: their names
// (EnumNames, parsed once) and the one dispatch the tool and the Python binding share, with the
// one rule on delta (mechanisms/noise_release.hpp checks the rest).
#pragma once
#include <array>
#include <string_view>
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

}  // namespace dpstats
