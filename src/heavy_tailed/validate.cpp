// fit_heavy_tailed's validate step: the options, the data, the ranks' agreement and the labels.
#include "dpstats/heavy_tailed/heavy_tailed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/l2_laplace.hpp"
#include "dpstats/solvers/adaptive_subgradient.hpp"
#include "dpstats/heavy_tailed/certificate.hpp"
#include "dpstats/solvers/exact_sum.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_clip.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_lens.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/geometry/ball.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/solvers/holdout.hpp"
#include "dpstats/solvers/standardize.hpp"

#include "heavy_tailed_internal.hpp"

namespace dpstats::optimize::heavy_tailed_detail {

bool final_gd(const HeavyTailedOptions& o) {
  return o.profile == Profile::practical && o.method == HeavyTailedMethod::lipschitz_extension &&
         o.final_solver.value_or(FinalSolver::clipped_gd) == FinalSolver::clipped_gd;
}

void check_positive_opt(const std::optional<double>& v, const char* name) {
  if (v) require(*v > 0 && std::isfinite(*v), fmt::format("{} must be finite and > 0, got {}", name, *v));
}

// Every option, before the data's values are read or noise drawn.
void validate_options(const HeavyTailedOptions& o) {
  validate(o.run);
  const bool gaussian = o.method == HeavyTailedMethod::dp_sgd;
  if (o.method != HeavyTailedMethod::non_private) {
    validate(o.privacy, gaussian ? DeltaRule::positive : DeltaRule::any);
  }
  if (!gaussian) {
    require(o.privacy.delta == 0, fmt::format("delta applies to method dp-sgd only (pure epsilon-DP "
                                              "methods have delta = 0), got {}", o.privacy.delta));
  }
  require(o.domain_radius > 0 && std::isfinite(o.domain_radius),
          fmt::format("domain_radius is required: the radius R of the ball W = B(0, R) that holds "
                      "the weights, in units of 1/feature (choose it from public knowledge of the "
                      "model); must be finite and > 0, got {}", o.domain_radius));
  require(o.moment_order >= 2 && std::isfinite(o.moment_order),
          fmt::format("moment_order must be a finite number >= 2, got {}", o.moment_order));
  check_positive_opt(o.moment_bound, "moment_bound");
  check_positive_opt(o.moment_bound_2, "moment_bound_2");
  require(o.scale_share > 0 && o.scale_share < 1,
          fmt::format("scale_share must be in (0, 1), got {}", o.scale_share));
  for (const auto& [v, name] : {std::pair{o.growth, "growth"}, std::pair{o.kappa, "kappa"},
                                std::pair{o.c_multiplier, "c_multiplier"},
                                std::pair{o.lambda_multiplier, "lambda_multiplier"},
                                std::pair{o.clip, "clip"}, std::pair{o.lambda, "lambda"},
                                std::pair{o.clip_tail_constant, "clip_tail_constant"},
                                std::pair{o.step_size, "step_size"}}) {
    check_positive_opt(v, name);
  }
  check_positive(o.huber_kappa, "huber_kappa");
  if (o.steps) require(*o.steps >= 1, fmt::format("steps must be >= 1, got {}", *o.steps));
  if (o.phases) require(*o.phases >= 1 && *o.phases <= 30,
                        fmt::format("phases must be in [1, 30], got {}", *o.phases));
  if (o.clip_budget_share) require(*o.clip_budget_share > 0 && *o.clip_budget_share < 1,
                                   fmt::format("clip_budget_share must be in (0, 1), got {}",
                                               *o.clip_budget_share));
  if (o.first_fraction) require(*o.first_fraction > 0 && *o.first_fraction < 1,
                                fmt::format("first_fraction must be in (0, 1), got {}",
                                            *o.first_fraction));
  if (o.holdout) {
    check_holdout(*o.holdout, o.holdout_loss_bound);
    require(o.holdout_share > 0 && o.holdout_share < 1 - 2 * o.scale_share,
            fmt::format("holdout_share must be in (0, 1 - 2 scale_share) (the centring and the "
                        "moment bound may each spend scale_share), got {}",
                        format_number(o.holdout_share)));
  }
  if (o.centre.value_or(false)) {
    require(o.method != HeavyTailedMethod::non_private && 2 * o.scale_share < 1,
            "centre = true needs a private method and 2 scale_share < 1 (the centring and the "
            "moment bound each spend scale_share)");
  }
  const bool le = o.method == HeavyTailedMethod::lipschitz_extension;
  require(le || (!o.inner && !o.final_solver && !o.final_clip_rule),
          "inner, final_solver and final_clip_rule apply to method lipschitz-extension only");
}

// `n`: the rows over all ranks (X holds this rank's shard, possibly empty when n >= 1).
void validate_data(const ConstMatrixRef& X, const Eigen::Ref<const Vector>& y, std::int64_t n) {
  require(n >= 1 && X.cols() >= 1, "data must have at least one row and one feature column");
  require(y.size() == X.rows(), "labels and features have different row counts (not shown)");
  require(X.allFinite(), "data must be finite (got a NaN or infinite entry)");
}

// Several ranks (options.run.comm): every private method. The noisy clipped GD methods' only
// data pass is the exact clipped gradient sum. The scale step runs over ranks: the private
// moment-bound estimate (one value per record, the scale layer's exact counts), the private
// centring (private_location over every rank's rows) and the offset check (exact integer counts).
// Output perturbation and lipschitz-extension gather the rows to rank 0 (rows_on_root), which runs
// the certified ERM solver (its floating-point Newton passes do not merge exactly across ranks),
// the final block's clip quantile and the noise; the final clipped-GD phase runs over the ranks.
// Refused: the Alg 2 double output perturbation inner solver (its localisation runs two solves
// and a lens search whose diagnostics are not broadcast) and non-private (a float reference
// solve, docs/guide.md "Heavy-tailed fits on several ranks").
void check_distributed(const HeavyTailedOptions& o, int ranks) {
  if (ranks == 1) return;
  require(o.method != HeavyTailedMethod::non_private,
          fmt::format("method non-private does not run on {} ranks (its reference solver sums "
                      "floating-point gradients and Hessians); run it on one rank", ranks));
  require(o.inner.value_or(InnerSolver::glm_one_stage) != InnerSolver::double_output_perturbation,
          fmt::format("inner double-output-perturbation does not run on {} ranks (its two "
                      "certified solves and lens search run on one process); use the default "
                      "inner solver, or run on one rank", ranks));
}

// Everything the ranks must agree on before the first collective.
std::string fingerprint(const HeavyTailedOptions& o, Eigen::Index d) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|d={}|centre={}|share={:a}",
                     name_of(o.method), name_of(o.profile), name_of(o.loss), o.huber_kappa,
                     o.privacy.epsilon, o.privacy.delta, o.domain_radius, o.moment_order,
                     o.moment_bound.value_or(-1), o.moment_bound_2.value_or(-1),
                     o.clip.value_or(-1), o.steps.value_or(-1), o.step_size.value_or(-1),
                     static_cast<int>(o.run.noise), d, o.centre ? (*o.centre ? 1 : 0) : -1,
                     o.scale_share) +
         fmt::format("|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", o.inner ? static_cast<int>(*o.inner) : -1,
                     o.final_solver ? static_cast<int>(*o.final_solver) : -1,
                     o.final_clip_rule ? static_cast<int>(*o.final_clip_rule) : -1,
                     o.phases.value_or(-1), o.first_fraction.value_or(-1),
                     o.clip_budget_share.value_or(-1), o.clip_tail_constant.value_or(-1),
                     o.lambda.value_or(-1), o.kappa.value_or(-1), o.growth.value_or(-1),
                     o.c_multiplier.value_or(-1), o.lambda_multiplier.value_or(-1)) +
         fmt::format("|h={:a}/{:a}/{:a}", o.holdout.value_or(-1), o.holdout_share,
                     o.holdout_loss_bound);
}

