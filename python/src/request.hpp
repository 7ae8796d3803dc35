// The Python side of a request's declared options (dpstats/option_fields.hpp): the binding
// takes the keywords as a dict and fills the request by its visit_fields, converting each by its
// field's type and checking a number against its declaration (the tool's flags take the same
// walk, apps/dpstats/options_cli.hpp); request_fields tells the package each keyword's kind, so
// python/dpstats builds the function's signature and docstring from the same list.
#pragma once
#include <fmt/format.h>

#include <string>
#include <type_traits>
#include <vector>

#include "common.hpp"
#include "dpstats/names.hpp"

namespace dpstats::python {

// "number", "integer", "numbers" (a sequence of numbers), "texts" (a sequence of names), "text"
// (one spec, such as "decay:0.9"), "flag" or "name" (an enum's name).
template <class T>
const char* field_kind() {
  if constexpr (std::is_same_v<T, bool>) return "flag";
  else if constexpr (std::is_enum_v<T>) return "name";
  else if constexpr (std::is_integral_v<T>) return "integer";
  else if constexpr (std::is_floating_point_v<T>) return "number";
  else if constexpr (std::is_same_v<T, std::vector<double>>) return "numbers";
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) return "texts";
  else if constexpr (std::is_same_v<T, std::string>) return "text";
  else static_assert(sizeof(T) == 0, "a request option of a type the binding does not convert");
}

// [(name, kind)] of every option the request lists, in its visit order.
template <class Request>
py::list request_fields() {
  py::list out;
  visit_fields(Request{}, [&](std::string_view name, const auto& field) {
    using T = typename std::remove_cvref_t<decltype(field)>::value_type;
    out.append(py::make_tuple(std::string(name), field_kind<T>()));
  });
  return out;
}

// Sets each option of `request` that `options` gives (None: absent); a number outside its
// declared range is the declaration's InvalidArgument (ValueError). A key the request does not
// list is an InvalidArgument naming it.
template <class Request>
void fill_request(Request& request, std::string_view command, const py::dict& options) {
  std::size_t used = 0;
  visit_fields(request, [&](std::string_view name, auto& field) {
    const py::str key{std::string(name)};
    if (!options.contains(key)) return;
    ++used;
    const py::object value = options[key];
    if (value.is_none()) return;
    using T = typename std::remove_reference_t<decltype(field)>::value_type;
    if constexpr (std::is_enum_v<T>) {
      field = parse_enum<T>(py::cast<std::string>(value));
    } else {
      field = py::cast<T>(value);
      if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
        check_option(find_option(command, name), static_cast<double>(*field));
    }
  });
  if (used == options.size()) return;
  for (const auto& [key, value] : options) {
    bool listed = false;
    visit_fields(request, [&](std::string_view name, const auto&) {
      listed = listed || name == py::cast<std::string>(key);
    });
    require(listed, fmt::format("{} is no option of {}", py::cast<std::string>(key), command));
  }
}

}  // namespace dpstats::python
