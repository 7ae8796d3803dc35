#include "dpstats/registry.hpp"

#include <algorithm>

#include "dpstats/error.hpp"

namespace dpstats {
namespace {

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

bool reads(const MethodInfo& m, std::string_view option) {
  return std::find(m.options.begin(), m.options.end(), option) != m.options.end();
}

}  // namespace

const MethodInfo& find_method(std::span<const MethodInfo> registry, std::string_view command,
                              std::string_view name) {
  for (const auto& m : registry)
    if (m.name == name) return m;
  throw InvalidArgument(fmt::format("method for {} must be one of {}, got '{}'", command,
                                    quoted_list(method_names(registry)), name));
}

void check_options_apply(std::span<const MethodInfo> registry, const MethodInfo& method,
                         std::span<const std::string> given) {
  for (const auto& option : given) {
    if (reads(method, option)) continue;
    std::vector<std::string> readers;
    for (const auto& m : registry)
      if (reads(m, option)) readers.emplace_back(m.name);
    throw InvalidArgument(fmt::format(
        "{} ({}) does not apply to method '{}'; {}", option, cli_spelling(option), method.name,
        readers.empty() ? std::string("no method reads it")
                        : "it applies to " + quoted_list(readers)));
  }
}

std::vector<std::string> method_names(std::span<const MethodInfo> registry) {
  std::vector<std::string> out;
  for (const auto& m : registry) out.emplace_back(m.name);
  return out;
}

std::string cli_spelling(std::string_view option) {
  std::string out = "--";
  for (char c : option) out += c == '_' ? '-' : c;
  return out;
}

}  // namespace dpstats
