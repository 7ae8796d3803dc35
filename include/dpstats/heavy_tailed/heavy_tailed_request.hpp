// The heavy-tailed task's own options as a user gives them (`dpstats fit --task heavy-tailed`,
// dpstats.fit(task="heavy-tailed")): one field per declared option (src/options.cpp, command
// "fit"), absent meaning HeavyTailedOptions' default. Listed once in visit_fields
// (dpstats/option_fields.hpp): the tool's flags, the Python keywords and the copy into
// HeavyTailedOptions (copy_given) walk it.
#pragma once
#include <concepts>
#include <optional>

#include "dpstats/heavy_tailed/heavy_tailed.hpp"

namespace dpstats::optimize {

struct HeavyTailedRequest {
  std::optional<double> moment_order, moment_bound, moment_bound_2;
  std::optional<int> phases;
  std::optional<InnerSolver> inner;
  std::optional<FinalClipRule> final_clip_rule;
};

template <class R, class V>
  requires std::same_as<std::remove_cvref_t<R>, HeavyTailedRequest>
void visit_fields(R&& r, V&& v) {
  v("moment_order", r.moment_order);
  v("moment_bound", r.moment_bound);
  v("moment_bound_2", r.moment_bound_2);
  v("phases", r.phases);
  v("inner", r.inner);
  v("final_clip_rule", r.final_clip_rule);
}

// The options the request sets, written into `o` (copy_given), once o.method and the fit options
// every task reads (steps, step_size, clip) are set: an option o.method does not read (its
// line in fit_methods(FitTask::heavy_tailed)) is an InvalidArgument naming both. Whether delta
// applies is the library's validation (dp-sgd requires it; every other method is pure).
void apply_request(const HeavyTailedRequest& r, HeavyTailedOptions& o);

}  // namespace dpstats::optimize
