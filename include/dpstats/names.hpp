// One parse and one to_string per enum. Each enum declares its names once, in a specialisation
// of EnumNames next to its definition; the library, the tool and the Python module all parse
// through parse_enum, so a name means one thing everywhere and every error lists the valid names.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dpstats/error.hpp"

namespace dpstats {

// Specialise with
//   static constexpr std::string_view parameter = "profile";
//   static constexpr std::array<std::pair<E, std::string_view>, N> names = {...};
template <class E>
struct EnumNames;

template <class E>
std::string_view name_of(E value) {
  for (const auto& [v, name] : EnumNames<E>::names)
    if (v == value) return name;
  return "?";
}

// Every valid name, in declaration order (for help texts and CLI11's IsMember).
template <class E>
std::vector<std::string> enum_names() {
  std::vector<std::string> out;
  for (const auto& [v, name] : EnumNames<E>::names) out.emplace_back(name);
  return out;
}

// The value named `text`; InvalidArgument naming the parameter and the valid names otherwise.
template <class E>
E parse_enum(std::string_view text) {
  for (const auto& [v, name] : EnumNames<E>::names)
    if (name == text) return v;
  std::string valid;
  for (const auto& [v, name] : EnumNames<E>::names)
    valid += (valid.empty() ? "'" : ", '") + std::string(name) + "'";
  throw InvalidArgument(fmt::format("{} must be one of {}, got '{}'", EnumNames<E>::parameter,
                                    valid, text));
}

}  // namespace dpstats
