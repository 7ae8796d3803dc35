// Composition of (epsilon, delta) guarantees. Reported epsilons and deltas are rounded up.
#include "dpstats/privacy/composition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "dpstats/error.hpp"

namespace dpstats {
namespace {

// Above this k the exact optimal composition falls back to the best of basic and advanced
// composition: lgamma's absolute error (a few ulp of log k!) would make the rounding margin of the
// exact sum loose, and k-fold composition of that many identical steps is better handled in zCDP.
constexpr long kOptimalMaxK = 10'000'000;

double round_up(double x) { return x + std::fabs(x) * 8 * DBL_EPSILON; }

void check_k(long k) { require(k >= 1, fmt::format("k must be >= 1, got {}", k)); }

void check_eps0(double eps0) { check_epsilon(eps0, "eps0"); }

// 1 - (1 - delta0)^k (1 - delta_slack), rounded up.
double composed_delta(double delta0, long k, double delta_slack) {
  const double log_keep = static_cast<double>(k) * std::log1p(-delta0) + std::log1p(-delta_slack);
  return std::min(1.0, round_up(-std::expm1(log_keep)));
}

// The arguments every k-fold self-composition takes.
void check_self_composition(double eps0, double delta0, long k) {
  check_eps0(eps0);
  check_delta(delta0, "delta0");
  check_k(k);
}

// The hockey-stick divergence of the k-fold composition of randomized response RR(eps0) at
// epsilon: with j = the number of flipped answers, the privacy loss is (k - 2j) eps0 and
//   delta(eps) = sum_{j : (k-2j) eps0 > eps} C(k,j) (e^{(k-j) eps0} - e^eps e^{j eps0}) / (1+e^eps0)^k.
// RR(eps0) dominates every (eps0, 0)-DP mechanism (Kairouz, Oh & Viswanath 2015), so this is the
// exact homogeneous composition; at eps = (k - 2l) eps0 it is KOV Thm 3.3's delta_l.
class RandomizedResponseComposition {
 public:
  RandomizedResponseComposition(double eps0, long k)
      : eps0_(eps0),
        k_(static_cast<double>(k)),
        log_k_fact_(std::lgamma(k_ + 1)),
        log_norm_(k_ * (eps0 + std::log1p(std::exp(-eps0)))),  // k log(1 + e^eps0), no overflow
        // lgamma and the products carry absolute errors of a few ulp of the largest exponent
        // (~ k (eps0 + log 2)), which exp turns into a relative error; bound it generously.
        margin_(1e-12 + 64 * DBL_EPSILON * (k_ * (eps0 + 1) + 1)) {}

  // An upper bound on delta(eps), eps >= 0.
  double delta_upper(double eps) const {
    // The largest j with (k - 2j) eps0 > eps; terms are summed from there down to j = 0.
    double j = std::floor((k_ - eps / eps0_) / 2) + 1;
    while (j >= 0 && loss(j) <= eps) j -= 1;
    double sum = 0;
    for (; j >= 0; j -= 1) {
      const double lw = log_weight(j);
      const double w = std::exp(lw);
      // The absolute error of expm1 near 0 (loss close to eps) is covered by the second term.
      sum += w * (-std::expm1(eps - loss(j)) + 4 * DBL_EPSILON * (loss(j) + eps));
      // The weights are log-concave in j: once they decrease towards j = 0 and are negligible
      // (or below e^-700, where exp underflows soon), the j remaining terms are each below
      // max(w, 1e-300).
      if (j >= 1 && log_weight(j - 1) < lw && (lw < -700 || w * j < 1e-20 * sum)) {
        sum += j * std::max(w, 1e-300);
        break;
      }
    }
    return sum * (1 + margin_);
  }

 private:
  double loss(double j) const { return (k_ - 2 * j) * eps0_; }
  // log( C(k, j) e^{(k-j) eps0} / (1 + e^eps0)^k ).
  double log_weight(double j) const {
    return log_k_fact_ - std::lgamma(j + 1) - std::lgamma(k_ - j + 1) + (k_ - j) * eps0_ - log_norm_;
  }

