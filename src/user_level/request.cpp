#include "dpstats/user_level/user_level_request.hpp"

#include "dpstats/error.hpp"
#include "dpstats/option_fields.hpp"
#include "dpstats/registry.hpp"
#include "dpstats/solvers/fit_registry.hpp"

namespace dpstats::optimize {

void apply_request(const UserLevelRequest& r, UserLevelOptions& o, bool profile_given) {
  std::vector<std::string> given = given_options(r);
  for (const auto& [set, name] : {std::pair{o.steps.has_value(), "steps"},
                                  std::pair{o.step_size.has_value(), "step_size"},
                                  std::pair{o.clip.has_value(), "clip"},
                                  std::pair{profile_given, "profile"}})
    if (set) given.emplace_back(name);
  const auto registry = fit_methods(FitTask::user_level);
  check_options_apply(registry, find_method(registry, "fit --task user-level", name_of(o.method)),
                      given);
  copy_given(r, o.alg3);
}

std::int64_t items_per_user(const UserLevelRequest& r) {
  require(r.items_per_user.has_value(),
          "items_per_user is required for the user-level task (--items-per-user m): the "
          "public number of rows each user contributes (each user's rows are truncated to it, or "
          "repeated); it is not taken from the data, whose row count is private when a user's "
          "whole data may change");
  return *r.items_per_user;
}

}  // namespace dpstats::optimize
