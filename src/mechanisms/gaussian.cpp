#include "dpstats/mechanisms/gaussian.hpp"

#include "dpstats/mechanisms/draw_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/random/float_normal.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/privacy/calibration.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "lattice.hpp"

namespace dpstats {
namespace {

using mechanisms_detail::check_dimension;
using mechanisms_detail::power_of_two_floor;

constexpr double kMaxLatticeSigma = 0x1p30;  // keeps s^2 below the sampler's 2^62
constexpr double kMaxLatticeVariance = 0x1p62;

// The lattice step g: the largest power of two <= Δ/(sqrt(d) 2^20), coarsened when the noise is
// so large that sigma/g would exceed 2^30. Depends on public parameters only.
double lattice_step(double l2_sensitivity, std::size_t dimension, double sigma_estimate) {
  const double unit = l2_sensitivity / (std::sqrt(static_cast<double>(dimension)) * 0x1p20);
  require(unit >= 0x1p-1000 && unit <= 0x1p900,
          fmt::format("l2_sensitivity / (sqrt(dimension) * 2^20) must be in [2^-1000, 2^900] for "
                      "the secure lattice, got {} (l2_sensitivity = {}, dimension = {})",
                      unit, l2_sensitivity, dimension));
  double g = power_of_two_floor(unit);
  if (sigma_estimate / g > kMaxLatticeSigma)
    g = 2 * power_of_two_floor(sigma_estimate / kMaxLatticeSigma);
  require(g <= 0x1p900, fmt::format("noise standard deviation {} too large for the secure lattice",
                                    sigma_estimate));
  return g;
}

// An upper bound on the lattice l2 sensitivity Δ/g + sqrt(d): Δ/g is exact, sqrt and the sum
// add at most 2^-52 of relative error, and the factor 1 + 2^-50 more than covers it.
double lattice_l2_sensitivity(double l2_sensitivity, double g, std::size_t dimension) {
  return (l2_sensitivity / g + std::sqrt(static_cast<double>(dimension))) * (1 + 0x1p-50);
}

// floor(sqrt(x)) for x < 2^63.
std::uint64_t isqrt(std::uint64_t x) {
  auto r = static_cast<std::uint64_t>(std::sqrt(static_cast<double>(x)));
  while (r * r > x) --r;
  while ((r + 1) * (r + 1) <= x) ++r;
  return r;
}

// An integer s2 >= s2_real: the computed s2_real (a few roundings) is inflated by 2^-48, then
// ceil and + 1; then rounded up (by at most 2 sqrt(s2)) to a multiple of the discrete Gaussian's
// proposal scale t = floor(sqrt(s2)) + 1, which gives its acceptance test a small denominator
// (discrete_gaussian.hpp): with t0 = floor(sqrt(v)) + 1, either t0 · ceil(v/t0) (when
// ceil(v/t0) <= t0 - 1, so that its floor(sqrt) + 1 is still t0) or t0 (t0 + 1) (whose
// floor(sqrt) + 1 is t0 + 1).
std::uint64_t lattice_variance(double s2_real, const char* parameter, double value) {
  const double v = s2_real * (1 + 0x1p-48);
  require(v + 2 <= kMaxLatticeVariance - 0x1p33,
          fmt::format("{} = {} needs a lattice noise variance {} above 2^62 (the noise is too "
                      "large relative to the sensitivity for this dimension)",
                      parameter, value, v));
  const std::uint64_t minimum = static_cast<std::uint64_t>(std::ceil(v)) + 1;
  const std::uint64_t t0 = isqrt(minimum) + 1;
  const std::uint64_t c = (minimum + t0 - 1) / t0;
  return c <= t0 - 1 ? t0 * c : t0 * (t0 + 1);
}

// rho = K^2 / (2 s2) rounded up (three roundings, covered by the factor 1 + 2^-50).
double zcdp_of(double lattice_sensitivity, std::uint64_t s2) {
  return lattice_sensitivity * lattice_sensitivity / (2 * static_cast<double>(s2)) * (1 + 0x1p-50);
}

}  // namespace

GaussianMechanism GaussianMechanism::unconfigured(double l2_sensitivity, std::size_t dimension,
                                                  NoiseMode mode) {
  check_positive(l2_sensitivity, "l2_sensitivity");
  check_dimension(dimension);
  GaussianMechanism m;
  m.sensitivity_ = l2_sensitivity;
  m.dimension_ = dimension;
  m.mode_ = mode;
  return m;
}

GaussianMechanism GaussianMechanism::from_rho(double l2_sensitivity, double rho,
                                              std::size_t dimension, NoiseMode mode) {
  check_positive(rho, "rho");
  GaussianMechanism m = unconfigured(l2_sensitivity, dimension, mode);
  m.loss_ = PrivacyLoss::zcdp(rho);
  if (mode == NoiseMode::fast_float) {
    m.sigma_ = zcdp_gaussian_sigma(l2_sensitivity, rho);
    m.rho_ = rho;
    return m;
  }
  // CKS20 Thm 14: N_Z(0, s^2) per coordinate is K^2/(2 s^2)-zCDP for lattice l2 sensitivity K.
  const double g = lattice_step(l2_sensitivity, dimension, l2_sensitivity / std::sqrt(2 * rho));
  const double k2 = lattice_l2_sensitivity(l2_sensitivity, g, dimension);
  const std::uint64_t s2 = lattice_variance(k2 * k2 / (2 * rho), "rho", rho);
  m.granularity_ = g;
  m.lattice_sensitivity_ = k2;
  m.lattice_variance_ = s2;
  m.lattice_noise_.emplace(s2, 1);
  m.sigma_ = std::sqrt(static_cast<double>(s2)) * g;
  m.rho_ = std::min(zcdp_of(k2, s2), rho);  // both are upper bounds; s2 >= k2^2/(2 rho)
  return m;
}

GaussianMechanism GaussianMechanism::from_epsilon_delta(double l2_sensitivity, double epsilon,
                                                        double delta, std::size_t dimension,
                                                        NoiseMode mode) {
  check_positive(l2_sensitivity, "l2_sensitivity");
  check_epsilon(epsilon);
  check_delta_positive(delta);
  check_dimension(dimension);
  if (mode == NoiseMode::secure && dimension > 1) {
    // The tight zCDP -> (ε, δ) conversion, applied to the rho-zCDP of the vector release.
    GaussianMechanism m =
        from_rho(l2_sensitivity, epsilon_delta_to_zcdp(epsilon, delta), dimension, mode);
    m.loss_ = PrivacyLoss::approximate(epsilon, delta);
    return m;
  }
  GaussianMechanism m = unconfigured(l2_sensitivity, dimension, mode);
  m.loss_ = PrivacyLoss::approximate(epsilon, delta);
  const double analytic_sigma = analytic_gaussian_sigma(l2_sensitivity, epsilon, delta);
  if (mode == NoiseMode::fast_float) {
    m.sigma_ = analytic_sigma;
    m.rho_ = l2_sensitivity * l2_sensitivity / (2 * analytic_sigma * analytic_sigma);
    return m;
  }
  // d = 1: the exact (ε, δ) curve of the discrete Gaussian with integer sensitivity K (CKS20
  // Thm 7), bounded above rigorously by discrete_gaussian_delta_upper.
  const double g = lattice_step(l2_sensitivity, 1, analytic_sigma);
  const double k = std::floor(l2_sensitivity / g) + 1;
  const double s = discrete_gaussian_sigma(k, epsilon, delta);
  std::uint64_t s2 = lattice_variance(s * s, "epsilon", epsilon);
  // The rounding above only adds noise; check the bound at the variance that runs, and add more
  // if the bound's own rounding disagrees.
  for (int attempt = 0;
       discrete_gaussian_delta_upper(epsilon, k, std::sqrt(static_cast<double>(s2))) > delta;
       ++attempt) {
    require(attempt < 64, fmt::format("could not calibrate the discrete Gaussian to epsilon = {}, "
                                      "delta = {}",
                                      epsilon, delta));
    s2 = lattice_variance(static_cast<double>(s2) * (1 + 0x1p-30), "epsilon", epsilon);
  }
  m.granularity_ = g;
  m.lattice_sensitivity_ = k;
  m.lattice_variance_ = s2;
  m.lattice_noise_.emplace(s2, 1);
  m.sigma_ = std::sqrt(static_cast<double>(s2)) * g;
  m.rho_ = zcdp_of(k, s2);
  return m;
}

GaussianMechanism GaussianMechanism::from_sigma(double l2_sensitivity, double sigma,
                                                std::size_t dimension, NoiseMode mode) {
  check_positive(sigma, "sigma");
  GaussianMechanism m = unconfigured(l2_sensitivity, dimension, mode);
  if (mode == NoiseMode::fast_float) {
    m.sigma_ = sigma;
    m.rho_ = l2_sensitivity * l2_sensitivity / (2 * sigma * sigma);
  } else {
    const double g = lattice_step(l2_sensitivity, dimension, sigma);
    const double s = sigma / g;  // exact: a power-of-two scaling
    const std::uint64_t s2 = lattice_variance(s * s, "sigma", sigma);
    m.granularity_ = g;
    m.lattice_sensitivity_ = lattice_l2_sensitivity(l2_sensitivity, g, dimension);
    m.lattice_variance_ = s2;
    m.lattice_noise_.emplace(s2, 1);
    m.sigma_ = std::sqrt(static_cast<double>(s2)) * g;
    m.rho_ = zcdp_of(m.lattice_sensitivity_, s2);
  }
  m.loss_ = PrivacyLoss::zcdp(m.rho_);
  return m;
}

double GaussianMechanism::apply(double value, RandomBits& bits) const {
  mechanisms_detail::check_value(value);
  DrawLog::note("gaussian", sigma_, 1, dimension_);
  if (mode_ == NoiseMode::fast_float) return value + sigma_ * standard_normal(bits.rng());
  return mechanisms_detail::release(value, granularity_, (*lattice_noise_)(bits));
}

double GaussianMechanism::apply(double value, Rng& rng) const {
  return mechanisms_detail::apply_scalar(*this, value, rng);
}

Eigen::VectorXd GaussianMechanism::apply(const Eigen::Ref<const Eigen::VectorXd>& value,
                                         Rng& rng) const {
  return mechanisms_detail::apply_vector(*this, value, rng);
}

std::vector<std::unique_ptr<Rng>> GaussianMechanism::chunk_generators(std::size_t n, Rng& rng) {
  std::vector<std::unique_ptr<Rng>> children;
  for (std::size_t b = 0; n >= kChunk && b < n; b += kChunk) {
    children.push_back(rng.split());
    if (!children.back()) return {};
  }
  return children;
}

void GaussianMechanism::apply_each(std::span<const double> values, std::span<double> out,
                                   RandomBits& bits) const {
  require(values.size() == out.size(), "apply_each: values and out differ in length");
  if (mode_ == NoiseMode::fast_float) {
    for (std::size_t i = 0; i < values.size(); ++i) out[i] = apply(values[i], bits);
    return;
  }
  // apply() inlined for the secure path: the same draws in the same order.
  DrawLog::note("gaussian", sigma_, values.size(), dimension_);
  const DiscreteGaussian& noise = *lattice_noise_;
  for (std::size_t i = 0; i < values.size(); ++i) {
    mechanisms_detail::check_value(values[i]);
    out[i] = mechanisms_detail::release(values[i], granularity_, noise(bits));
  }
}

void GaussianMechanism::apply_each(std::span<const double> values, std::span<double> out, Rng& rng,
                                   int threads) const {
  require(values.size() == out.size(), "apply_each: values and out differ in length");
  require(threads >= 1, fmt::format("threads must be >= 1, got {}", threads));
  const std::size_t n = values.size();
  const auto children = chunk_generators(n, rng);
  if (children.empty()) {
    RandomBits bits(rng);
    return apply_each(values, out, bits);
  }
  parallel_tasks(children.size(), threads, [&](std::size_t c) {
    const std::size_t begin = c * kChunk, len = std::min(n, begin + kChunk) - begin;
    RandomBits bits(*children[c]);
    apply_each(values.subspan(begin, len), out.subspan(begin, len), bits);
  });
}

double GaussianMechanism::coupled_noise_multiplier() const {
  if (mode_ == NoiseMode::fast_float) return sigma_ / sensitivity_;
  const std::uint64_t s2 = lattice_variance_;
  const auto tau2 = static_cast<std::uint64_t>(kLatticeCouplingWidth * kLatticeCouplingWidth);
  if (s2 <= tau2) return 0;
  // s2 - tau2 is exact; its conversion, the sqrt and the division add at most 3 x 2^-53.
  return std::sqrt(static_cast<double>(s2 - tau2)) / lattice_sensitivity_ * (1 - 0x1p-50);
}

LedgerEntry GaussianMechanism::reserved_entry(double rho, std::string purpose, int count) {
  require(std::isfinite(rho) && rho > 0, fmt::format("rho must be > 0 and finite, got {}", rho));
  require(count >= 1, fmt::format("count must be >= 1, got {}", count));
  LedgerEntry e{"gaussian", std::move(purpose), 0, 0, PrivacyLoss::zcdp(rho), count};
  e.reserved = true;
  return e;
}

LedgerEntry GaussianMechanism::gdp_ledger_entry(std::string purpose) const {
  LedgerEntry e = ledger_entry(std::move(purpose));
  const double mu = 1 / coupled_noise_multiplier();
  e.loss = mode_ == NoiseMode::secure ? PrivacyLoss::discrete_gdp(mu) : PrivacyLoss::gdp(mu);
  return e;
}

LedgerEntry GaussianMechanism::ledger_entry(std::string purpose) const {
  LedgerEntry e{"gaussian", std::move(purpose), sensitivity_, sigma_, loss_, 1};
  // The noise itself, as the multiplier of the continuous Gaussian it is (fast_float) or couples
  // to (secure; docs/proofs/accounting.md §9, §10): the pld accountant composes it exactly.
  const double z = coupled_noise_multiplier();
  if (z > 0) e.curve = {NoiseKind::gaussian, z, 1, mode_ == NoiseMode::secure};
  return e;
}

}  // namespace dpstats
