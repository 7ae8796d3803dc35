// Profile: which constants an algorithm runs with (the same two words in every capability).
//  * practical (default): a proven guarantee with tighter accounting and tuned constants;
//  * paper: the paper's algorithm and constants, with the corrections in docs/errata.md.
// Anything whose privacy is not proven reports `certified: false` and is never a default.
#pragma once
#include "dpstats/names.hpp"

namespace dpstats {

enum class Profile { practical, paper };

template <>
struct EnumNames<Profile> {
  static constexpr std::string_view parameter = "profile";
  static constexpr std::array<std::pair<Profile, std::string_view>, 2> names = {
      {{Profile::practical, "practical"}, {Profile::paper, "paper"}}};
};

}  // namespace dpstats
