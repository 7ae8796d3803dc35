#include "dpstats/options.hpp"

#include <fmt/format.h>

#include <algorithm>
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
                     "before charging when 0.5 is not enough); stat: 0.5; fit classify: per-column "
                     "planned up to 0.5, else (--one-unit) the global scale at 0.05; others: 0.1",
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
    // The mean (mean/methods.hpp): `methods` names the methods that read each (their registry
    // lines take it from here; the shared options they read are named in those lines).
    {.command = "mean", .name = "method", .kind = K::text,
     .default_text = "robust with --alpha, bounded (private bounds) without", .help = "the mean's method"},
    {.command = "mean", .name = "alpha", .lo = 0, .hi = 0.5,
     .default_text = "absent (required by the robust methods)",
     .help = "upper bound on the corrupted fraction of rows (prime and the filter: at most 0.25)",
     .methods = "robust prime prime-ht filter exp-time prime-boosted prime-ht-boosted"},
    {.command = "mean", .name = "scale", .kind = K::text, .unit = "the data's units",
     .default_text = "estimated privately from --scale-share",
     .help = "data scale per column S or S1,...,Sd (e.g. each column's standard deviation)",
     .methods = "prime prime-ht filter exp-time dp-mean prime-boosted prime-ht-boosted"},
    {.command = "mean", .name = "bounds", .kind = K::text, .unit = "the data's units",
     .default_text = "estimated privately from --scale-share",
     .help = "LO,HI for every column or LO1,HI1,...,LOd,HId",
     .methods = "bounded tukey-median"},
    {.command = "mean", .name = "failure_probability", .lo = 0, .hi = 1, .default_text = "0.1",
     .help = "failure probability of the range steps",
     .methods = "robust prime prime-ht filter exp-time dp-mean prime-boosted prime-ht-boosted"},
    {.command = "mean", .name = "topk_multiplier", .lo = 1, .hi = 4, .lo_closed = true,
     .hi_closed = true, .default_text = "2",
     .help = "candidates per round k = ceil(M alpha n)",
     .methods = "robust prime prime-ht filter prime-boosted prime-ht-boosted"},
    {.command = "mean", .name = "clip_check_share", .lo = 0, .hi = 0.1, .lo_closed = true,
     .hi_closed = true, .default_text = "0.01; 0 turns the check off",
     .help = "budget share of the private count of the rows a supplied --scale or --bounds clips "
             "(diagnostics.clipped)",
     .methods = "prime prime-ht filter dp-mean bounded prime-boosted prime-ht-boosted"},
    {.command = "mean", .name = "boost_zeta", .lo = 0, .hi = 1, .default_text = "0.05",
     .help = "failure probability after boosting (parts m = the least odd m with "
             "P(Bin(m, 3/4) <= m/2) <= zeta)",
     .methods = "prime-boosted prime-ht-boosted"},
    {.command = "mean", .name = "T1", .kind = K::integer, .lo = 0, .hi = 20, .lo_closed = true,
     .hi_closed = true, .default_text = "0 = the profile's", .help = "epochs",
     .methods = "robust prime prime-ht prime-boosted prime-ht-boosted"},
    {.command = "mean", .name = "T2", .kind = K::integer, .lo = 0, .hi = 20, .lo_closed = true,
     .hi_closed = true, .default_text = "0 = the profile's", .help = "inner iterations per epoch",
     .methods = "robust prime prime-ht prime-boosted prime-ht-boosted"},
    {.command = "mean", .name = "T", .kind = K::integer, .lo = 0, .lo_closed = true,
     .default_text = "0 = min(200, 2d + 20)", .help = "rounds of the filter",
     .methods = "filter"},
    {.command = "mean", .name = "uncertified_window", .kind = K::flag, .default_text = "off",
     .help = "contiguous-window resilience instead of the exact enumeration (runs at any n; the "
             "release is certified: false)",
     .methods = "exp-time"},
    {.command = "mean", .name = "fallback", .kind = K::flag, .default_text = "on",
     .help = "practical profile: release DP Mean when the feasibility check predicts a "
             "noise-dominated filter (--no-fallback runs the filter anyway)",
     .cli = "--no-fallback",
     .methods = "robust prime prime-ht prime-boosted prime-ht-boosted"},
    // The median (median/geometric_median.hpp); `methods` as the mean's.
    {.command = "median", .name = "center", .kind = K::text,
     .default_text = "hsu24-localization",
     .help = "the paper profile's centre step: hsu24-localization or fast-center (KLTY Alg. 3, "
             "certified; needs n of about 10^4 or more)",
     .methods = "fast"},
    {.command = "median", .name = "domain_radius", .unit = "the data's units", .lo = 0,
     .default_text = "estimated privately from --scale-share",
     .help = "radius R of the ball around the origin holding the median",
     .methods = "fast hsu24"},
    {.command = "median", .name = "min_radius", .unit = "the data's units", .lo = 0,
     .default_text = "R/2^20", .help = "start r of the radius grid",
     .methods = "fast hsu24"},
    {.command = "median", .name = "bound_check_share", .lo = 0, .hi = 1, .lo_closed = true,
     .default_text = "0.01; 0 turns the check off",
     .help = "budget share of the private count of rows beyond a given --domain-radius",
     .methods = "fast hsu24"},
    // The everyday statistics (stats/stats.hpp); `methods` as the mean's.
    {.command = "stat", .name = "bounds", .kind = K::text, .unit = "the data's units",
     .default_text = "estimated privately from --scale-share",
     .help = "LO,HI clipping bounds: once for every column or once per column, in order",
     .methods = "sum mean variance std quantiles"},
    {.command = "stat", .name = "quantiles", .kind = K::text, .default_text = "required",
     .help = "probabilities in [0, 1], e.g. 0.25,0.5,0.75", .methods = "quantiles"},
    {.command = "stat", .name = "grid_size", .kind = K::integer, .lo = 2, .hi = 16777216,
     .lo_closed = true, .hi_closed = true, .default_text = "1024",
     .help = "candidates per column", .methods = "quantiles"},
    {.command = "stat", .name = "categories", .kind = K::text,
     .default_text = "absent: selected privately, needs delta > 0",
     .help = "the public categories A,B,... (--category NAME, repeated, for names with commas)",
     .methods = "histogram"},
    // The fits' options every task reads.
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
    // The fit tasks' own options (apps/dpstats/cmd_fit_<task>.cpp); a task refuses another's.
    {.command = "fit", .name = "items_per_user", .kind = K::integer, .lo = 1, .hi = 1099511627776,
     .lo_closed = true, .hi_closed = true, .default_text = "required",
     .help = "user-level: m, the public number of rows per user; each user is truncated or "
             "padded (with its own rows) to m"},
    {.command = "fit", .name = "smoothing_radius", .lo = 0,
     .default_text = "R sqrt(d) / (epsilon n sqrt(m))",
     .help = "user-level nonsmooth: smoothing radius r"},
    {.command = "fit", .name = "users_per_step", .kind = K::integer, .lo = 1, .lo_closed = true,
     .default_text = "every user",
     .help = "user-level accelerated/nonsmooth practical: users per step K"},
    {.command = "fit", .name = "moment_order", .lo = 2, .lo_closed = true, .default_text = "4",
     .help = "heavy-tailed: moment order k of the gradients"},
    {.command = "fit", .name = "moment_bound", .lo = 0,
     .default_text = "estimated privately from --scale-share",
     .help = "heavy-tailed: public G_k with E[sup_W |grad f|^k] <= G_k^k"},
    {.command = "fit", .name = "moment_bound_2", .lo = 0, .default_text = "G_k",
     .help = "heavy-tailed: public G_2"},
    {.command = "fit", .name = "phases", .kind = K::integer, .lo = 1, .hi = 30, .lo_closed = true,
     .hi_closed = true, .default_text = "practical 3", .help = "heavy-tailed: Pop-Localize phases"},
    {.command = "fit", .name = "inner", .kind = K::text, .default_text = "glm-one-stage",
     .help = "heavy-tailed: per-phase solver, glm-one-stage (docs/proofs/heavy-tailed.md §2.13) "
             "or double-output-perturbation (Alg 4 with Alg 2, the paper's main algorithm)"},
    {.command = "fit", .name = "final_clip_rule", .kind = K::text,
     .default_text = "private-quantile",
     .help = "heavy-tailed practical: clip of the final GD phase, private-quantile (1/16 of that "
             "block's epsilon) or public (moment bound only)"},
    {.command = "fit", .name = "model", .kind = K::text, .default_text = "logistic",
     .help = "classify: logistic or mlp"},
    {.command = "fit", .name = "optimizer", .kind = K::text, .default_text = "dp-adam-jme",
     .help = "classify: the optimizer"},
    {.command = "fit", .name = "hidden", .kind = K::integer, .lo = 1, .hi = 65536,
     .lo_closed = true, .hi_closed = true, .default_text = "128",
     .help = "classify: hidden units of the mlp"},
    {.command = "fit", .name = "classes", .kind = K::integer, .lo = 2, .lo_closed = true,
     .default_text = "required for CSV (fashion-mnist: 10)",
     .help = "classify: the public number of classes"},
    {.command = "fit", .name = "noise_multiplier", .lo = 0,
     .default_text = "calibrated to --epsilon",
     .help = "classify: noise multiplier z instead of calibrating to --epsilon (the run must fit "
             "within --epsilon; the epsilon spent is reported)",
     .methods = "dp-sgd dp-adam dp-adam-debiased dp-adam-jme dp-adam-joint-clip"},
    {.command = "fit", .name = "feature_scale", .unit = "the features' units", .lo = 0,
     .default_text = "estimated privately from --scale-share",
     .help = "classify: public scale the features are divided by before training (absent: "
             "per-column private median and robust sd, or with --one-unit the private median "
             "row norm / sqrt(d); abstains when none is reliable at this size)",
     .methods = "dp-sgd dp-adam dp-adam-debiased dp-adam-jme dp-adam-joint-clip"},
    {.command = "fit", .name = "one_unit", .kind = K::flag,
     .default_text = "off: the feature scale is per-column or given",
     .help = "classify: every feature column is in one unit (pixels, counts of one kind): the "
             "classifier may standardise by one private scale (the median row norm) when the "
             "per-column plan cannot",
     .methods = "dp-sgd dp-adam dp-adam-debiased dp-adam-jme dp-adam-joint-clip"},
    {.command = "fit", .name = "lambda", .lo = 0, .default_text = "1 (the paper's Table 4)",
     .help = "classify: JME scaling", .methods = "dp-adam-jme"},
    {.command = "fit", .name = "tau", .lo = 0, .default_text = "0.5 (the paper's Table 4)",
     .help = "classify: joint-clip scaling", .methods = "dp-adam-joint-clip"},
    {.command = "fit", .name = "second_moment_floor", .lo = 0, .lo_closed = true,
     .default_text = "0 (adam, dp-adam), else the variant's Adam epsilon",
     .help = "classify: clamp of Adam's v-hat from below (docs/proofs/training.md)"},
    {.command = "fit", .name = "n_public", .kind = K::integer, .lo = 1, .hi = 549755813888,
     .lo_closed = true, .default_text = "required for a private optimizer on CSV (fashion-mnist: "
     "60000)",
     .help = "classify: the public number of training rows: the sampling rate is --batch-size / "
             "N and the steps --epochs x N / --batch-size, since under add/remove the exact row "
             "count is private"},
    // The bounds (scale/bounds.hpp).
    {.command = "bounds", .name = "norm_quantile", .lo = 0, .hi = 1,
     .default_text = "absent: no norm quantile",
     .help = "also release this quantile of the row norms (a clip)"},
    {.command = "bounds", .name = "norm_share", .lo = 0, .hi = 1, .default_text = "0.25",
     .help = "fraction of the budget for the norm quantile"},
    {.command = "bounds", .name = "norm_centre", .kind = K::text, .default_text = "location",
     .help = "location (norms about the private location) or zero"},
    {.command = "bounds", .name = "coverage", .lo = 0, .hi = 0.5,
     .default_text = "absent: no clipping bounds",
     .help = "also release clipping bounds (clip_lo, clip_hi) designed to leave this fraction of "
             "the rows outside, half on each side"},
    {.command = "bounds", .name = "clip_share", .lo = 0, .hi = 1, .default_text = "0.5",
     .help = "fraction of the budget for the clipping bounds"},
    {.command = "bounds", .name = "widen", .lo = 0, .hi = 1e6, .hi_closed = true,
     .default_text = "4", .help = "bounds = location -/+ widen * scale"},
    {.command = "bounds", .name = "alpha", .lo = 0, .hi = 0.3, .lo_closed = true,
     .default_text = "0.05", .help = "tolerated corrupted fraction"},
    {.command = "bounds", .name = "beta", .lo = 0, .hi = 1, .default_text = "0.05",
     .help = "failure probability of the utility check"},
    {.command = "bounds", .name = "per_octave", .kind = K::integer, .lo = 1, .hi = 1024,
     .lo_closed = true, .hi_closed = true, .default_text = "32",
     .help = "log-grid points per octave"},
    // The moments (moments/estimator.hpp); `methods` as the mean's (those without read by every
    // method).
    {.command = "moments", .name = "method", .kind = K::text, .default_text = "jme",
     .help = "the moments' method"},
    {.command = "moments", .name = "workload", .kind = K::text, .default_text = "prefix",
     .help = "prefix, average, decay:BETA, window:K or adam:BETA"},
    {.command = "moments", .name = "factorization", .kind = K::text,
     .default_text = "auto: blt:M sized from the horizon, banded:4K for window:K",
     .help = "auto, input, output, sqrt (the dense square root, O(t) a step), banded:B or blt:M"},
    {.command = "moments", .name = "clip", .unit = "the data's units", .lo = 0,
     .default_text = "estimated privately from --scale-share",
     .help = "l2 clip norm of one row (JME's zeta); on a file, 3 x a private median of the row "
             "norms when absent; on a live stream (--steps), learnt privately per block of "
             "--clip-block rows (adaptive clip, stated on each line)"},
    {.command = "moments", .name = "clip_check_share", .lo = 0, .hi = 0.5, .lo_closed = true,
     .hi_closed = true, .default_text = "0.01; 0: no check",
     .help = "budget share of the private count of rows above a given --clip (file input)"},
    {.command = "moments", .name = "noise_multiplier", .lo = 0,
     .default_text = "absent (--epsilon instead)",
     .help = "noise of a sensitivity-1 query (instead of --epsilon)"},
    {.command = "moments", .name = "lambda", .lo = 0, .default_text = "required by lambda-jme",
     .help = "scaling of the second moment", .methods = "jme lambda-jme"},
    {.command = "moments", .name = "alpha", .lo = 0, .hi = 1, .default_text = "0.5",
     .help = "first-moment budget share", .methods = "ime"},
    {.command = "moments", .name = "tau", .lo = 0, .default_text = "1",
     .help = "scaling of the second moment in the concatenation", .methods = "cs"},
    {.command = "moments", .name = "diagonal", .kind = K::flag, .default_text = "off",
     .help = "release only the diagonal of the second moment"},
    {.command = "moments", .name = "on_norm", .kind = K::text, .default_text = "clip",
     .help = "rows above --clip: clip or reject"},
    // noise (mechanisms/noise_release.hpp); the mechanism is the Python function's name.
    {.command = "noise", .name = "sensitivity", .lo = 1e-280, .hi = 1e250, .lo_closed = true,
     .hi_closed = true, .default_text = "required",
     .help = "sensitivity of the whole vector: l1 for laplace, l2 for gaussian"},
    {.command = "noise", .name = "mechanism", .kind = K::text, .default_text = "required",
     .help = "laplace (pure DP) or gaussian (Python: the function dpstats.laplace or "
             "dpstats.gaussian)"},
    // The fit's task, loss, method, centring and paths (fit.hpp; the task's own options above).
    {.command = "fit", .name = "task", .kind = K::text,
     .default_text = "required, except that --users means user-level",
     .help = "user-level, classify or heavy-tailed"},
    {.command = "fit", .name = "loss", .kind = K::text,
     .default_text = "the task's: logistic (user-level), absolute (heavy-tailed)",
     .help = "loss function (choices depend on --task)"},
    {.command = "fit", .name = "method", .kind = K::text,
     .default_text = "the task's recommended method",
     .help = "algorithm (choices depend on --task)"},
    {.command = "fit", .name = "centre", .kind = K::flag,
     .default_text = "absent: centre when the features' scale is unknown and the rows suffice, "
                     "else a private offset check",
     .help = "user-level, heavy-tailed: always centre the features privately and fit an "
             "intercept (abstain when the rows are too few)"},
    {.command = "fit", .name = "no_centre", .kind = K::flag, .default_text = "off",
     .help = "user-level, heavy-tailed: never centre (fit x . w in the data's units, no "
             "intercept and no offset check; Python: centre=False)"},
    {.command = "fit", .name = "users", .kind = K::text,
     .default_text = "absent: user ids are column 1",
     .help = "user-level: the column (name or 1-based index) holding each row's user id, "
             "integers or text (e.g. airport codes); the label and features are --columns, or "
             "every other column in order (Python: users=, one id per row)"},
    {.command = "fit", .name = "data", .kind = K::text, .default_text = "absent: INPUT",
     .help = "classify: fashion-mnist or a CSV (label, features...) (Python: X, y)"},
    {.command = "fit", .name = "test", .kind = K::text, .default_text = "absent: no test set",
     .help = "classify: public test CSV for diagnostics.test_accuracy (Python: X_test, y_test)"},
    {.command = "fit", .name = "save_weights", .kind = K::text,
     .default_text = "absent: not written",
     .help = "classify: write the parameters as a 1 x P .npy (Python: the release's estimate)"},
    // The moments' centring and live stream (moments/estimator.hpp; Python's MomentEstimator).
    {.command = "moments", .name = "centre", .kind = K::flag, .default_text = "on",
     .help = "file input without --clip: centre the rows on a private location first when the "
             "table is long enough"},
    {.command = "moments", .name = "no_centre", .kind = K::flag, .default_text = "off",
     .help = "file input without --clip: do not centre the rows (Python: centre=False)"},
    {.command = "moments", .name = "steps", .kind = K::integer, .lo = 1, .lo_closed = true,
     .default_text = "absent: the rows of INPUT, read whole",
     .help = "the stream's horizon; read INPUT row by row as it arrives (a live stream; "
             "Python: MomentEstimator)"},
    {.command = "moments", .name = "clip_block", .kind = K::integer, .lo = 0, .lo_closed = true,
     .default_text = "0: the smallest block the budget supports",
     .help = "live stream without --clip: rows per adaptive-clip block (the first block is held "
             "and entered with the first clipped row)"},
    // The input layer every command that reads a table shares (apps/dpstats/cli.cpp;
    // Python: dpstats.read_table, whose path is INPUT).
    {.command = "input", .name = "input", .kind = K::text,
     .default_text = "required (fit --task classify: INPUT or --data)",
     .help = "CSV (RFC 4180), .npy or .npz file, or - for stdin (see docs/guide.md \"Reading "
             "tables\")",
     .cli = "INPUT"},
    {.command = "input", .name = "columns", .kind = K::text, .default_text = "all",
     .help = "columns to use, comma-separated: header names or 1-based indices (other columns "
             "may hold text; Python: names or 0-based indices)"},
    {.command = "input", .name = "header", .kind = K::flag, .default_text = "detected",
     .help = "the first line is column names (even if numeric)"},
    {.command = "input", .name = "no_header", .kind = K::flag, .default_text = "detected",
     .help = "the first line is data (Python: header=False)"},
    {.command = "input", .name = "drop_missing", .kind = K::flag,
     .default_text = "off: a missing value is an error",
     .help = "drop rows with a missing value (empty, NA, NaN) in a used column; n counts the "
             "rows kept"},
    {.command = "input", .name = "array", .kind = K::text, .default_text = "the only one",
     .help = ".npz input: the array to read"},
    {.command = "input", .name = "max_bytes", .kind = K::integer, .lo = 1, .hi = 1e18,
     .lo_closed = true, .hi_closed = true, .default_text = "4 GiB",
     .help = "limit on the input's bytes and on the parsed values' bytes",
     .cli = "--max-input-bytes"},
    {.command = "input", .name = "max_line_bytes", .kind = K::integer, .lo = 1,
     .hi = 4294967295.0, .lo_closed = true, .hi_closed = true, .default_text = "16 MiB",
     .help = "CSV: limit on one record's bytes"},
    {.command = "input", .name = "shards", .kind = K::flag, .default_text = "off",
     .help = "INPUT and the files after it are shards of one table, in order (a quoted glob "
             "such as 'part_*.csv' expands in sorted order); under mpirun each rank reads a "
             "contiguous block of them (docs/guide.md \"Running on a cluster\"; Python: each "
             "rank's rows with comm=)"},
    {.command = "input", .name = "more", .kind = K::text, .default_text = "none",
     .help = "--shards: further shard files or globs", .cli = "MORE"},
    // The privacy calculator (apps/dpstats/cmd_account.cpp; Python dpstats.account): its
    // --epsilon and --delta are a target or a per-mechanism loss, not a release's budget.
    {.command = "account calibrate", .name = "mechanism", .kind = K::text,
     .default_text = "required", .help = "laplace or gaussian"},
    {.command = "account calibrate", .name = "sensitivity", .lo = 0, .default_text = "required",
     .help = "l1 (laplace) or l2 (gaussian) sensitivity"},
    {.command = "account calibrate", .name = "epsilon", .lo = 0, .default_text = "required",
     .help = "the target epsilon"},
    {.command = "account calibrate", .name = "delta", .lo = 0, .hi = 1, .lo_closed = true,
     .default_text = "0 (laplace); required in (0, 1) by gaussian", .help = "the target delta"},
    {.command = "account convert", .name = "rho", .lo = 0,
     .default_text = "absent (--mu instead)", .help = "rho of rho-zCDP"},
    {.command = "account convert", .name = "mu", .lo = 0,
     .default_text = "absent (--rho instead)", .help = "mu of mu-GDP"},
    {.command = "account convert", .name = "delta", .lo = 0, .hi = 1,
     .default_text = "required", .help = "target delta"},
    {.command = "account compose", .name = "loss", .kind = K::text,
     .default_text = "absent: the k-fold form",
     .help = "a loss, repeatable: pure:EPS, approx:EPS,DELTA, zcdp:RHO, gdp:MU, "
             "gaussian:sigma=S[,sensitivity=D], laplace:scale=B[,sensitivity=D], "
             "subsampled-gaussian:q=Q,sigma=S[,steps=T]; each may end in ,times=K (docs/guide.md; "
             "Python: a list of them in place of epsilon)"},
    {.command = "account compose", .name = "epsilon", .lo = 0,
     .default_text = "required by the k-fold form", .help = "per-mechanism epsilon (k-fold form)"},
    {.command = "account compose", .name = "delta", .lo = 0, .hi = 1, .lo_closed = true,
     .default_text = "required",
     .help = "per-mechanism delta (k-fold form), or the target delta (with --loss)"},
    {.command = "account compose", .name = "times", .kind = K::integer, .lo = 1, .hi = 1e15,
     .lo_closed = true, .hi_closed = true, .default_text = "required by the k-fold form",
     .help = "number of mechanisms k (k-fold form)"},
    {.command = "account compose", .name = "delta_slack", .lo = 0, .hi = 1,
     .default_text = "required by the k-fold form",
     .help = "extra delta of advanced composition (k-fold form)"},
    {.command = "account compose", .name = "accountant", .kind = K::text, .default_text = "best",
     .help = "with --loss: best (the tighter), pld or rdp"},
    {.command = "account dp-sgd", .name = "sampling_rate", .lo = 0, .hi = 1, .hi_closed = true,
     .default_text = "required", .help = "Poisson sampling rate q"},
    {.command = "account dp-sgd", .name = "noise_multiplier", .lo = 0,
     .default_text = "absent (--epsilon instead)", .help = "sigma / clip"},
    {.command = "account dp-sgd", .name = "epsilon", .lo = 0,
     .default_text = "absent (--noise-multiplier instead)",
     .help = "target epsilon (gives the noise multiplier)"},
    {.command = "account dp-sgd", .name = "steps", .kind = K::integer, .lo = 1, .hi = 1e15,
     .lo_closed = true, .hi_closed = true, .default_text = "required",
     .help = "number of steps T"},
    {.command = "account dp-sgd", .name = "delta", .lo = 0, .hi = 1, .default_text = "required",
     .help = "target delta"},
    {.command = "account dp-sgd", .name = "accountant", .kind = K::text, .default_text = "best",
     .help = "best (the tighter), pld or rdp"},
    // `budget init` (apps/dpstats/cmd_budget.cpp; Python dpstats.Budget): the file's total.
    {.command = "budget init", .name = "file", .kind = K::text, .default_text = "required",
     .help = "the file to create (refuses to overwrite; Python: Budget.save(path))",
     .cli = "FILE"},
    {.command = "budget init", .name = "epsilon", .lo = 0,
     .default_text = "absent (--rho or --mu instead)", .help = "total epsilon (with --delta)"},
    {.command = "budget init", .name = "delta", .lo = 0, .hi = 1, .lo_closed = true,
     .default_text = "0: pure DP", .help = "total delta"},
    {.command = "budget init", .name = "rho", .lo = 0, .default_text = "absent",
     .help = "a zCDP total rho (accountant zcdp)"},
    {.command = "budget init", .name = "mu", .lo = 0, .default_text = "absent",
     .help = "a GDP total mu (accountant gdp)"},
    {.command = "budget init", .name = "accountant", .kind = K::text, .default_text = "basic",
     .help = "basic (pure and approximate releases), zcdp, gdp, rdp (every kind, subsampled "
             "training included) or pld"},
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

MethodInfo declared_method(std::string_view command, std::string_view name,
                           std::string_view summary, std::vector<std::string_view> shared) {
  MethodInfo out{name, summary, std::move(shared)};
  for (const auto& d : kOptions) {
    if (d.command != command || command.empty()) continue;
    for (std::size_t at = 0; at < d.methods.size();) {
      const std::size_t end = std::min(d.methods.find(' ', at), d.methods.size());
      if (d.methods.substr(at, end - at) == name) out.options.push_back(d.name);
      at = end + 1;
    }
  }
  return out;
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
