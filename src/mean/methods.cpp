// The mean command's registry and dispatcher (mean/methods.hpp).
#include "dpstats/mean/methods.hpp"

#include <fmt/format.h>

#include <array>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/boosted.hpp"
#include "dpstats/mean/bounded_mean.hpp"
#include "dpstats/mean/dp_mean.hpp"
#include "dpstats/mean/exp_time_mean.hpp"
#include "dpstats/mean/mean_method.hpp"
#include "dpstats/mean/prime.hpp"
#include "dpstats/mean/prime_ht.hpp"
#include "dpstats/mean/private_filter.hpp"
#include "dpstats/mean/robust.hpp"
#include "dpstats/mean/tukey_median.hpp"

namespace dpstats {
namespace {

#define DPSTATS_PRIME_OPTIONS                                                                   \
  "alpha", "profile", "scale", "scale_share", "failure_probability", "topk_multiplier", "T1", "T2", \
      "fallback", "threads"

const std::array<MethodInfo, 10>& registry() {
  static const std::array<MethodInfo, 10> methods = {{
      {name_of(MeanMethod::robust), "the robust mean's one entry (the default with alpha): PRIME, or PRIME-ht when "
                 "a private tail test finds the clean tail heavier than sub-Gaussian",
       {"alpha", "scale_share", "failure_probability", "topk_multiplier", "T1", "T2", "fallback",
        "threads"}},
      {name_of(MeanMethod::prime), "robust private mean (PRIME): up to a fraction alpha of rows may be adversarial",
       {"alpha", "profile", "scale", "scale_share", "failure_probability", "topk_multiplier",
        "T1", "T2", "fallback", "threads"}},
      {name_of(MeanMethod::prime_ht), "PRIME for heavy tails: clean rows need only a bounded covariance",
       {"alpha", "profile", "scale", "scale_share", "failure_probability", "topk_multiplier",
        "T1", "T2", "fallback", "threads"}},
      {name_of(MeanMethod::filter), "private iterative filter, one direction per round (robust)",
       {"alpha", "profile", "scale", "scale_share", "failure_probability", "topk_multiplier",
        "T", "threads"}},
      {name_of(MeanMethod::exp_time), "exponential-time robust mean, d = 1, a reference for tiny n",
       {"alpha", "scale", "scale_share", "failure_probability", "uncertified_window"}},
      {name_of(MeanMethod::dp_mean), "the PRIME paper's DP Mean baseline: private range, then a clipped mean "
                  "(not robust)",
       {"scale", "scale_share", "failure_probability", "threads"}},
      {name_of(MeanMethod::bounded), "clipped mean with per-column bounds (estimated privately when absent)",
       {"bounds", "scale_share", "threads"}},
      {name_of(MeanMethod::prime_boosted), "PRIME boosted to success probability 1 - boost_zeta (Remark 1): "
                        "disjoint parts, median-of-means selection",
       {DPSTATS_PRIME_OPTIONS, "boost_zeta"}},
      {name_of(MeanMethod::prime_ht_boosted), "PRIME-ht boosted the same way (Remark 1)",
       {DPSTATS_PRIME_OPTIONS, "boost_zeta"}},
      {name_of(MeanMethod::tukey_median), "private Tukey median (PRIME Alg. 14), d = 1 or the d = 2 grid, pure "
                       "epsilon-DP, exponential time; bounds = the candidate box (required)",
       {"bounds"}},
  }};
  return methods;
}

// The methods whose data passes run over ranks (RunControl::comm); the others refuse P > 1.
bool distributed(MeanMethod m) {
  switch (m) {
    case MeanMethod::exp_time:
    case MeanMethod::tukey_median: return false;
    default: return true;
  }
}

// The option names the request sets (the library's snake_case).
std::vector<std::string> given(const MeanRequest& r) {
  std::vector<std::string> out;
  auto add = [&](bool set, const char* name) {
    if (set) out.emplace_back(name);
  };
  add(r.alpha.has_value(), "alpha");
  add(r.profile.has_value(), "profile");
  add(r.scale.has_value(), "scale");
  add(r.scale_share.has_value(), "scale_share");
  add(r.bounds.has_value(), "bounds");
  add(r.failure_probability.has_value(), "failure_probability");
  add(r.topk_multiplier.has_value(), "topk_multiplier");
  add(r.T1.has_value(), "T1");
  add(r.T2.has_value(), "T2");
  add(r.T.has_value(), "T");
  add(r.fallback.has_value(), "fallback");
  add(r.uncertified_window.has_value(), "uncertified_window");
  add(r.boost_zeta.has_value(), "boost_zeta");
  return out;
}

template <class O>
void common(O& o, const MeanRequest& r) {
  o.privacy = r.privacy;
  o.run = r.run;
  o.scale_share = r.scale_share;  // absent: the method plans it from n, d and the target
}

template <class O>
void robust(O& o, const MeanRequest& r) {
  common(o, r);
  o.alpha = *r.alpha;
  o.scale = r.scale;
  if (r.profile) o.profile = *r.profile;
  if (r.failure_probability) o.failure_probability = *r.failure_probability;
  if (r.topk_multiplier) o.topk_multiplier = *r.topk_multiplier;
}

Release<Vector> run_prime(const ConstMatrixRef& X, const MeanRequest& r, MeanMethod method,
                          Rng& rng, Budget* budget) {
  PrimeOptions o;
  robust(o, r);
  o.T1 = r.T1.value_or(0);
  o.T2 = r.T2.value_or(0);
  o.fallback = r.fallback.value_or(true);
  if (method == MeanMethod::prime) return prime(X, o, rng, budget);
  if (method == MeanMethod::robust) return robust_mean(X, o, rng, budget);
  if (method == MeanMethod::prime_ht) return prime_ht(X, o, rng, budget);
  // prime-boosted, prime-ht-boosted (mean/boosted.hpp): the base at the target on each part.
  const bool ht = method == MeanMethod::prime_ht_boosted;
  const int parts = boost_parts(r.boost_zeta.value_or(kDefaultBoostZeta));
  return boosted_release(
      X, r.privacy, parts, ht ? "prime-ht" : "prime",
      [&](const ConstMatrixRef& part, Rng& g, Budget* b) {
        return ht ? prime_ht(part, o, g, b) : prime(part, o, g, b);
      },
      r.run.noise, rng, budget, r.run.comm);
}

Release<Vector> run_other(const ConstMatrixRef& X, const MeanRequest& r, MeanMethod method,
                          Rng& rng, Budget* budget) {
  if (method == MeanMethod::filter) {
    PrivateFilterOptions o;
    robust(o, r);
    o.T = r.T.value_or(0);
    return private_filter(X, o, rng, budget);
  }
  if (method == MeanMethod::exp_time) {
    ExpTimeMeanOptions o;
    common(o, r);
    o.alpha = *r.alpha;
    o.scale = r.scale;
    if (r.failure_probability) o.failure_probability = *r.failure_probability;
    o.window_resilience = r.uncertified_window.value_or(false);
    return exp_time_mean(X, o, rng, budget);
  }
  if (method == MeanMethod::tukey_median) {
    TukeyMedianOptions o;
    o.privacy = r.privacy;
    o.run = r.run;
    require(r.bounds.has_value(), "method 'tukey-median' needs bounds (--bounds): the candidate box");
    o.bounds = *r.bounds;
    return tukey_median(X, o, rng, budget);
  }
  if (method == MeanMethod::dp_mean) {
    DpMeanOptions o;
    common(o, r);
    o.scale = r.scale;
    if (r.failure_probability) o.failure_probability = *r.failure_probability;
    return dp_mean(X, o, rng, budget);
  }
  BoundedMeanOptions o;
  common(o, r);
  o.bounds = r.bounds;
  return bounded_mean(X, o, rng, budget);
}

#undef DPSTATS_PRIME_OPTIONS

}  // namespace

std::span<const MethodInfo> mean_methods() { return registry(); }

std::string default_mean_method(bool alpha_given) {
  return std::string(name_of(alpha_given ? MeanMethod::robust : MeanMethod::bounded));
}

Release<Vector> run_mean(const ConstMatrixRef& X, const MeanRequest& request, Rng& rng,
                         Budget* budget) {
  MeanRequest r = request;
  if (r.method.empty()) r.method = default_mean_method(r.alpha.has_value());
  const MethodInfo& m = find_method(mean_methods(), "mean", r.method);
  const MeanMethod method = parse_enum<MeanMethod>(m.name);  // the one parse of the name
  const std::vector<std::string> set = given(r);
  check_options_apply(mean_methods(), m, set);
  const bool needs_alpha = std::find(m.options.begin(), m.options.end(), "alpha") != m.options.end();
  require(!needs_alpha || r.alpha.has_value(),
          fmt::format("method '{}' needs alpha (--alpha): an upper bound on the fraction of "
                      "corrupted rows, e.g. 0.05",
                      m.name));
  const int ranks = r.run.comm ? r.run.comm->size() : 1;
  require(ranks == 1 || distributed(method),
          fmt::format("mean method '{}' does not run on several ranks yet (launched as {}); run it "
                      "in one process, or use a method that does (bounded, dp-mean, filter, prime, prime-ht, "
                      "prime-boosted, prime-ht-boosted, robust)",
                      m.name, ranks));
  switch (method) {
    case MeanMethod::robust:
    case MeanMethod::prime:
    case MeanMethod::prime_ht:
    case MeanMethod::prime_boosted:
    case MeanMethod::prime_ht_boosted: return run_prime(X, r, method, rng, budget);
    default: return run_other(X, r, method, rng, budget);
  }
}

}  // namespace dpstats
