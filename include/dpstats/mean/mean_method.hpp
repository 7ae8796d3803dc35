// The mean command's methods as users name them, in the order of mean_methods() (mean/methods.hpp).
// The registry takes its names from here and run_mean parses a request's method once; dispatch is
// on the enum, never on a string.
#pragma once
#include <array>
#include <string_view>
#include <utility>

#include "dpstats/names.hpp"

namespace dpstats {

enum class MeanMethod {
  robust,
  prime,
  prime_ht,
  filter,
  exp_time,
  dp_mean,
  bounded,
  prime_boosted,
  prime_ht_boosted,
  tukey_median
};

template <>
struct EnumNames<MeanMethod> {
  static constexpr std::string_view parameter = "method for mean";
  static constexpr std::array<std::pair<MeanMethod, std::string_view>, 10> names = {
      {{MeanMethod::robust, "robust"},
       {MeanMethod::prime, "prime"},
       {MeanMethod::prime_ht, "prime-ht"},
       {MeanMethod::filter, "filter"},
       {MeanMethod::exp_time, "exp-time"},
       {MeanMethod::dp_mean, "dp-mean"},
       {MeanMethod::bounded, "bounded"},
       {MeanMethod::prime_boosted, "prime-boosted"},
       {MeanMethod::prime_ht_boosted, "prime-ht-boosted"},
       {MeanMethod::tukey_median, "tukey-median"}}};
};

}  // namespace dpstats
