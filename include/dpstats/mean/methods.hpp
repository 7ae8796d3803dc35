// The mean command's one method registry and dispatcher: the tool (apps/dpstats/cmd_mean.cpp)
// and the Python module (python/src/module.cpp) both call run_mean, so a method name, the
// options it reads and the "does not apply" errors are written once.
#pragma once
#include <concepts>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dpstats/data/checked_rows.hpp"
#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/profile.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/registry.hpp"
#include "dpstats/release.hpp"
#include "dpstats/run_control.hpp"

namespace dpstats {

// robust, prime, prime-ht, filter, exp-time, dp-mean, bounded, prime-boosted, prime-ht-boosted,
// tukey-median.
std::span<const MethodInfo> mean_methods();
// The method of a request that names none: "robust" when alpha is given (the user declared
// corrupted rows), otherwise "bounded" (the clipped mean on private clipping bounds when none
// are given; issue 30).
std::string default_mean_method(bool alpha_given);

// One mean request in the library's vocabulary. Unset optionals take the method's default; an
// option set for a method that does not read it is an InvalidArgument naming both spellings.
struct MeanRequest {
  std::string method;  // empty: default_mean_method(alpha.has_value())
  PrivacyTarget privacy;
  std::optional<Profile> profile;
  RunControl run;
  std::optional<double> alpha;
  std::optional<std::vector<double>> scale;
  std::optional<double> scale_share;
  std::optional<std::vector<double>> bounds;
  std::optional<double> failure_probability;
  std::optional<double> topk_multiplier;
  std::optional<double> clip_check_share;  // supplied scale or bounds: the clipped-row count
  std::optional<int> T1, T2, T;
  std::optional<bool> fallback;
  std::optional<bool> uncertified_window;
  std::optional<double> boost_zeta;  // *-boosted: target failure probability, in (0, 1)
};

// The request's options under their declared names (dpstats/option_fields.hpp): the options it
// sets, the tool's flags, the Python keywords and the copy into each method's options struct
// all walk this list.
template <class R, class V>
  requires std::same_as<std::remove_cvref_t<R>, MeanRequest>
void visit_fields(R&& r, V&& v) {
  v("alpha", r.alpha);
  v("profile", r.profile);
  v("scale", r.scale);
  v("scale_share", r.scale_share);
  v("bounds", r.bounds);
  v("failure_probability", r.failure_probability);
  v("topk_multiplier", r.topk_multiplier);
  v("clip_check_share", r.clip_check_share);
  v("T1", r.T1);
  v("T2", r.T2);
  v("T", r.T);
  v("fallback", r.fallback);
  v("uncertified_window", r.uncertified_window);
  v("boost_zeta", r.boost_zeta);
}

inline constexpr double kDefaultBoostZeta = 0.05;

// Validates the request (method name, options that apply, alpha where required) and runs it.
Release<Vector> run_mean(const RowsView& X, const MeanRequest& request, Rng& rng,
                         Budget* budget = nullptr);

}  // namespace dpstats
