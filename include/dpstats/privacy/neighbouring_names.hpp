// The names users give the neighbouring relation and the privacy unit (privacy_loss.hpp declares
// the enums): "replace-one", "add-remove"; "record", "user". Every surface parses them here.
#pragma once
#include <array>
#include <string_view>
#include <utility>

#include "dpstats/names.hpp"
#include "dpstats/privacy/privacy_loss.hpp"

namespace dpstats {

template <>
struct EnumNames<Neighbouring> {
  static constexpr std::string_view parameter = "neighbouring";
  static constexpr std::array<std::pair<Neighbouring, std::string_view>, 2> names = {
      {{Neighbouring::replace_one, "replace-one"}, {Neighbouring::add_remove, "add-remove"}}};
};

template <>
struct EnumNames<PrivacyUnit> {
  static constexpr std::string_view parameter = "unit";
  static constexpr std::array<std::pair<PrivacyUnit, std::string_view>, 2> names = {
      {{PrivacyUnit::record, "record"}, {PrivacyUnit::user, "user"}}};
};

}  // namespace dpstats
