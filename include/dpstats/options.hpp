// Options declared once. Each option a user sets is one OptionDecl: its name, type, unit, valid
// range, default (or "required" / "estimated privately from a share"), the methods that read it
// and its help. The tool's flags and their help (apps/dpstats/options_cli.hpp), the Python keywords'
// validation and docstring lines (python/dpstats/_options.py, through the binding) and the
// InvalidArgument naming the option, its value and its range all come from the declaration
// (docs/architecture.md "Adding an option or a method").
#pragma once
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dpstats/registry.hpp"

namespace dpstats {

enum class OptionKind { number, integer, text, flag };

struct OptionDecl {
  // "" for the options every releasing command shares (the privacy target, threads, seed,
  // budget, the scale share, the profile); a command ("mean") for that command's own options.
  std::string_view command = {};
  std::string_view name = {};  // the library's snake_case; Python's keyword
  OptionKind kind = OptionKind::number;
  std::string_view unit = {};  // "" when the value has none
  // Valid range of a number or integer: lo < x (lo <= x when lo_closed), x < hi (x <= hi when
  // hi_closed); infinite ends are unbounded.
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_closed = false, hi_closed = false;
  std::string_view default_text = {};  // "required", "0.1", "estimated privately from --scale-share"
  std::string_view help = {};
  std::string_view cli = {};  // the tool's spelling when not --kebab-case of name
  // The command's methods that read it, space-separated ("prime filter"): their registry lines
  // take it from here (declared_method). "" for a command without methods, and for a shared
  // option, whose readers are named in the registry lines.
  std::string_view methods = {};
};

// Every declared option, shared ones first.
std::span<const OptionDecl> declared_options();

// The declaration of `name` for `command`: the command's own, else the shared one;
// InvalidArgument when neither exists (a bug in the caller).
const OptionDecl& find_option(std::string_view command, std::string_view name);

// A registry line: the method `name` of `command`, its summary and the options it reads: the
// shared ones named in `shared`, then the command's own whose declaration lists it in `methods`.
MethodInfo declared_method(std::string_view command, std::string_view name,
                           std::string_view summary, std::vector<std::string_view> shared);

// The tool's spelling: decl.cli, or "--" + name with '_' as '-'.
std::string cli_flag(const OptionDecl& decl);

// "> 0", "in [0, 1)", "in [1, 1024]"; "" for an unbounded or non-numeric option.
std::string range_text(const OptionDecl& decl);

// InvalidArgument "<name> must be <range>, got <value>" when `value` is outside the range (or
// not an integer for an integer option).
void check_option(const OptionDecl& decl, double value);

// The help line: the methods of `registry` that read the option (when a registry is given),
// the help text, the range and the default: "prime, filter: candidates per round ... (in [1,
// 4]; default 2)".
std::string option_help(const OptionDecl& decl, std::span<const MethodInfo> registry = {});

}  // namespace dpstats