  double eps0_, k_, log_k_fact_, log_norm_, margin_;
};

}  // namespace

void ExactSum::add(double x) {
  require(std::isfinite(x), fmt::format("ExactSum: terms must be finite, got {}", x));
  std::size_t kept = 0;
  for (std::size_t j = 0; j < partials_.size(); ++j) {
    double y = partials_[j];
    if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
    const double hi = x + y;
    const double lo = y - (hi - x);  // exact: x + y = hi + lo (|x| >= |y|)
    if (lo != 0) partials_[kept++] = lo;
    x = hi;
  }
  partials_.resize(kept);
  if (x != 0) partials_.push_back(x);
}

void ExactSum::add_product(double a, double b) {
  const double p = a * b;
  add(p);
  add(std::fma(a, b, -p));  // exact: a * b = p + fma(a, b, -p)
}

double ExactSum::rounded_up() const {
  if (partials_.empty()) return 0;
  // Add the partials from the largest down until the addition is inexact; the sign of the first
  // nonzero rounding error is the sign of everything below it (the partials do not overlap).
  std::size_t j = partials_.size() - 1;
  double hi = partials_[j], lo = 0;
  while (j > 0) {
    const double x = hi, y = partials_[--j];
    hi = x + y;
    lo = y - (hi - x);
    if (lo != 0) break;
  }
  return lo > 0 ? std::nextafter(hi, INFINITY) : hi;
}

EpsilonDelta basic_composition(std::span<const EpsilonDelta> losses) {
  ExactSum eps, delta;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    const auto& l = losses[i];
    require(std::isfinite(l.epsilon) && l.epsilon >= 0,
            fmt::format("losses[{}].epsilon must be a finite number >= 0, got {}", i, l.epsilon));
    require(std::isfinite(l.delta) && l.delta >= 0 && l.delta <= 1,
            fmt::format("losses[{}].delta must be in [0, 1], got {}", i, l.delta));
    eps.add(l.epsilon);
    delta.add(l.delta);
  }
  return {eps.rounded_up(), std::min(1.0, delta.rounded_up())};
}

EpsilonDelta advanced_composition(double eps0, double delta0, long k, double delta_slack) {
  check_self_composition(eps0, delta0, k);
  check_delta_positive(delta_slack, "delta_slack");
  const double kd = static_cast<double>(k);
  const double eps =
      std::sqrt(2 * kd * std::log(1 / delta_slack)) * eps0 + kd * eps0 * std::expm1(eps0);
  return {round_up(eps), std::min(1.0, round_up(kd * delta0 + delta_slack))};
}

EpsilonDelta optimal_composition(double eps0, double delta0, long k, double delta_slack) {
  check_self_composition(eps0, delta0, k);
  check_delta(delta_slack, "delta_slack");
  const double delta = composed_delta(delta0, k, delta_slack);
  const double basic = round_up(static_cast<double>(k) * eps0);
  if (delta_slack == 0) return {basic, delta};
  if (k > kOptimalMaxK) {
    const EpsilonDelta adv = advanced_composition(eps0, delta0, k, delta_slack);
    return adv.epsilon < basic ? adv : EpsilonDelta{basic, delta};
  }
  const RandomizedResponseComposition rr(eps0, k);
  if (rr.delta_upper(0) <= delta_slack) return {0, delta};
  // delta(eps) decreases in eps and vanishes at k eps0: bisect for the smallest eps.
  double lo = 0, hi = static_cast<double>(k) * eps0;
  for (int it = 0; it < 200 && hi - lo > 1e-13 * hi; ++it) {
    const double mid = (lo + hi) / 2;
    (rr.delta_upper(mid) > delta_slack ? lo : hi) = mid;
  }
  return {std::min(basic, round_up(hi)), delta};
}

EpsilonDelta best_composition(double eps0, double delta0, long k, double delta_slack) {
  check_self_composition(eps0, delta0, k);
  check_delta(delta_slack, "delta_slack");
  const double kd = static_cast<double>(k);
  EpsilonDelta best{round_up(kd * eps0), std::min(1.0, round_up(kd * delta0))};
  auto consider = [&](const EpsilonDelta& c) {
    if (c.epsilon < best.epsilon || (c.epsilon == best.epsilon && c.delta < best.delta)) best = c;
  };
  if (delta_slack > 0) consider(advanced_composition(eps0, delta0, k, delta_slack));
  consider(optimal_composition(eps0, delta0, k, delta_slack));
  return best;
}

double per_step_epsilon(double epsilon, double delta, long k) {
  check_epsilon(epsilon);
  check_delta(delta);
  check_k(k);
  const double kd = static_cast<double>(k);
  const double delta0 = delta / (2 * kd);
  const double delta_slack = delta / 2;
  // Each rule's delta is <= delta0 k + delta_slack = delta (the optimal one by the union bound).
  auto fits = [&](double eps0) {
    return best_composition(eps0, delta0, k, delta_slack).epsilon <= epsilon;
  };
  // Basic composition always meets the target at epsilon / k (shrunk by a few ulp so that
  // k * eps0, rounded up, stays <= epsilon).
  double lo = epsilon / kd * (1 - 1e-14);
  while (!fits(lo)) lo /= 2;
  double hi = lo * 2;
  while (fits(hi)) lo = hi, hi *= 2;
  for (int it = 0; it < 200 && hi - lo > 1e-12 * lo; ++it) {
    const double mid = (lo + hi) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;  // verified: the best valid rule composes k copies of lo to <= epsilon
}

}  // namespace dpstats
