// Method registries: one table per command (mean, median, fit, moments, ...) that names each
// method, says what it is and which options it reads. The library's dispatcher, the tool and the
// Python module all read the same table, so a method name, its help text and the "this option
// does not apply" errors are written once.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dpstats {

struct MethodInfo {
  std::string_view name;     // as the user types it: "prime", "dp-gd-user", ...
  std::string_view summary;  // one line for --help and docstrings
  // Options this method reads, in the library's snake_case ("alpha", "failure_probability"); the
  // tool spells them --kebab-case, Python as keyword arguments of the same name.
  std::vector<std::string_view> options;
};

// The entry named `name`; InvalidArgument listing the valid names of `command` otherwise.
const MethodInfo& find_method(std::span<const MethodInfo> registry, std::string_view command,
                              std::string_view name);

// InvalidArgument for the first of `given` (option names the caller set) that `method` does not
// read, naming both spellings and the methods that do read it.
void check_options_apply(std::span<const MethodInfo> registry, const MethodInfo& method,
                         std::span<const std::string> given);

// Every method name of a registry (for CLI11's IsMember and help texts).
std::vector<std::string> method_names(std::span<const MethodInfo> registry);

// "failure_probability" -> "--failure-probability".
std::string cli_spelling(std::string_view option);

}  // namespace dpstats
