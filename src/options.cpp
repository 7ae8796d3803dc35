#include "dpstats/options.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"

namespace dpstats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

using K = OptionKind;

// The declarations. Shared ones (command "") first: every releasing command reads them through
// apps/dpstats/options_cli.hpp (`account` and `budget`, whose --epsilon is a total or a query,
// keep their own). A capability's own options follow under its command.
const OptionDecl kOptions[] = {
    {.command = "", .name = "epsilon", .lo = 0, .default_text = "required",
     .help = "privacy-loss bound epsilon of this release; smaller is more private and noisier "
             "(0.1 to 10 is usual; at most 1000)"},
    {.command = "", .name = "delta", .lo = 0, .hi = 1, .lo_closed = true,
     .default_text = "required where the method adds Gaussian noise; 0 asks for pure DP",
     .help = "probability the epsilon guarantee may fail, well below 1/n (e.g. 1e-6)"},
    {.command = "", .name = "rho", .lo = 0, .default_text = "absent (--epsilon instead)",
     .help = "zCDP budget rho (instead of --epsilon)"},
    {.command = "", .name = "neighbouring", .kind = K::text, .default_text = "replace-one",
     .help = "the neighbouring relation: replace-one or add-remove"},
    {.command = "", .name = "threads", .kind = K::integer, .lo = 1, .hi = 1024,
     .lo_closed = true, .hi_closed = true, .default_text = "the machine's cores",
     .help = "worker threads for the data passes; a seeded release is the same for any value"},
    {.command = "", .name = "seed", .kind = K::text,
     .default_text = "absent: secure noise",
     .help = "deterministic noise for experiments, an integer in [0, 2^64) (the release says "
             "\"seeded\": true; not secure)"},
    {.command = "", .name = "budget", .kind = K::text, .default_text = "absent: no budget file",
     .help = "budget file (dpstats budget init): this release is charged to it, refused if it "
             "would exceed its total; locked while in use"},
    {.command = "", .name = "scale_share", .lo = 0, .hi = 1,
     .default_text = "mean, median: planned from n, d and the budget (0.1 to 0.5; abstains "
                     "before charging when 0.5 is not enough); stat: 0.5; others: 0.1",
     .help = "share of the budget spent estimating an absent scale, bounds or radius (the mean "
             "and the median take at most 0.5)"},
    {.command = "", .name = "profile", .kind = K::text, .default_text = "practical",
     .help = "practical (measured best, proven) or paper (the paper's constants as printed)"},
    {.command = "", .name = "dry_run", .kind = K::flag, .default_text = "off",
     .help = "print the release's plan -- its stages, mechanisms and budget shares, and the rows "
             "each private estimate needs at this epsilon -- without reading a data row, "
             "drawing noise or charging anything (docs/guide.md \"Before you spend epsilon\")"},
    {.command = "", .name = "n_hint", .kind = K::integer, .lo = 1, .hi = 1e15, .lo_closed = true,
     .hi_closed = true, .default_text = "absent: rows needed only, no verdict",
     .help = "with --dry-run: the number of rows (users for a user-level fit) you declare the "
             "table has; the plan then says whether the release would abstain"},
    // The mean (mean/methods.hpp): which method reads which option is its registry's.
    {.command = "mean", .name = "method", .kind = K::text,
     .default_text = "robust with --alpha, dp-mean without", .help = "the mean's method"},
    {.command = "mean", .name = "alpha", .lo = 0, .hi = 0.5,
     .default_text = "absent (required by the robust methods)",
     .help = "upper bound on the corrupted fraction of rows (prime and the filter: at most 0.25)"},
    {.command = "mean", .name = "scale", .kind = K::text, .unit = "the data's units",
     .default_text = "estimated privately from --scale-share",
     .help = "data scale per column S or S1,...,Sd (e.g. each column's standard deviation)"},
    {.command = "mean", .name = "bounds", .kind = K::text, .unit = "the data's units",
     .default_text = "estimated privately from --scale-share",
     .help = "LO,HI for every column or LO1,HI1,...,LOd,HId"},
    {.command = "mean", .name = "failure_probability", .lo = 0, .hi = 1, .default_text = "0.1",
     .help = "failure probability of the range steps"},
    {.command = "mean", .name = "topk_multiplier", .lo = 1, .hi = 4, .lo_closed = true,
     .hi_closed = true, .default_text = "2",
     .help = "candidates per round k = ceil(M alpha n)"},
    {.command = "mean", .name = "boost_zeta", .lo = 0, .hi = 1, .default_text = "0.05",
     .help = "failure probability after boosting (parts m = the least odd m with "
             "P(Bin(m, 3/4) <= m/2) <= zeta)"},
    {.command = "mean", .name = "T1", .kind = K::integer, .lo = 0, .hi = 20, .lo_closed = true,
     .hi_closed = true, .default_text = "0 = the profile's", .help = "epochs"},
    {.command = "mean", .name = "T2", .kind = K::integer, .lo = 0, .hi = 20, .lo_closed = true,
     .hi_closed = true, .default_text = "0 = the profile's", .help = "inner iterations per epoch"},
    {.command = "mean", .name = "T", .kind = K::integer, .lo = 0, .lo_closed = true,
     .default_text = "0 = min(200, 2d + 20)", .help = "rounds of the filter"},
    {.command = "mean", .name = "uncertified_window", .kind = K::flag, .default_text = "off",
     .help = "contiguous-window resilience instead of the exact enumeration (runs at any n; the "
             "release is certified: false)"},
    {.command = "mean", .name = "fallback", .kind = K::flag, .default_text = "on",
     .help = "practical profile: release DP Mean when the feasibility check predicts a "
             "noise-dominated filter (--no-fallback runs the filter anyway)",
     .cli = "--no-fallback"},
    // The median (median/geometric_median.hpp).
    {.command = "median", .name = "center", .kind = K::text,
     .default_text = "hsu24-localization",
     .help = "the paper profile's centre step: hsu24-localization or fast-center (KLTY Alg. 3, "
             "certified; needs n of about 10^4 or more)"},
    {.command = "median", .name = "domain_radius", .unit = "the data's units", .lo = 0,
     .default_text = "estimated privately from --scale-share",
     .help = "radius R of the ball around the origin holding the median"},
    {.command = "median", .name = "min_radius", .unit = "the data's units", .lo = 0,
     .default_text = "R/2^20", .help = "start r of the radius grid"},
    {.command = "median", .name = "bound_check_share", .lo = 0, .hi = 1, .lo_closed = true,
     .default_text = "0.01; 0 turns the check off",
     .help = "budget share of the private count of rows beyond a given --domain-radius"},
    // The everyday statistics (stats/stats.hpp); which statistic reads which is its registry's.
    {.command = "stat", .name = "bounds", .kind = K::text, .unit = "the data's units",
     .default_text = "estimated privately from --scale-share",
     .help = "LO,HI clipping bounds: once for every column or once per column, in order"},
    {.command = "stat", .name = "quantiles", .kind = K::text, .default_text = "required",
     .help = "probabilities in [0, 1], e.g. 0.25,0.5,0.75"},
    {.command = "stat", .name = "grid_size", .kind = K::integer, .lo = 2, .hi = 16777216,
     .lo_closed = true, .hi_closed = true, .default_text = "1024",
     .help = "candidates per column"},
    {.command = "stat", .name = "categories", .kind = K::text,
     .default_text = "absent: selected privately, needs delta > 0",
     .help = "the public categories A,B,... (--category NAME, repeated, for names with commas)"},
    // The fits' options every task reads (the task-only ones are still added by hand in
    // apps/dpstats/cmd_fit_<task>.cpp).
    {.command = "fit", .name = "domain_radius", .lo = 0, .default_text = "required",
     .help = "radius of the domain ball B(0, R) of the parameters"},
    {.command = "fit", .name = "steps", .kind = K::integer, .lo = 1, .lo_closed = true,
     .default_text = "the method's", .help = "optimisation steps"},
    {.command = "fit", .name = "step_size", .lo = 0, .default_text = "the method's",
     .help = "step size / learning rate"},
    {.command = "fit", .name = "clip", .lo = 0, .default_text = "the method's",
     .help = "gradient clipping norm"},
    {.command = "fit", .name = "epochs", .kind = K::integer, .lo = 1, .lo_closed = true,
     .default_text = "the method's", .help = "passes over the data"},
    {.command = "fit", .name = "batch_size", .kind = K::integer, .lo = 1, .lo_closed = true,
     .default_text = "the method's", .help = "(expected) batch size"},
    {.command = "fit", .name = "feature_bound", .unit = "the features' units", .lo = 0,
     .default_text = "estimated privately from --scale-share",
     .help = "user-level: public bound on feature norms (rows clipped)"},
    {.command = "fit", .name = "label_bound", .unit = "the labels' units", .lo = 0,
     .default_text = "estimated privately from --scale-share",
     .help = "user-level squared/huber: public bound on |label|"},
    {.command = "fit", .name = "holdout", .lo = 0, .hi = 0.5, .hi_closed = true,
     .default_text = "absent: no held-out rows",
     .help = "fraction of the rows (users for user-level) held out by a secret random split: "
             "the fit does not see them, and diagnostics.holdout states the released model's "
             "private mean clipped loss on them with 95% intervals"},
    {.command = "fit", .name = "holdout_share", .lo = 0, .hi = 1,
     .default_text = "0.05: of rho, of epsilon for the pure heavy-tailed methods",
     .help = "share of the budget for the held-out loss"},
    {.command = "fit", .name = "holdout_loss_bound", .lo = 0, .default_text = "5",
     .help = "clip of each held-out unit's loss (classify: the per-example loss clip of the "
             "epoch losses too)"},
};

