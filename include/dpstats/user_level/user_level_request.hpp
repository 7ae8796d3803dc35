// The user-level task's own options as a user gives them (`dpstats fit --task user-level`,
// dpstats.fit(users=...)): one field per declared option (src/options.cpp, command "fit"),
// absent meaning the declaration's default. Listed once in visit_fields
// (dpstats/option_fields.hpp): the tool's flags, the Python keywords and the copy into
// UserLevelOptions' Alg3Options (copy_given) walk it.
#pragma once
#include <concepts>
#include <cstdint>
#include <optional>

#include "dpstats/user_level/user_level.hpp"

namespace dpstats::optimize {

struct UserLevelRequest {
  std::optional<std::int64_t> items_per_user;  // required: the public rows per user, m
  std::optional<double> smoothing_radius;
  std::optional<std::int64_t> users_per_step;
};

template <class R, class V>
  requires std::same_as<std::remove_cvref_t<R>, UserLevelRequest>
void visit_fields(R&& r, V&& v) {
  v("items_per_user", r.items_per_user);
  v("smoothing_radius", r.smoothing_radius);
  v("users_per_step", r.users_per_step);
}

// The options the request sets, written into o.alg3 (copy_given), once o.method and the fit
// options every task reads (steps, step_size, clip) are set: an option o.method does not read
// (its line in fit_methods(FitTask::user_level)) is an InvalidArgument naming both, the profile
// among them when `profile_given`.
void apply_request(const UserLevelRequest& r, UserLevelOptions& o, bool profile_given);

// r.items_per_user; absent, the InvalidArgument saying why it is required.
std::int64_t items_per_user(const UserLevelRequest& r);

}  // namespace dpstats::optimize
