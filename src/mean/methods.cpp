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
#include "dpstats/option_fields.hpp"
#include "dpstats/options.hpp"

namespace dpstats {
namespace {

// A registry line: the method, its summary, the shared options it reads (its own: their
// declarations' `methods`, options.hpp).
MethodInfo line(MeanMethod method, std::string_view summary,
                std::vector<std::string_view> shared) {
  return declared_method("mean", name_of(method), summary, std::move(shared));
}

const std::array<MethodInfo, 10>& registry() {
  using M = MeanMethod;
  const std::vector<std::string_view> prime_shared = {"profile", "scale_share", "threads"};
  static const std::array<MethodInfo, 10> methods = {{
      line(M::robust, "the robust mean's one entry (the default with alpha): PRIME, or PRIME-ht "
                      "when a private tail test finds the clean tail heavier than sub-Gaussian",
           {"scale_share", "threads"}),
      line(M::prime, "robust private mean (PRIME): up to a fraction alpha of rows may be "
                     "adversarial",
           prime_shared),
      line(M::prime_ht, "PRIME for heavy tails: clean rows need only a bounded covariance",
           prime_shared),
      line(M::filter, "private iterative filter, one direction per round (robust)", prime_shared),
      line(M::exp_time, "exponential-time robust mean, d = 1, a reference for tiny n",
           {"scale_share"}),
      line(M::dp_mean, "the PRIME paper's DP Mean baseline: private range, then a clipped mean "
                       "(not robust)",
           {"scale_share", "threads"}),
      line(M::bounded, "clipped mean with per-column bounds (estimated privately when absent)",
           {"scale_share", "threads"}),
      line(M::prime_boosted, "PRIME boosted to success probability 1 - boost_zeta (Remark 1): "
                             "disjoint parts, median-of-means selection",
           prime_shared),
      line(M::prime_ht_boosted, "PRIME-ht boosted the same way (Remark 1)", prime_shared),
      line(M::tukey_median, "private Tukey median (PRIME Alg. 14), d = 1 or the d = 2 grid, pure "
                            "epsilon-DP, exponential time; bounds = the candidate box (required)",
           {}),
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

// The run's target and controls, and every option the request sets under the field of the
// same name (dpstats/option_fields.hpp; an absent scale_share: the method plans it).
template <class O>
O options_of(const MeanRequest& r) {
  O o;
  o.privacy = r.privacy;
  o.run = r.run;
  copy_given(r, o);
  return o;
}

Release<Vector> run_prime(const RowsView& X, const MeanRequest& r, MeanMethod method,
                          Rng& rng, Budget* budget) {
  const auto o = options_of<PrimeOptions>(r);
  if (method == MeanMethod::prime) return prime(X, o, rng, budget);
  if (method == MeanMethod::robust) return robust_mean(X, o, rng, budget);
  if (method == MeanMethod::prime_ht) return prime_ht(X, o, rng, budget);
  // prime-boosted, prime-ht-boosted (mean/boosted.hpp): the base at the target on each part.
  const bool ht = method == MeanMethod::prime_ht_boosted;
  const int parts = boost_parts(r.boost_zeta.value_or(kDefaultBoostZeta));
  return boosted_release(
      X.matrix(), r.privacy, parts, ht ? "prime-ht" : "prime",
      [&](const ConstMatrixRef& part, Rng& g, Budget* b) {
        return ht ? prime_ht(part, o, g, b) : prime(part, o, g, b);
      },
      r.run.noise, rng, budget, r.run.comm);
}

Release<Vector> run_other(const ConstMatrixRef& X, const MeanRequest& r, MeanMethod method,
                          Rng& rng, Budget* budget) {
  if (method == MeanMethod::filter)
    return private_filter(X, options_of<PrivateFilterOptions>(r), rng, budget);
  if (method == MeanMethod::exp_time)
    return exp_time_mean(X, options_of<ExpTimeMeanOptions>(r), rng, budget);
  if (method == MeanMethod::tukey_median) {
    TukeyMedianOptions o;
    o.privacy = r.privacy;
    o.run = r.run;
    require(r.bounds.has_value(), "method 'tukey-median' needs bounds (--bounds): the candidate box");
    o.bounds = *r.bounds;
    return tukey_median(X, o, rng, budget);
  }
  if (method == MeanMethod::dp_mean)
    return dp_mean(X, options_of<DpMeanOptions>(r), rng, budget);
  return bounded_mean(X, options_of<BoundedMeanOptions>(r), rng, budget);
}

}  // namespace

std::span<const MethodInfo> mean_methods() { return registry(); }

std::string default_mean_method(bool alpha_given) {
  return std::string(name_of(alpha_given ? MeanMethod::robust : MeanMethod::bounded));
}

Release<Vector> run_mean(const RowsView& X, const MeanRequest& request, Rng& rng,
                         Budget* budget) {
  MeanRequest r = request;
  if (r.method.empty()) r.method = default_mean_method(r.alpha.has_value());
  const MethodInfo& m = find_method(mean_methods(), "mean", r.method);
  const MeanMethod method = parse_enum<MeanMethod>(m.name);  // the one parse of the name
  const std::vector<std::string> set = given_options(r);
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
    default: return run_other(X.matrix(), r, method, rng, budget);
  }
}

}  // namespace dpstats
