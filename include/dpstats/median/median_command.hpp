// The median command's methods as users name them: the private pipelines (MedianMethod) and the
// non-private Weiszfeld solver, in the order of median_methods(). The tool and Python dispatch
// on this enum, never on a string.
#pragma once
#include <array>
#include <optional>
#include <string_view>
#include <utility>

#include "dpstats/median/geometric_median.hpp"
#include "dpstats/names.hpp"

namespace dpstats {

enum class MedianCommand { fast, hsu24, weiszfeld };

template <>
struct EnumNames<MedianCommand> {
  static constexpr std::string_view parameter = "method for median";
  static constexpr std::array<std::pair<MedianCommand, std::string_view>, 3> names = {
      {{MedianCommand::fast, "fast"},
       {MedianCommand::hsu24, "hsu24"},
       {MedianCommand::weiszfeld, "weiszfeld"}}};
};

// The private pipeline `m` runs; absent for weiszfeld (the non-private solver).
inline std::optional<MedianMethod> private_method(MedianCommand m) {
  switch (m) {
    case MedianCommand::fast: return MedianMethod::fast;
    case MedianCommand::hsu24: return MedianMethod::hsu24;
    case MedianCommand::weiszfeld: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace dpstats
