#include "dpstats/solvers/exact_sum.hpp"

#include <cmath>

namespace dpstats::optimize {

ClippedVectorSum::ClippedVectorSum(std::int64_t d, double clip, std::int64_t capacity)
    : sum_(d, clip, capacity) {}

void ClippedVectorSum::add(const Vector& v) { sum_.add(v); }

Vector ClippedVectorSum::sum() const { return value_of(sum_.lattice_sum()); }

Vector ClippedVectorSum::lattice_sum() const { return sum_.lattice_sum(); }

Vector ClippedVectorSum::value_of(const Vector& lattice) const {
  const double unit = sum_.clip() * std::ldexp(1.0, -sum_.bits());
  return lattice * unit;
}

double ClippedVectorSum::sensitivity() const {
  const double grid = std::ldexp(1.0, sum_.bits());
  const double lattice = exact::ball_lattice_sensitivity(sum_.dimension(), sum_.bits());
  return lattice * sum_.clip() / grid + static_cast<double>(sum_.capacity()) * sum_.clip() * 0x1p-50;
}

}  // namespace dpstats::optimize
