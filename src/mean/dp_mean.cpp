#include "dpstats/mean/dp_mean.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/mean/clipped_sum.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/range.hpp"
#include "dpstats/privacy/budget.hpp"

namespace dpstats {

Release<Vector> dp_mean(const ConstMatrixRef& X, const DpMeanOptions& o, Rng& rng) {
  check_epsilon(o.epsilon);
  check_delta_positive(o.delta);
  check_positive(o.sigma, "sigma");
  require(o.zeta > 0 && o.zeta < 1, fmt::format("zeta must be in (0, 1), got {}", o.zeta));
  require(o.range_share > 0 && o.range_share < 1,
          fmt::format("range_share must be in (0, 1), got {}", o.range_share));
  check_data(X);

  const auto n = static_cast<std::int64_t>(X.rows());
  const auto d = static_cast<std::size_t>(X.cols());
  Budget budget(PrivacyLoss::approximate(o.epsilon, o.delta), Accountant::basic);
  Release<Vector> r;
  r.seeded = rng.seeded();
  r.noise = o.noise;
  r.privacy.certified = o.noise == NoiseMode::secure;

  // Step 1 (card §2.11): private range with a share of the budget.
  RangeOptions ro;
  ro.epsilon = o.epsilon * o.range_share;
  ro.delta = o.delta * o.range_share;
  ro.sigma = o.sigma;
  ro.zeta = o.zeta;
  // Charged before it runs, whatever it returns.
  budget.spend(q_range_entry(ro, d));
  const auto range = q_range(X, ro, rng);

  if (!range) {
    r.status = Status::abstained;
    r.diagnostics["reason"] = "q_range found no populated bin in some coordinate";
  } else {
    // Step 2: clip to Box(x̄, B) = x̄ + [-B/2, B/2]^d (card D12) and sum exactly.
    const Vector lower = range->centre.array() - range->side / 2;
    const QuantisedSum qs = quantised_clipped_sum(X, lower, range->side, o.threads);
    // Step 3: Gaussian noise with the rest of the budget; l2 sensitivity sqrt(d)·Q in sum units
    // (= B·sqrt(d)/n on the mean scale).
    auto gauss = GaussianMechanism::from_epsilon_delta(
        std::sqrt(static_cast<double>(d)) * qs.quantum, remainder_after(o.epsilon, ro.epsilon),
        remainder_after(o.delta, ro.delta), d, o.noise);
    budget.spend(in_output_units(gauss.ledger_entry("clipped mean"),
                                 qs.width / (static_cast<double>(n) * qs.quantum)));
    r.estimate = qs.to_mean(gauss.apply(qs.sums, rng), n);
    r.diagnostics["box_side"] = range->side;
    r.diagnostics["noise_scale"] =
        gauss.sigma() * qs.width / (static_cast<double>(n) * qs.quantum);
  }

  const PrivacyLoss spent = budget.spent();
  r.privacy.epsilon = spent.epsilon;
  r.privacy.delta = spent.delta;
  r.ledger = budget.ledger();
  r.diagnostics["range_share"] = o.range_share;
  return r;
}

}  // namespace dpstats
