#include "dpstats/mechanisms/l2_laplace.hpp"

#include "dpstats/mechanisms/draw_log.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/random/float_normal.hpp"
#include "dpstats/random/bernoulli.hpp"
#include "dpstats/random/discrete_laplace.hpp"
#include "lattice.hpp"

namespace dpstats {
namespace {

// Sums of exponentials up to this shape; Marsaglia-Tsang above.
constexpr std::size_t kExponentialSumShape = 16;

double standard_exponential(Rng& rng) { return -std::log1p(-rng.uniform01()); }

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


constexpr std::uint64_t kMaxProposalScale = std::uint64_t{1} << 44;
constexpr u128 kTruncation = static_cast<u128>(1) << 58;

// floor(sqrt(x)) exactly for x < 2^126: the long double estimate (64-bit mantissa) is off by a
// few units at most and corrected both ways.
u128 isqrt_floor(u128 x) {
  auto r = static_cast<u128>(std::sqrt(static_cast<long double>(x)));
  while (r > 0 && r * r > x) --r;
  while ((r + 1) * (r + 1) <= x) ++r;
  return r;
}

u128 isqrt_ceil(u128 x) {
  const u128 r = isqrt_floor(x);
  return r * r == x ? r : r + 1;
}

}  // namespace

// In polar coordinates the density exp(-r/beta) on R^d has radius density ∝ r^(d-1) exp(-r/beta),
// i.e. Gamma(d, beta), and a uniform direction (a normalised standard normal vector).
Eigen::VectorXd sample_l2_laplace(std::size_t dimension, double beta, Rng& rng) {
  mechanisms_detail::check_dimension(dimension);
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

// ---- exact lattice sampler ----------------------------------------------------------------------

LatticeL2Laplace::LatticeL2Laplace(std::size_t dimension, std::uint64_t a_num)
    : d_(dimension), a_num_(a_num) {
  require(dimension >= 1 && dimension <= L2LaplaceMechanism::kExactMaxDimension,
          fmt::format("LatticeL2Laplace: dimension must be in [1, {}], got {}",
                      L2LaplaceMechanism::kExactMaxDimension, dimension));
  require(a_num >= 1 && a_num < (std::uint64_t{1} << kDenominatorBits),
          fmt::format("LatticeL2Laplace: a_num must be in [1, 2^55), got {}", a_num));
  // B = floor(A/√d) = floor(sqrt(floor(A²/d))), so B·√d <= A.
  const u128 a2 = static_cast<u128>(a_num) * a_num;
  b_num_ = static_cast<std::uint64_t>(isqrt_floor(a2 / dimension));
  require(b_num_ >= 1 && (std::uint64_t{1} << kDenominatorBits) / b_num_ <= kMaxProposalScale,
          fmt::format("LatticeL2Laplace: proposal scale 2^55/B must be <= 2^44 (a_num = {}, d = {})",
                      a_num, dimension));
}

void LatticeL2Laplace::sample(RandomBits& bits, std::int64_t* out,
                              std::uint64_t* proposals) const {
  const std::uint64_t den = std::uint64_t{1} << kDenominatorBits;
  const DiscreteLaplace proposal(den, b_num_);  // P(y) ∝ exp(-|y|·B/2^55)
  const BernoulliExp accept(den);
  for (;;) {
    if (proposals != nullptr) ++*proposals;
    u128 sum_sq = 0, l1 = 0;
    bool truncated = false;
    for (std::size_t i = 0; i < d_; ++i) {
      const std::int64_t z = proposal(bits);
      const u128 m = z < 0 ? static_cast<u128>(-(z + 1)) + 1 : static_cast<u128>(z);
      if (m >= kTruncation) truncated = true;
      out[i] = z;
      if (!truncated) {
        sum_sq += m * m;
        l1 += m;
      }
    }
    if (truncated) continue;
    // Exponent (A·⌈‖z‖₂⌉ − B·‖z‖₁)/2^55 >= 0 since ⌈‖z‖₂⌉ >= ‖z‖₁/√d and A >= B√d.
    const u128 h = isqrt_ceil(sum_sq);
    const u128 num = static_cast<u128>(a_num_) * h - static_cast<u128>(b_num_) * l1;
    if (accept(bits, num)) return;
  }
}

// ---- the mechanism -------------------------------------------------------------------------------

L2LaplaceMechanism::L2LaplaceMechanism(double l2_sensitivity, double epsilon, std::size_t dimension,
                                       NoiseMode mode)
    : sensitivity_(l2_sensitivity), epsilon_(epsilon), dimension_(dimension), mode_(mode) {
  check_positive(l2_sensitivity, "l2_sensitivity");
  check_epsilon(epsilon);
  mechanisms_detail::check_dimension(dimension);
  const double continuous = l2_sensitivity / epsilon;
  require(std::isfinite(continuous) && continuous >= 0x1p-900 && continuous <= 0x1p900,
          fmt::format("l2_sensitivity / epsilon must be in [2^-900, 2^900], got {} / {}",
                      l2_sensitivity, epsilon));
  if (mode == NoiseMode::fast_float) {
    beta_ = continuous;
    granularity_ = mechanisms_detail::power_of_two_floor(beta_ * 0x1p-30);
    return;
  }
  if (dimension > kExactMaxDimension) {
    // l1 sensitivity of an l2-bounded change: ‖v‖₁ <= √d‖v‖₂ (inflated past sqrt's rounding).
    const double l1 = std::sqrt(static_cast<double>(dimension)) * l2_sensitivity * (1 + 0x1p-48);
    coordinate_.emplace(l1, epsilon, dimension);
    beta_ = coordinate_->noise_scale();
    granularity_ = coordinate_->granularity();
    return;
  }
  const double root_d = std::sqrt(static_cast<double>(dimension)) * (1 + 0x1p-50);
  const double unit = l2_sensitivity / (root_d * 0x1p20);
  require(unit >= 0x1p-1000, fmt::format("l2_sensitivity / (√d·2^20) must be >= 2^-1000, got {}",
                                         unit));
  granularity_ = mechanisms_detail::power_of_two_floor(unit);
  // K + 1 = Δ/g + √d + 1 (Δ/g is exact: a power-of-two scaling); the proposal scale is
  // ≈ √d (K + 1)/ε, kept below 2^43 by a coarser lattice when d/ε is huge.
  auto lattice_norm_bound = [&] { return (l2_sensitivity / granularity_ + root_d + 1) * (1 + 0x1p-48); };
  while (root_d * lattice_norm_bound() / epsilon > 0x1p43) granularity_ *= 2;
  // a = A/2^55 <= ε/(K + 1): the double quotient (relative error 2^-53) deflated by 2^-47, scaled by
  // a power of two and floored.
  const double a = epsilon / lattice_norm_bound() * (1 - 0x1p-47);
  const double a_scaled = std::floor(std::ldexp(a, LatticeL2Laplace::kDenominatorBits));
  require(a_scaled >= 1024 && a_scaled < 0x1p55,
          fmt::format("epsilon {} out of range for the lattice l2-Laplace (a·2^55 = {})", epsilon,
                      a_scaled));
  exact_.emplace(dimension, static_cast<std::uint64_t>(a_scaled));
  beta_ = granularity_ / std::ldexp(a_scaled, -LatticeL2Laplace::kDenominatorBits);
}

double L2LaplaceMechanism::expected_norm() const {
  const auto d = static_cast<double>(dimension_);
  if (coordinate_) return beta_ * std::sqrt(2 * d);  // E‖·‖ <= sqrt(E‖·‖²) = √(2d)·b
  return d * beta_;
}

std::string L2LaplaceMechanism::sampler() const {
  if (mode_ == NoiseMode::fast_float) return "float_gamma_radius";
  return coordinate_ ? "coordinate_laplace" : "lattice_l2_laplace";
}

Eigen::VectorXd L2LaplaceMechanism::apply(const Eigen::Ref<const Eigen::VectorXd>& value,
                                          Rng& rng) const {
  mechanisms_detail::check_vector(value, dimension_);
  DrawLog::note("l2_laplace", beta_);
  const DrawLog::Inner inner;  // the per-coordinate fallback's Laplace draws are this one
  if (mode_ == NoiseMode::fast_float) {
    // Snapping removes the low-order bits of the floating-point sum (post-processing); it does
    // not make the sampler exact.
    Eigen::VectorXd out = value + sample_l2_laplace(dimension_, beta_, rng);
    for (Eigen::Index i = 0; i < out.size(); ++i) {
      out[i] = std::round(out[i] / granularity_) * granularity_;
    }
    return out;
  }
  if (coordinate_) return coordinate_->apply(value, rng);
  std::vector<std::int64_t> z(dimension_);
  RandomBits bits(rng);
  last_proposals_ = 0;
  exact_->sample(bits, z.data(), &last_proposals_);
  Eigen::VectorXd out(value.size());
  for (Eigen::Index i = 0; i < value.size(); ++i) {
    out[i] = mechanisms_detail::release(value[i], granularity_, z[static_cast<std::size_t>(i)]);
  }
  return out;
}

LedgerEntry L2LaplaceMechanism::reserved_entry(double epsilon, std::string purpose, int count) {
  check_epsilon(epsilon);
  require(count >= 1, fmt::format("count must be >= 1, got {}", count));
  LedgerEntry e{"l2_laplace", std::move(purpose), 0, 0, PrivacyLoss::pure(epsilon), count};
  e.reserved = true;
  return e;
}

LedgerEntry L2LaplaceMechanism::ledger_entry(std::string purpose) const {
  return {"l2_laplace", std::move(purpose), sensitivity_, beta_, loss(), 1};
}

}  // namespace dpstats
