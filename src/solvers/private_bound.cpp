#include "dpstats/solvers/private_bound.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/quantile.hpp"

namespace dpstats::optimize {
namespace {

constexpr double kLowOctave = -100, kHighOctave = 100;
constexpr std::size_t kPerOctave = 64;

QuantileOptions grid(double q, double epsilon) {
  QuantileOptions o;
  o.q = q;
  o.lower = kLowOctave;
  o.upper = kHighOctave;
  o.candidates = static_cast<std::size_t>(kHighOctave - kLowOctave) * kPerOctave + 1;
  o.epsilon = epsilon;
  return o;
}

}  // namespace

LedgerEntry private_bound_entry(double epsilon, std::string purpose) {
  check_epsilon(epsilon);
  return private_quantile_entry(grid(0.5, epsilon), std::move(purpose));
}

PrivateBound private_bound(std::span<const double> values, double q, double epsilon, Rng& rng) {
  check_epsilon(epsilon);
  require(q > 0 && q < 1, fmt::format("quantile q must be in (0, 1), got {}", q));
  require(!values.empty(), "a private bound needs at least one value");
  std::vector<double> logs(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    require(std::isfinite(v) && v >= 0, "private bound: values must be finite and >= 0");
    // Per value, so the rank quality keeps sensitivity 1.
    logs[i] = v > 0 ? std::clamp(std::log2(v), kLowOctave, kHighOctave) : kLowOctave;
  }
  PrivateBound out;
  out.q = q;
  out.epsilon = epsilon;
  out.value = std::exp2(private_quantile(logs, grid(q, epsilon), rng));
  return out;
}

}  // namespace dpstats::optimize
