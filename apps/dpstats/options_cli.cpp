#include "options_cli.hpp"

#include <charconv>

#include "cli.hpp"
#include "dpstats/error.hpp"
#include "dry_run_cli.hpp"

namespace dpstats::cli {
namespace {

template <class E>
std::string enum_type_name() {
  std::string out;
  for (const auto& n : enum_names<E>()) out += (out.empty() ? "" : "|") + n;
  return out;
}

// A declared option whose value is one of an enum's names (parse_enum: the one parse).
template <class E>
CLI::Option* add_named(CLI::App* cmd, std::string_view name, std::optional<E>& target,
                       std::span<const MethodInfo> registry = {}) {
  const OptionDecl& decl = find_option("", name);
  return cmd
      ->add_option_function<std::string>(
          cli_flag(decl), [&target](const std::string& text) { target = parse_enum<E>(text); },
          option_help(decl, registry))
      ->type_name(enum_type_name<E>());
}

}  // namespace

CLI::Option* add_seed_option(CLI::App* cmd, std::optional<std::uint64_t>& seed) {
  return cmd->add_option_function<std::string>(
      "--seed",
      [&seed](const std::string& text) {
        std::uint64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
          throw CLI::ValidationError("--seed", "must be an integer in [0, 2^64), got '" + text + "'");
        }
        seed = value;
      },
      option_help(find_option("", "seed")));
}

CLI::Option* add_declared_flag(CLI::App* cmd, std::string_view command, std::string_view name,
                               bool& target, std::span<const MethodInfo> registry) {
  const OptionDecl& decl = find_option(command, name);
  return cmd->add_flag(cli_flag(decl), target, option_help(decl, registry));
}

CLI::Option* add_numbers(CLI::App* cmd, const OptionDecl& decl,
                         std::optional<std::vector<double>>& target,
                         std::span<const MethodInfo> registry) {
  return cmd
      ->add_option_function<std::vector<std::string>>(
          cli_flag(decl),
          [&target, flag = cli_flag(decl)](const std::vector<std::string>& texts) {
            target.emplace();
            for (const auto& text : texts) {
              const auto part = parse_numbers(text, flag.c_str());
              target->insert(target->end(), part.begin(), part.end());
            }
          },
          option_help(decl, registry))
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

CLI::Option* add_texts(CLI::App* cmd, const OptionDecl& decl,
                       std::optional<std::vector<std::string>>& target,
                       std::span<const MethodInfo> registry) {
  return cmd
      ->add_option_function<std::vector<std::string>>(
          cli_flag(decl),
          [&target](const std::vector<std::string>& texts) {
            target.emplace();
            for (const auto& text : texts)
              for (std::size_t at = 0; !text.empty();) {
                const std::size_t comma = text.find(',', at);
                target->push_back(text.substr(at, comma - at));
                if (comma == std::string::npos) break;
                at = comma + 1;
              }
          },
          option_help(decl, registry))
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

CLI::Option* add_switch(CLI::App* cmd, const OptionDecl& decl, std::optional<bool>& target,
                        std::span<const MethodInfo> registry) {
  const std::string flag = cli_flag(decl);
  const bool value = !flag.starts_with("--no-");
  return cmd->add_flag_function(
      flag, [&target, value](std::int64_t) { target = value; }, option_help(decl, registry));
}

PrivacyTarget ReleaseArgs::target() const { return {epsilon.value_or(0), delta.value_or(0)}; }

void add_release_options(CLI::App* cmd, ReleaseArgs& a, unsigned which, unsigned required,
                         std::span<const MethodInfo> registry) {
  auto add = [&](SharedOption bit, auto make) {
    if (!(which & bit)) return;
    CLI::Option* o = make();
    if (required & bit) o->required();
  };
  add(kEpsilon, [&] { return add_declared(cmd, "", "epsilon", a.epsilon); });
  add(kDelta, [&] { return add_declared(cmd, "", "delta", a.delta); });
  add(kRho, [&] { return add_declared(cmd, "", "rho", a.rho); });
  add(kNeighbouring, [&] { return add_named(cmd, "neighbouring", a.neighbouring); });
  add(kProfile, [&] { return add_named(cmd, "profile", a.profile, registry); });
  add(kScaleShare, [&] { return add_declared(cmd, "", "scale_share", a.scale_share, registry); });
  add(kThreads, [&] { return add_declared(cmd, "", "threads", a.threads, registry); });
  add(kBudget, [&] { return add_declared(cmd, "", "budget", a.budget); });
  add(kSeed, [&] { return add_seed_option(cmd, a.seed); });
  if (which & kDryRun) {
    add_declared_flag(cmd, "", "dry_run", a.dry_run);
    add_declared(cmd, "", "n_hint", a.n_hint);
    // Before the command runs: its input is then read as a header alone (dry_run_cli.hpp).
    cmd->parse_complete_callback([cmd, &a] {
      require(a.dry_run || !a.n_hint, "--n-hint applies with --dry-run only");
      if (a.dry_run) begin_dry_run(*cmd, a.n_hint);
    });
  }
}

}  // namespace dpstats::cli
