#include "dpstats/mechanisms/l2_laplace.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "lattice.hpp"

namespace dpstats {
namespace {

// Sums of exponentials up to this shape; Marsaglia-Tsang above.
constexpr std::size_t kExponentialSumShape = 16;

double standard_exponential(Rng& rng) { return -std::log1p(-rng.uniform01()); }

// Marsaglia's polar method.
double standard_normal(Rng& rng) {
  for (;;) {
    const double u = 2 * rng.uniform01() - 1, v = 2 * rng.uniform01() - 1;
    const double s = u * u + v * v;
    if (s > 0 && s < 1) return u * std::sqrt(-2 * std::log(s) / s);
  }
}

// Gamma(shape, 1) for an integer shape >= 1 (Marsaglia & Tsang 2000 for large shapes).
double standard_gamma(std::size_t shape, Rng& rng) {
  if (shape <= kExponentialSumShape) {
    double sum = 0;
    for (std::size_t i = 0; i < shape; ++i) sum += standard_exponential(rng);
    return sum;
  }
  const double d = static_cast<double>(shape) - 1.0 / 3.0, c = 1 / std::sqrt(9 * d);
  for (;;) {
    const double x = standard_normal(rng);
    const double v0 = 1 + c * x;
    if (v0 <= 0) continue;
    const double v = v0 * v0 * v0, u = rng.uniform01();
    if (u < 1 - 0.0331 * (x * x) * (x * x)) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v;
  }
}

}  // namespace

// In polar coordinates the density exp(-r/beta) on R^d has radius density ∝ r^(d-1) exp(-r/beta),
// i.e. Gamma(d, beta), and a uniform direction (a normalised standard normal vector).
Eigen::VectorXd sample_l2_laplace(std::size_t dimension, double beta, Rng& rng) {
  lattice::check_dimension(dimension);
  check_positive(beta, "beta");
  const auto d = static_cast<Eigen::Index>(dimension);
  Eigen::VectorXd direction(d);
  double norm = 0;
  while (norm == 0) {
    for (Eigen::Index i = 0; i < d; ++i) direction[i] = standard_normal(rng);
    norm = direction.norm();
  }
  return direction * (beta * standard_gamma(dimension, rng) / norm);
}

L2LaplaceMechanism::L2LaplaceMechanism(double l2_sensitivity, double epsilon, std::size_t dimension)
    : sensitivity_(l2_sensitivity), epsilon_(epsilon), dimension_(dimension) {
  check_positive(l2_sensitivity, "l2_sensitivity");
  check_epsilon(epsilon);
  lattice::check_dimension(dimension);
  beta_ = l2_sensitivity / epsilon;
  require(std::isfinite(beta_) && beta_ >= 0x1p-900,
          fmt::format("l2_sensitivity / epsilon must be in [2^-900, max double], got {} / {}",
                      l2_sensitivity, epsilon));
}

Eigen::VectorXd L2LaplaceMechanism::apply(const Eigen::Ref<const Eigen::VectorXd>& value,
                                          Rng& rng) const {
  lattice::check_vector(value, dimension_);
  // Snapping to a power-of-two lattice 2^-30 beta fine removes the low-order bits of the
  // floating-point sum (post-processing); it does not make the sampler exact (see the header).
  const double g = lattice::power_of_two_floor(beta_ * 0x1p-30);
  Eigen::VectorXd out = value + sample_l2_laplace(dimension_, beta_, rng);
  for (Eigen::Index i = 0; i < out.size(); ++i) out[i] = std::round(out[i] / g) * g;
  return out;
}

LedgerEntry L2LaplaceMechanism::ledger_entry(std::string purpose) const {
  return {"l2_laplace", std::move(purpose), sensitivity_, beta_, loss(), 1};
}

}  // namespace dpstats
