// The moments methods' names and the config: built from the options, validated before anything is
// planned or drawn.
#include "dpstats/moments/estimator.hpp"
#include "blt.hpp"
#include "detail.hpp"
#include "dpstats/moments/theory.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/options.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/privacy/neighbouring_names.hpp"
#include "dpstats/seam.hpp"

namespace dpstats::moments {

// Each method's own options are those whose declaration names it (src/options.cpp).
std::span<const MethodInfo> moments_methods() {
  static const MethodInfo methods[] = {
      declared_method("moments", "jme",
                      "joint moment estimation: one mechanism, the second moment nearly free "
                      "(default)",
                      {}),
      declared_method("moments", "lambda-jme",
                      "JME with a chosen scaling lambda of the second moment", {}),
      declared_method("moments", "ime",
                      "independent mechanisms, a share alpha of the budget on the first moment",
                      {}),
      declared_method("moments", "cs",
                      "one strategy on the concatenation, second moment scaled by tau", {}),
      declared_method("moments", "pp", "first moment only; the second by squaring it (biased)",
                      {}),
      declared_method("moments", "pp-debiased", "PP with the noise bias subtracted", {}),
  };
  return methods;
}

MomentsConfig make_config(const MomentsOptions& o) {
  const MethodInfo& method = find_method(moments_methods(), "moments", name_of(o.method));
  std::vector<std::string> given;
  if (o.lambda) given.emplace_back("lambda");
  if (o.alpha) given.emplace_back("alpha");
  if (o.tau) given.emplace_back("tau");
  check_options_apply(moments_methods(), method, given);
  MomentsConfig c = make_config(o.steps, o.dim, o.method, o.workload, o.factorization, o.diagonal);
  c.clip = o.clip;
  c.privacy = o.privacy;
  c.rho = o.rho;
  c.noise_multiplier = o.noise_multiplier;
  c.lambda = o.lambda;
  c.alpha = o.alpha.value_or(c.alpha);
  c.tau = o.tau.value_or(c.tau);
  c.scale_share = o.scale_share;
  c.clip_quantile = o.clip_quantile;
  c.clip_margin = o.clip_margin;
  c.clip_check_share = o.clip_check_share;
  c.clip_block = o.clip_block;
  c.centre = o.centre;
  c.on_norm = o.on_norm;
  c.neighbouring = o.neighbouring;
  c.profile = o.profile;
  c.run = o.run;
  validate(c.run);
  return c;
}

MomentsConfig make_config(std::size_t steps, std::size_t dim, const std::string& method,
                          const std::string& workload, const std::string& factorization,
                          bool diagonal) {
  return make_config(steps, dim, parse_enum<Method>(method), workload, factorization, diagonal);
}

MomentsConfig make_config(std::size_t steps, std::size_t dim, Method method,
                          const std::string& workload, const std::string& factorization,
                          bool diagonal) {
  require(steps >= 1, "steps must be >= 1, got 0");
  require(dim >= 1, "dim must be >= 1, got 0");
  MomentsConfig c;
  c.steps = steps;
  c.dim = dim;
  c.method = method;
  c.form = diagonal ? SecondMomentForm::diagonal : SecondMomentForm::full;
  c.A1 = c.A2 = Workload::parse(workload, steps);
  c.C1 = c.C2 = Factorization::parse(factorization, c.A1);
  return c;
}

namespace {

// validate: every option of the config, before anything is planned or drawn. No silent unit
// clip: a missing clip is estimated privately, from the whole table (batch) or per block (live,
// where plan_live_clip refuses a stream too short for it).
void check_config(const MomentsConfig& c, bool /*batch*/) {
  // The live stream (rows pushed one at a time) runs in one process (docs/guide.md "Moments on
  // several ranks"); the batch API gathers the rows and replays rank 0's draws (batch.cpp).
  const int ranks = comm_or_single(c.run.comm).size();
  require(ranks == 1, fmt::format("the live moments stream does not run on {} ranks: each step is "
                                  "one pushed row; give the whole table to estimate_moments (the "
                                  "tool without --steps), which runs on ranks",
                                  ranks));
  require(c.steps >= 1, "steps must be >= 1, got 0");
  require(c.dim >= 1, "dim must be >= 1, got 0");
  // A row above a private clip must not throw: that would release a data-dependent bit.
  require(c.clip.has_value() || c.on_norm == NormPolicy::clip,
          "on_norm = reject needs a given clip (rows above an estimated clip are clipped)");
  require(c.clip_block <= c.steps,
          fmt::format("clip_block must be in [0, steps = {}], got {}", c.steps, c.clip_block));
  if (c.clip) {
    check_positive(*c.clip, "clip");
    require(*c.clip >= 0x1p-400 && *c.clip <= 0x1p400,
            fmt::format("clip must be in [2^-400, 2^400], got {}", format_number(*c.clip)));
  }
  for (const auto* w : {&c.A1, &c.A2})
    require(w->steps() == c.steps,
            fmt::format("workload {} has {} steps, the estimator {}", w->name(), w->steps(),
                        c.steps));
  for (const auto* f : {&c.C1, &c.C2})
    require(f->steps() == c.steps,
            fmt::format("factorization {} has {} steps, the estimator {}", f->name(), f->steps(),
                        c.steps));
  const int budgets =
      (c.privacy.epsilon != 0) + c.rho.has_value() + c.noise_multiplier.has_value();
  require(budgets == 1,
          "give exactly one of epsilon (with delta), rho or noise_multiplier (epsilon has no "
          "default)");
  if (c.privacy.epsilon != 0) validate(c.privacy, DeltaRule::positive);
  else check_delta_positive(c.privacy.delta);
  if (c.rho) check_positive(*c.rho, "rho");
  if (c.noise_multiplier) check_positive(*c.noise_multiplier, "noise_multiplier");
  require(c.scale_share > 0 && c.scale_share < 1,
          fmt::format("scale_share must be in (0, 1), got {}", format_number(c.scale_share)));
  require(c.clip_quantile > 0 && c.clip_quantile < 1,
          fmt::format("clip_quantile must be in (0, 1), got {}", format_number(c.clip_quantile)));
  require(c.clip_margin >= 1 && c.clip_margin <= 1e6,
          fmt::format("clip_margin must be in [1, 1e6], got {}", format_number(c.clip_margin)));
  require(c.clip_check_share >= 0 && c.clip_check_share <= 0.5,
          fmt::format("clip_check_share must be in [0, 0.5], got {}",
                      format_number(c.clip_check_share)));
  if (c.method != Method::lambda_jme)
    require(!c.lambda.has_value(), "lambda applies to method lambda-jme only");
  validate(c.run);
}

}  // namespace

namespace detail {

void validate_config(const MomentsConfig& c, bool batch) { check_config(c, batch); }

}  // namespace detail

}  // namespace dpstats::moments
