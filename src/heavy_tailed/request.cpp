#include "dpstats/heavy_tailed/heavy_tailed_request.hpp"

#include "dpstats/option_fields.hpp"
#include "dpstats/registry.hpp"
#include "dpstats/solvers/fit_registry.hpp"

namespace dpstats::optimize {

void apply_request(const HeavyTailedRequest& r, HeavyTailedOptions& o) {
  std::vector<std::string> given = given_options(r);
  for (const auto& [set, name] : {std::pair{o.steps.has_value(), "steps"},
                                  std::pair{o.step_size.has_value(), "step_size"},
                                  std::pair{o.clip.has_value(), "clip"}})
    if (set) given.emplace_back(name);
  const auto registry = fit_methods(FitTask::heavy_tailed);
  check_options_apply(registry, find_method(registry, "fit --task heavy-tailed", name_of(o.method)),
                      given);
  copy_given(r, o);
}

}  // namespace dpstats::optimize
