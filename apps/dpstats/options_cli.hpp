// The tool's side of the declared options (dpstats/options.hpp): a flag's spelling, its help and
// its range check come from the option's one declaration. The options every releasing command
// shares — the privacy target, --threads, --seed, --budget, --scale-share, --profile — are added
// here once (`account` and `budget`, whose --epsilon is a query or a total, keep their own).
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dpstats/names.hpp"
#include "dpstats/options.hpp"
#include "dpstats/privacy/neighbouring_names.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/profile.hpp"

namespace dpstats::cli {

namespace detail {
template <class T>
struct Unwrapped {
  using type = T;
};
template <class T>
struct Unwrapped<std::optional<T>> {
  using type = T;
};
}  // namespace detail

// Adds the declared option `name` of `command` to `cmd`, stored into `target` (a number, an
// integer, a string, or an optional of one). A number outside its declared range is the
// declaration's InvalidArgument (its name, the value, the range). `registry`: the command's
// methods; those that read the option head its help.
template <class T>
CLI::Option* add_declared(CLI::App* cmd, std::string_view command, std::string_view name,
                          T& target, std::span<const MethodInfo> registry = {}) {
  using V = typename detail::Unwrapped<T>::type;
  const OptionDecl& decl = find_option(command, name);
  return cmd->add_option_function<V>(
      cli_flag(decl),
      [&target, &decl](const V& value) {
        if constexpr (std::is_arithmetic_v<V>) check_option(decl, static_cast<double>(value));
        target = value;
      },
      option_help(decl, registry));
}

// A declared option of kind text holding numbers ("a,b,c", parse_numbers' error naming the
// flag), and a flag: given, it sets `target` to true, or to false when its spelling is --no-X.
CLI::Option* add_numbers(CLI::App* cmd, const OptionDecl& decl,
                         std::optional<std::vector<double>>& target,
                         std::span<const MethodInfo> registry);
CLI::Option* add_switch(CLI::App* cmd, const OptionDecl& decl, std::optional<bool>& target,
                        std::span<const MethodInfo> registry);
// A declared option of kind text holding names "A,B,C" (split at the commas, kept verbatim).
// Numbers and names may be repeated: each occurrence appends ("--bounds 0,1 --bounds 2,5").
CLI::Option* add_texts(CLI::App* cmd, const OptionDecl& decl,
                       std::optional<std::vector<std::string>>& target,
                       std::span<const MethodInfo> registry);

// A declared option naming a value of the enum E (EnumNames): one of its names.
template <class E>
CLI::Option* add_enum(CLI::App* cmd, const OptionDecl& decl, std::optional<E>& target,
                      std::span<const MethodInfo> registry) {
  return cmd
      ->add_option_function<std::string>(
          cli_flag(decl), [&target](const std::string& name) { target = parse_enum<E>(name); },
          option_help(decl, registry))
      ->check(CLI::IsMember(enum_names<E>()));
}

// Every option `request` lists (its visit_fields, dpstats/option_fields.hpp) that is declared
// for `command` itself, as a flag bound to its field by type: a number or integer (checked
// against its range), numbers "a,b,c", names "A,B", a flag, or an enum's name. The shared options a request lists (profile,
// scale_share) are add_release_options'. A new option of the command is then a declaration and
// a field of its request: no line here or in the command's file.
template <class Request>
void add_request_options(CLI::App* cmd, std::string_view command, Request& request,
                         std::span<const MethodInfo> registry) {
  visit_fields(request, [&](std::string_view name, auto& field) {
    const OptionDecl& decl = find_option(command, name);
    if (decl.command.empty()) return;
    using V = typename std::remove_reference_t<decltype(field)>::value_type;
    if constexpr (std::is_same_v<V, bool>)
      add_switch(cmd, decl, field, registry);
    else if constexpr (std::is_same_v<V, std::vector<double>>)
      add_numbers(cmd, decl, field, registry);
    else if constexpr (std::is_same_v<V, std::vector<std::string>>)
      add_texts(cmd, decl, field, registry);
    else if constexpr (std::is_enum_v<V>)
      add_enum(cmd, decl, field, registry);
    else
      add_declared(cmd, command, name, field, registry);
  });
}

// --seed (declared): a decimal integer in [0, 2^64) (CLI11 alone would wrap "-1" into uint64).
CLI::Option* add_seed_option(CLI::App* cmd, std::optional<std::uint64_t>& seed);

// The same for a declared flag (kind flag): sets `target` when given.
CLI::Option* add_declared_flag(CLI::App* cmd, std::string_view command, std::string_view name,
                               bool& target, std::span<const MethodInfo> registry = {});

// The options every releasing command shares; absent means "not given" (the library's default,
// or its "required" error).
struct ReleaseArgs {
  std::optional<double> epsilon, delta, rho, scale_share;
  std::optional<Neighbouring> neighbouring;
  std::optional<Profile> profile;
  std::optional<int> threads;
  std::optional<std::uint64_t> seed;
  std::optional<std::string> budget;
  bool dry_run = false;                // --dry-run: print the plan (dry_run_cli.hpp)
  std::optional<std::int64_t> n_hint;  // --n-hint N: the rows declared for the dry run's verdict
  // {epsilon, delta}, each 0 when absent (the library refuses a missing epsilon by name).
  PrivacyTarget target() const;
};

// Which shared options a command reads, and which of them CLI11 requires on the command line.
enum SharedOption : unsigned {
  kEpsilon = 1u << 0,
  kDelta = 1u << 1,
  kRho = 1u << 2,
  kNeighbouring = 1u << 3,
  kThreads = 1u << 4,
  kSeed = 1u << 5,
  kBudget = 1u << 6,
  kScaleShare = 1u << 7,
  kProfile = 1u << 8,
  kDryRun = 1u << 9,  // --dry-run and --n-hint
};
inline constexpr unsigned kEveryRelease = kEpsilon | kDelta | kThreads | kSeed | kBudget | kDryRun;

// Adds the shared options in `which` to `cmd` from their declarations; those in `required` are
// required on the command line. `registry`: the command's methods (for the help's readers).
void add_release_options(CLI::App* cmd, ReleaseArgs& args, unsigned which, unsigned required = 0,
                         std::span<const MethodInfo> registry = {});

}  // namespace dpstats::cli
