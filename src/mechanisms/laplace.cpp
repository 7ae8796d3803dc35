#include "dpstats/mechanisms/laplace.hpp"

#include "dpstats/mechanisms/draw_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "dpstats/error.hpp"
#include "lattice.hpp"

namespace dpstats {
namespace {

using mechanisms_detail::power_of_two_floor;

constexpr std::uint64_t kMaxScaleNum = std::uint64_t{1} << 56;
constexpr double kMaxLatticeScale = 0x1p50;

// Continuous Laplace(b) from floating-point uniforms (fast_float mode only).
double float_laplace(double b, Rng& rng) {
  const double exponential = -std::log1p(-rng.uniform01());  // 1 - U in (0, 1]
  return rng.bit() ? -b * exponential : b * exponential;
}

}  // namespace

LaplaceMechanism::LaplaceMechanism(double l1_sensitivity, double epsilon, std::size_t dimension,
                                   NoiseMode mode)
    : sensitivity_(l1_sensitivity), epsilon_(epsilon), dimension_(dimension), mode_(mode) {
  check_positive(l1_sensitivity, "l1_sensitivity");
  check_epsilon(epsilon);
  require(dimension >= 1, "dimension must be >= 1, got 0");
  if (mode == NoiseMode::fast_float) {
    scale_ = l1_sensitivity / epsilon;
    require(std::isfinite(scale_),
            fmt::format("l1_sensitivity / epsilon must be finite, got {} / {}", l1_sensitivity,
                        epsilon));
    return;
  }
  const auto d = static_cast<double>(dimension);
  const double unit = l1_sensitivity / (d * 0x1p20);
  require(unit >= 0x1p-1000 && unit <= 0x1p900,
          fmt::format("l1_sensitivity / (dimension * 2^20) must be in [2^-1000, 2^900] for the "
                      "secure lattice, got {} (l1_sensitivity = {}, dimension = {})",
                      unit, l1_sensitivity, dimension));
  granularity_ = power_of_two_floor(unit);
  // When the noise is enormous relative to Δ/d (tiny ε), a coarser lattice keeps the lattice
  // scale below 2^50 + d/ε; the rounding still costs at most d·g/Δ of relative noise.
  const double continuous_scale = l1_sensitivity / epsilon;
  if (continuous_scale / granularity_ > kMaxLatticeScale) {
    require(continuous_scale <= 0x1p900,
            fmt::format("l1_sensitivity / epsilon must be <= 2^900 for the secure lattice, got "
                        "{} / {}",
                        l1_sensitivity, epsilon));
    granularity_ = 2 * power_of_two_floor(continuous_scale / kMaxLatticeScale);
  }
  // Lattice l1 sensitivity: |Δ/g| exactly (a power-of-two scaling) plus one step per coordinate
  // for the two roundings. floor(Δ/g) < d·2^21, so K is exact in a double below 2^53.
  const double lattice_sensitivity = std::floor(l1_sensitivity / granularity_) + d;
  // t = t_num / 2^j >= K/ε: the quotient is rounded once (relative error <= 2^-53), inflated by
  // 2^-48 (so it is above K 2^j/ε despite its own rounding), then ceil and + 1.
  for (int j = 20; j >= 0; --j) {
    const double v = lattice_sensitivity * std::ldexp(1.0, j) / epsilon * (1 + 0x1p-48);
    if (v + 2 < static_cast<double>(kMaxScaleNum)) {
      const auto t_num = static_cast<std::uint64_t>(std::ceil(v)) + 1;
      const std::uint64_t t_den = std::uint64_t{1} << j;
      lattice_noise_.emplace(t_num, t_den);
      scale_ = static_cast<double>(t_num) / static_cast<double>(t_den) * granularity_;
      return;
    }
  }
  throw InvalidArgument(fmt::format(
      "epsilon too small for the secure lattice: the discrete Laplace scale K/epsilon = {} "
      "(lattice sensitivity K = {}) must be below 2^56; epsilon must be >= {}, got {}",
      lattice_sensitivity / epsilon, lattice_sensitivity,
      lattice_sensitivity / static_cast<double>(kMaxScaleNum - 2), epsilon));
}

double LaplaceMechanism::apply(double value, RandomBits& bits) const {
  mechanisms_detail::check_value(value);
  DrawLog::note("laplace", scale_, 1, dimension_);
  if (mode_ == NoiseMode::fast_float) return value + float_laplace(scale_, bits.rng());
  return mechanisms_detail::release(value, granularity_, (*lattice_noise_)(bits));
}

double LaplaceMechanism::apply(double value, Rng& rng) const {
  return mechanisms_detail::apply_scalar(*this, value, rng);
}

Eigen::VectorXd LaplaceMechanism::apply(const Eigen::Ref<const Eigen::VectorXd>& value,
                                        Rng& rng) const {
  return mechanisms_detail::apply_vector(*this, value, rng);
}

LedgerEntry LaplaceMechanism::reserved_entry(double epsilon, std::string purpose, int count) {
  check_epsilon(epsilon);
  require(count >= 1, fmt::format("count must be >= 1, got {}", count));
  LedgerEntry e{"laplace", std::move(purpose), 0, 0, PrivacyLoss::pure(epsilon), count};
  e.reserved = true;
  return e;
}

LedgerEntry LaplaceMechanism::ledger_entry(std::string purpose) const {
  LedgerEntry e{"laplace", std::move(purpose), sensitivity_, scale_, loss(), 1};
  // A scalar's noise itself (docs/proofs/accounting.md §10): the continuous Laplace (fast_float),
  // or the discrete Laplace of scale t = scale / g on the lattice, with the lattice sensitivity
  // K = floor(Δ/g) + 1 (both exact: g is a power of two). Vectors keep their pure epsilon.
  if (dimension_ == 1) {
    if (mode_ == NoiseMode::fast_float)
      e.curve = {NoiseKind::laplace, scale_, sensitivity_, false};
    else
      e.curve = {NoiseKind::discrete_laplace, scale_ / granularity_,
                 std::floor(sensitivity_ / granularity_) + 1, true};
  }
  return e;
}

}  // namespace dpstats
