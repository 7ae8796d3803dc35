// A request's declared options by name. A capability's request struct (MeanRequest, ...) lists
// its options once, `visit_fields(request, v)` calling v("alpha", r.alpha)
// for each optional field under its declared name (dpstats/options.hpp). From that one list come
// the options a request sets (the "does not apply to method X" check), the tool's flags
// (apps/dpstats/options_cli.hpp), the Python keywords (python/src/request.hpp) and, here, the
// copy into a method's options struct, whose own visit_fields (the ranks' fingerprint) names
// its fields the same way (docs/architecture.md "Adding an option or a method").
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace dpstats {

// The declared names of the options `request` sets, in its visit order.
template <class Request>
std::vector<std::string> given_options(const Request& request) {
  std::vector<std::string> out;
  visit_fields(request, [&](std::string_view name, const auto& value) {
    if (value.has_value()) out.emplace_back(name);
  });
  return out;
}

// Each option `request` sets, written into the field of `options` of the same name (the value
// of the optional; an optional field takes it as given). A field of another type under the same
// name is a bug: std::logic_error.
template <class Request, class Options>
void copy_given(const Request& request, Options& options) {
  visit_fields(request, [&](std::string_view name, const auto& value) {
    if (!value.has_value()) return;
    visit_fields(options, [&](std::string_view field, auto& target) {
      if (field != name) return;
      if constexpr (std::is_assignable_v<decltype(target), decltype(*value)>) {
        target = *value;
      } else {
        throw std::logic_error("option '" + std::string(name) +
                               "': the request's and the options' fields differ in type");
      }
    });
  });
}

}  // namespace dpstats
