#include "dpstats/solvers/fit_registry.hpp"

#include "dpstats/error.hpp"

namespace dpstats::optimize {
namespace {

#define DPSTATS_UL_COMMON "loss", "epsilon", "delta", "domain_radius", "feature_bound", \
                          "label_bound", "scale_share", "items_per_user"
const std::vector<MethodInfo> kUserLevel = {
    {"dp-gd-user", "full-batch DP-GD on per-user clipped mean gradients (recommended)",
     {DPSTATS_UL_COMMON, "steps", "step_size", "clip"}},
    {"dp-gd-filter", "DP-GD with a certified soft filter of per-user gradients around a private "
     "centre (robust to outlying users)", {DPSTATS_UL_COMMON, "steps", "step_size", "clip"}},
    {"dp-sgd-user", "one pass of DP-SGD over disjoint user batches",
     {DPSTATS_UL_COMMON, "steps", "step_size", "clip"}},
    {"dp-sgd-group", "item-level DP-SGD made user-level by group privacy",
     {DPSTATS_UL_COMMON, "steps", "step_size", "clip"}},
    {"phased-sgd", "Alg 1: phased SGD with outlier removal and output perturbation",
     {DPSTATS_UL_COMMON, "profile"}},
    {"accelerated", "Alg 3 with Alg 2 inside: phased ERM with accelerated minibatch SGD",
     {DPSTATS_UL_COMMON, "profile", "steps", "step_size", "clip", "users_per_step"}},
    {"nonsmooth", "randomized smoothing + Alg 3 (hinge-type losses)",
     {DPSTATS_UL_COMMON, "profile", "steps", "step_size", "clip", "users_per_step",
      "smoothing_radius"}},
    {"non-private", "one-pass SGD, no privacy (reference)",
     {"loss", "domain_radius", "feature_bound", "label_bound", "items_per_user", "step_size"}},
};
#undef DPSTATS_UL_COMMON

#define DPSTATS_HT_COMMON "loss", "epsilon", "domain_radius", "moment_order", "moment_bound", \
                          "moment_bound_2", "scale_share", "profile"
const std::vector<MethodInfo> kHeavyTailed = {
    {"lipschitz-extension",
     "Pop-Localize with certified Lipschitz-extension output perturbation, then localized noisy "
     "clipped GD (pure epsilon-DP; its certificate's abort bit is not covered: certified false)",
     {DPSTATS_HT_COMMON, "phases", "inner", "final_clip_rule", "steps", "step_size", "clip"}},
    {"output-perturbation", "one certified Lipschitz-extension output perturbation (pure DP)",
     {DPSTATS_HT_COMMON, "clip"}},
    {"clipped-gd", "noisy clipped full-batch GD with l2-Laplace noise (default, pure DP, no abort)",
     {DPSTATS_HT_COMMON, "steps", "step_size", "clip"}},
    {"dp-sgd", "noisy clipped GD with Gaussian noise ((epsilon, delta) baseline)",
     {DPSTATS_HT_COMMON, "delta", "steps", "step_size", "clip"}},
    {"non-private", "unclipped ERM, no privacy (reference)",
     {"loss", "domain_radius", "moment_order", "moment_bound", "profile"}},
};
#undef DPSTATS_HT_COMMON

}  // namespace

std::span<const MethodInfo> fit_methods(FitTask task) {
  switch (task) {
    case FitTask::user_level: return kUserLevel;
    case FitTask::heavy_tailed: return kHeavyTailed;
    case FitTask::classify: break;
  }
  throw InvalidArgument("fit_methods: the classify task's methods live with the training code");
}

}  // namespace dpstats::optimize
