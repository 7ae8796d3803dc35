// Sums and differences of numbers kept as their logarithms (the RDP and PLD accountants'
// arithmetic). Internal to src/privacy.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>

namespace dpstats::privacy_detail {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// log(exp(a) + exp(b)).
inline double add(double a, double b) {
  if (a == -kInf) return b;
  if (b == -kInf) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(std::min(a, b) - m));
}

// log(exp(a) - exp(b)), a >= b.
inline double subtract(double a, double b) {
  if (b == -kInf) return a;
  if (a <= b) return -kInf;
  return a + std::log1p(-std::exp(b - a));
}

}  // namespace dpstats::privacy_detail