std::string number_text(double x) { return fmt::format("{}", x); }

}  // namespace

std::span<const OptionDecl> declared_options() { return kOptions; }

const OptionDecl& find_option(std::string_view command, std::string_view name) {
  for (const auto& d : kOptions)
    if (d.command == command && d.name == name) return d;
  for (const auto& d : kOptions)
    if (d.command.empty() && d.name == name) return d;
  throw InvalidArgument(fmt::format("no option '{}' is declared for '{}'", name, command));
}

std::string cli_flag(const OptionDecl& d) {
  return d.cli.empty() ? cli_spelling(d.name) : std::string(d.cli);
}

std::string range_text(const OptionDecl& d) {
  const bool low = std::isfinite(d.lo), high = std::isfinite(d.hi);
  if (!low && !high) return "";
  if (!high) return fmt::format("{} {}", d.lo_closed ? ">=" : ">", number_text(d.lo));
  if (!low) return fmt::format("{} {}", d.hi_closed ? "<=" : "<", number_text(d.hi));
  return fmt::format("in {}{}, {}{}", d.lo_closed ? "[" : "(", number_text(d.lo),
                     number_text(d.hi), d.hi_closed ? "]" : ")");
}

void check_option(const OptionDecl& d, double x) {
  const bool above = d.lo_closed ? x >= d.lo : x > d.lo;
  const bool below = d.hi_closed ? x <= d.hi : x < d.hi;
  const bool whole = d.kind != OptionKind::integer || x == std::floor(x);
  if (std::isfinite(x) && above && below && whole) return;
  const char* what = d.kind == OptionKind::integer ? "an integer "
                     : !std::isfinite(x)               ? "a finite number "
                                                       : "";
  throw InvalidArgument(fmt::format("{} must be {}{}, got {}", d.name, what, range_text(d),
                                    number_text(x)));
}

std::string option_help(const OptionDecl& d, std::span<const MethodInfo> registry) {
  std::string readers;
  for (const auto& m : registry)
    for (const auto& o : m.options)
      if (o == d.name) readers += fmt::format("{}{}", readers.empty() ? "" : ", ", m.name);
  std::string out = readers.empty() ? std::string(d.help) : readers + ": " + std::string(d.help);
  const std::string range = range_text(d);
  out += " (";
  if (!range.empty()) out += range + "; ";
  if (!d.unit.empty()) out += "in " + std::string(d.unit) + "; ";
  return out + "default: " + std::string(d.default_text) + ")";
}

}  // namespace dpstats