// checked_labels over every rank's labels: {0, 1} labels are mapped when every rank's are in
// {0, 1}, some are not ±1 and some are 0 (one rank's shard alone may hold only 1s).
Vector global_labels(Communicator& comm, const Eigen::Ref<const Vector>& y, GlmKind kind,
                     bool* mapped) {
  if (comm.size() == 1) return checked_labels(y, kind, mapped);
  *mapped = false;
  require(y.allFinite(), "labels must be finite (got a NaN or infinite label)");
  if (!binary_labels(kind)) return y;
  std::int64_t c[3] = {0, 0, 0};  // not ±1, not {0, 1}, zeros
  for (Eigen::Index i = 0; i < y.size(); ++i) {
    c[0] += (y[i] != 1 && y[i] != -1);
    c[1] += (y[i] != 0 && y[i] != 1);
    c[2] += (y[i] == 0);
  }
  comm.allreduce_sum(c);
  if (c[0] == 0) return y;
  require(c[1] == 0 && c[2] > 0,
          fmt::format("labels must be -1 or +1 for the {} loss (labels in {{0, 1}} are mapped "
                      "0 -> -1, 1 -> +1); got a label outside both sets", name_of(kind)));
  *mapped = true;
  return (2 * y.array() - 1).matrix();
}

}  // namespace dpstats::optimize::heavy_tailed_detail
