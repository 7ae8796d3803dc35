// The moments command's declared options (src/options.cpp, command "moments") as one request, as
// a user gives them: an absent option is MomentsOptions' default. Listed once in visit_fields
// (dpstats/option_fields.hpp): the tool's flags (add_request_options), the Python keywords
// (request_keywords) and the copy into MomentsOptions walk it. The method's name, the horizon
// --steps (the data's rows, or the live stream's option) and --no-centre (centre = false) are
// the callers'; which method reads lambda, alpha and tau is their declarations' `methods`
// (make_config's check).
#pragma once
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "dpstats/moments/estimator.hpp"
#include "dpstats/option_fields.hpp"
#include "dpstats/privacy/neighbouring_names.hpp"

namespace dpstats::moments {

struct MomentsRequest {
  std::optional<std::string> workload, factorization;  // specs with a parameter ("decay:0.9")
  std::optional<double> clip;
  std::optional<std::int64_t> clip_block;
  std::optional<bool> centre;
  std::optional<double> clip_check_share, noise_multiplier, lambda, alpha, tau;
  std::optional<bool> diagonal;
  std::optional<NormPolicy> on_norm;
  // Shared (the tool's add_release_options).
  std::optional<double> rho, scale_share;
  std::optional<Neighbouring> neighbouring;
  std::optional<Profile> profile;
};

template <class R, class V>
  requires std::same_as<std::remove_cvref_t<R>, MomentsRequest>
void visit_fields(R&& r, V&& v) {
  v("workload", r.workload);
  v("factorization", r.factorization);
  v("clip", r.clip);
  v("clip_block", r.clip_block);
  v("centre", r.centre);
  v("clip_check_share", r.clip_check_share);
  v("noise_multiplier", r.noise_multiplier);
  v("lambda", r.lambda);
  v("alpha", r.alpha);
  v("tau", r.tau);
  v("diagonal", r.diagonal);
  v("on_norm", r.on_norm);
  v("rho", r.rho);
  v("scale_share", r.scale_share);
  v("neighbouring", r.neighbouring);
  v("profile", r.profile);
}

// MomentsOptions' fields under the request's names: what copy_given writes.
template <class O, class V>
  requires std::same_as<std::remove_cvref_t<O>, MomentsOptions>
void visit_fields(O&& o, V&& v) {
  v("workload", o.workload);
  v("factorization", o.factorization);
  v("clip", o.clip);
  v("clip_block", o.clip_block);
  v("centre", o.centre);
  v("clip_check_share", o.clip_check_share);
  v("noise_multiplier", o.noise_multiplier);
  v("lambda", o.lambda);
  v("alpha", o.alpha);
  v("tau", o.tau);
  v("diagonal", o.diagonal);
  v("on_norm", o.on_norm);
  v("rho", o.rho);
  v("scale_share", o.scale_share);
  v("neighbouring", o.neighbouring);
  v("profile", o.profile);
}

// The options `method` runs with on `steps` rows of `dim` columns for `request` (privacy and run
// are the caller's); make_config checks them.
inline MomentsOptions moments_options(Method method, const MomentsRequest& request,
                                      std::size_t steps, std::size_t dim) {
  MomentsOptions o;
  o.method = method;
  o.steps = steps;
  o.dim = dim;
  copy_given(request, o);
  return o;
}

}  // namespace dpstats::moments
