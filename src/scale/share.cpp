// Splitting a share over k pure-DP calls, and all-or-nothing charging (share.hpp).
#include "dpstats/scale/share.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"

namespace dpstats {

void check_share(const PrivacyLoss& share, std::string_view name) {
  if (share.kind == LossKind::pure) {
    check_epsilon(share.epsilon, fmt::format("{}.epsilon", name));
  } else if (share.kind == LossKind::zcdp) {
    check_positive(share.rho, fmt::format("{}.rho", name));
    require(share.delta == 0, "{}.delta must be 0 for a zcdp share, got {}", name,
            format_number(share.delta));
  } else {
    throw InvalidArgument(fmt::format(
        "{} must be a pure epsilon or a zcdp rho share, got a {} loss ({}); convert an "
        "(epsilon, delta) total to rho with epsilon_delta_to_zcdp first",
        name, to_string(share.kind), share.describe()));
  }
}

double per_call_epsilon(const PrivacyLoss& share, std::size_t calls) {
  check_share(share);
  require(calls >= 1, "calls must be >= 1, got {}", calls);
  const double k = static_cast<double>(calls);
  double e = share.kind == LossKind::pure ? share.epsilon / k
                                          : std::sqrt(2 * share.rho / k) * (1 - 0x1p-39);
  // Round down until k calls compose within the share exactly: fma gives the sign of
  // e k - epsilon without rounding; for rho, e^2/2 k is checked with a relative margin of 2^-40
  // over its rounding (a few ulps).
  if (share.kind == LossKind::pure) {
    while (e > 0 && std::fma(e, k, -share.epsilon) > 0) e = std::nextafter(e, 0.0);
  } else {
    while (e > 0 && e * e / 2 * k * (1 + 0x1p-40) > share.rho) e = std::nextafter(e, 0.0);
  }
  require(e > 0, "the share {} is too small for {} calls", share.describe(), calls);
  return e;
}

double units_epsilon(const PrivacyLoss& share, std::size_t units, std::size_t total) {
  check_share(share);
  require(units >= 1 && units <= total, "units must be in [1, total = {}], got {}", total, units);
  const double part = static_cast<double>(units) / static_cast<double>(total) * (1 - 0x1p-45);
  return share.kind == LossKind::pure ? per_call_epsilon(PrivacyLoss::pure(share.epsilon * part), 1)
                                      : per_call_epsilon(PrivacyLoss::zcdp(share.rho * part), 1);
}

PlannedShare plan_share(const std::function<Reliability(double share)>& usable_at,
                        const SharePolicy& policy) {
  require(policy.floor > 0 && policy.floor <= policy.cap && policy.cap <= 1 && policy.margin >= 1,
          "share policy: need 0 < floor <= cap <= 1 and margin >= 1, got floor {}, cap {}, "
          "margin {}", format_number(policy.floor), format_number(policy.cap),
          format_number(policy.margin));
  PlannedShare out;
  out.policy = policy;
  note_checks_settled([&] { out.reliability = usable_at(policy.cap); });
  out.share = policy.cap;
  if (!out.reliability.usable) return out;
  note_checks_quietly([&] {
    // Bisection for the smallest usable share in (0, cap]: `hi` is usable, `lo` is not (or 0).
    double lo = 0, hi = policy.cap;
    for (int i = 0; i < 60 && hi - lo > 1e-6 * hi; ++i) {
      const double mid = (lo + hi) / 2;
      (usable_at(mid).usable ? hi : lo) = mid;
    }
    out.needed = hi;
    out.share = std::clamp(policy.margin * hi, policy.floor, policy.cap);
    out.reliability = usable_at(out.share);
  });
  out.usable = true;
  return out;
}

std::string planned_abstention(const PlannedShare& p) {
  return fmt::format("{} (at scale_share {}, the largest a plan gives; decided from n, d and the "
                     "budget before any row was read: nothing was charged)",
                     p.reliability.reason(), format_number(p.share));
}

nlohmann::json PlannedShare::json() const {
  nlohmann::json j = {
      {"value", share},
      {"source", "planned"},
      {"usable", usable},
      {"rule", fmt::format("from n, d and the budget only: {} x the smallest share whose rank "
                           "errors meet the reliability rule, within [{}, {}]",
                           format_number(policy.margin), format_number(policy.floor),
                           format_number(policy.cap))}};
  if (usable) j["smallest_usable"] = needed;
  return j;
}

}  // namespace dpstats
