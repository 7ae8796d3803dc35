// The head word of a workload or factorization spec ("decay" of "decay:0.9"), parsed once into
// its enum (EnumNames beside the enum, in workload.cpp and factorization.cpp); the parser then
// switches on the enum and reads the number after ':' itself. Not installed.
#pragma once
#include <fmt/format.h>

#include <string>
#include <string_view>

#include "dpstats/error.hpp"
#include "dpstats/names.hpp"

namespace dpstats::moments::detail {

// The value of E named `head`; otherwise InvalidArgument "<syntax>, got '<spec>'" (the whole
// spec and every valid form, not only the head words).
template <class E>
E spec_head(std::string_view head, const std::string& spec, std::string_view syntax) {
  try {
    return parse_enum<E>(head);
  } catch (const InvalidArgument&) {
    throw InvalidArgument(fmt::format("{}, got '{}'", syntax, spec));
  }
}

}  // namespace dpstats::moments::detail
