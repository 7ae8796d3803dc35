// Pessimistic privacy-loss distributions; see include/dpstats/privacy/pld.hpp and
// docs/proofs/accounting.md for why every step only increases delta(epsilon).
#include "dpstats/privacy/pld.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <unsupported/Eigen/FFT>

#include "dpstats/error.hpp"
#include "log_space.hpp"

namespace dpstats {
namespace {

using privacy_detail::kInf;
constexpr auto log_add = privacy_detail::add;

// Accumulates masses on the grid k * h: atoms are split between neighbouring grid points so that
// probability and Q-mass are kept (proofs §1).
class GridBuilder {
 public:
  explicit GridBuilder(double h) : h_(h), one_minus_e_h_(-std::expm1(-h)) {}
  double h() const { return h_; }
  // A cell (k h, (k+1) h] with P-mass p and Q-mass qm = E_P[e^{-L}; cell].
  void add_cell(std::int64_t k, double p, double qm) {
    if (!(p > 0)) return;
    // m_b = E_P[1 - e^{a - L}; cell] / (1 - e^{-h}), clamped to [0, p] (rounding only).
    const double mb = std::clamp((p - qm * std::exp(k * h_)) / one_minus_e_h_, 0.0, p);
    add_point(k, p - mb);
    add_point(k + 1, mb);
  }
  // An atom of P-mass p at loss l.
  void add_atom(double l, double p) {
    if (!(p > 0)) return;
    if (l == kInf) {
      infinity_ += p;
      return;
    }
    const double kf = std::floor(l / h_);
    const auto k = static_cast<std::int64_t>(kf);
    const double mb = std::clamp(p * -std::expm1(k * h_ - l) / one_minus_e_h_, 0.0, p);
    add_point(k, p - mb);
    add_point(k + 1, mb);
  }
  void add_point(std::int64_t k, double p) {
    if (!(p > 0)) return;
    if (mass_.empty()) {
      lo_ = k;
      mass_.push_back(0);
    }
    if (k < lo_) {
      mass_.insert(mass_.begin(), static_cast<std::size_t>(lo_ - k), 0.0);
      lo_ = k;
    }
    const auto i = static_cast<std::size_t>(k - lo_);
    if (i >= mass_.size()) mass_.resize(i + 1, 0.0);
    mass_[i] += p;
  }
  void add_infinity(double p) { infinity_ += std::max(0.0, p); }
  PldPmf finish() && {
    PldPmf out;
    out.h = h_;
    out.offset = lo_;
    out.mass = std::move(mass_);
    out.infinity_mass = std::min(1.0, infinity_);
    if (out.mass.empty()) out.mass.push_back(0);
    return out;
  }

 private:
  double h_, one_minus_e_h_;  // 1 - e^{-h}
  std::int64_t lo_ = 0;
  std::vector<double> mass_;
  double infinity_ = 0;
};

// The pair (P, Q) = (p1 A + (1-p1) B, p2 A + (1-p2) B), A the noise shifted by Delta, B centred;
// r = A/B is nondecreasing in x and L = log((p1 r + 1 - p1) / (p2 r + 1 - p2)) nondecreasing in r
// (p1 > p2). Remove direction: (q, 0); add direction, mirrored x -> Delta - x: (1, 1 - q).
struct Mixture {
  double p1, p2;
  double loss(double log_r) const {
    const double num = log_add(std::log(p1) + log_r, std::log1p(-p1));
    const double den = log_add(std::log(p2) + log_r, std::log1p(-p2));
    return num - den;
  }
  // log r at loss l (the inverse of loss): -inf / +inf outside the range.
  double log_r(double l) const {
    const double num = std::expm1(l) * (1 - p2) + (p1 - p2);
    const double den = (p1 - p2) - std::expm1(l) * p2;
    if (num <= 0) return -kInf;
    if (den <= 0) return kInf;
    return std::log(num) - std::log(den);
  }
};

// A symmetric continuous noise: lower CDF F, upper tail S, log density ratio and its inverse.
struct ContinuousNoise {
  std::function<double(double)> lower, upper;  // F(x), 1 - F(x), each accurate in its own tail
  std::function<double(double)> log_ratio;     // log A(x)/B(x)
  std::function<double(double)> x_at;          // sup{x : log_ratio(x) <= lr}
  double shift;                                // Delta
  double x_lo, x_hi;                           // tails beyond carry negligible mass
  // Mass of (x1, x2] under the noise centred at c.
  double mass(double x1, double x2, double c) const {
    x1 -= c;
    x2 -= c;
    if (x2 <= x1) return 0;
    if (x1 >= 0) return std::max(0.0, upper(x1) - upper(x2));
    return std::max(0.0, lower(x2) - lower(x1));
  }
};

// ContinuousNoise::mass of consecutive cells (x1, x2], (x2, x3], ... under the noise centred at
// c, the same values with each CDF evaluated once: x2's value is kept for the next cell when
// that cell reads the same tail (it does except where the cells cross c).
class CellMasses {
 public:
  CellMasses(const ContinuousNoise& n, double c) : n_(n), c_(c) {}
  double next(double x1, double x2) {
    x1 -= c_;
    x2 -= c_;
    if (x2 <= x1) return 0;
    const bool upper = x1 >= 0;
    const double f1 = x1 == last_x_ && upper == last_upper_ ? last_f_ : cdf(x1, upper);
    const double f2 = cdf(x2, upper);
    last_x_ = x2, last_upper_ = upper, last_f_ = f2;
    return std::max(0.0, upper ? f1 - f2 : f2 - f1);
  }

 private:
  double cdf(double x, bool upper) const { return upper ? n_.upper(x) : n_.lower(x); }
  const ContinuousNoise& n_;
  double c_;
  double last_x_ = std::numeric_limits<double>::quiet_NaN(), last_f_ = 0;
  bool last_upper_ = false;
};

PldPmf discretise_continuous(const ContinuousNoise& n, const Mixture& mix, double h) {
  GridBuilder g(h);
  const double l_lo = mix.loss(n.log_ratio(n.x_lo)), l_hi = mix.loss(n.log_ratio(n.x_hi));
  const auto k_lo = static_cast<std::int64_t>(std::floor(l_lo / h));
  const auto k_hi = static_cast<std::int64_t>(std::ceil(l_hi / h));
  require(k_hi - k_lo <= (std::int64_t{1} << 26),
          fmt::format("PLD: the loss range [{}, {}] needs {} grid points at discretization {}; "
                      "use a coarser discretization", l_lo, l_hi, k_hi - k_lo, h));
  auto p_of = [&](double x1, double x2) {
    return mix.p1 * n.mass(x1, x2, n.shift) + (1 - mix.p1) * n.mass(x1, x2, 0);
  };
  double x_prev = n.x_at(mix.log_r(k_lo * h));
  g.add_point(k_lo, p_of(-kInf, x_prev));  // lower tail, rounded up to k_lo
  CellMasses shifted(n, n.shift), centred(n, 0);
  for (std::int64_t k = k_lo; k < k_hi; ++k) {
    const double x_next = n.x_at(mix.log_r((k + 1) * h));
    const double a = shifted.next(x_prev, x_next), b = centred.next(x_prev, x_next);
    g.add_cell(k, mix.p1 * a + (1 - mix.p1) * b, mix.p2 * a + (1 - mix.p2) * b);
    x_prev = x_next;
  }
  g.add_infinity(p_of(x_prev, kInf));  // upper tail
  return std::move(g).finish();
}

ContinuousNoise gaussian_noise(double sigma, double delta) {
  ContinuousNoise n;
  const double s = sigma * std::sqrt(2.0);
  n.lower = [s](double x) { return 0.5 * std::erfc(-x / s); };
  n.upper = [s](double x) { return 0.5 * std::erfc(x / s); };
  // log A/B = (2 x Delta - Delta^2) / (2 sigma^2)
  n.log_ratio = [=](double x) { return (2 * x - delta) * delta / (2 * sigma * sigma); };
  n.x_at = [=](double lr) { return lr * sigma * sigma / delta + delta / 2; };
  n.shift = delta;
  n.x_lo = -11 * sigma;  // Phi(-11) = 1.9e-28
  n.x_hi = delta + 11 * sigma;
  return n;
}

ContinuousNoise laplace_noise(double b, double delta) {
  ContinuousNoise n;
  n.lower = [b](double x) { return x < 0 ? 0.5 * std::exp(x / b) : 1 - 0.5 * std::exp(-x / b); };
  n.upper = [b](double x) { return x >= 0 ? 0.5 * std::exp(-x / b) : 1 - 0.5 * std::exp(x / b); };
  n.log_ratio = [=](double x) { return (std::fabs(x) - std::fabs(x - delta)) / b; };
  n.x_at = [=](double lr) {
    if (lr < -delta / b) return -kInf;
    if (lr >= delta / b) return kInf;
    return (b * lr + delta) / 2;
  };
  n.shift = delta;
  n.x_lo = 0;  // the loss is constant below 0 and above Delta: no truncation
  n.x_hi = delta;
  return n;
}

// Integer-valued symmetric noise (the discrete Gaussian): atoms x in [lo, hi] with
// log-probabilities, plus a bound on the P-mass of each tail.
struct DiscreteNoise {
  std::int64_t lo, hi;        // atoms of P and Q are enumerated on [lo, hi + shift]
  std::vector<double> log_p;  // log B(x), x = lo - shift .. hi + shift
  double tail_mass;           // >= B(x < lo) = B(x > hi)
  std::int64_t shift;
  double log_b(std::int64_t x) const {
    if (x < lo - shift || x > hi + shift) return -kInf;
    return log_p[static_cast<std::size_t>(x - (lo - shift))];
  }
};

PldPmf discretise_discrete(const DiscreteNoise& n, const Mixture& mix, double h) {
  GridBuilder g(h);
  // Support of P and Q: x in [lo, hi + shift]; A(x) = B(x - shift).
  auto atom = [&](std::int64_t x, double& loss, double& p) {
    const double la = n.log_b(x - n.shift), lb = n.log_b(x);
    const double lp = log_add(std::log(mix.p1) + la, std::log1p(-mix.p1) + lb);
    const double lq = log_add(std::log(mix.p2) + la, std::log1p(-mix.p2) + lb);
    p = std::exp(lp);
    loss = lq == -kInf ? kInf : lp - lq;
  };
  double first_loss = 0, p = 0;
  for (std::int64_t x = n.lo; x <= n.hi + n.shift; ++x) {
    double l = 0;
    atom(x, l, p);
    if (x == n.lo) first_loss = l;
    g.add_atom(l, p);
  }
  // Lower tail: P-mass of x < lo is at most B(x < lo) <= tail_mass (A's is thinner); its losses
  // are <= first_loss (r nondecreasing), so rounding it up to first_loss is pessimistic.
  g.add_atom(first_loss, n.tail_mass);
  // Upper tail: P-mass of x > hi + shift (at most B(x > hi)), at +infinity.
  g.add_infinity(n.tail_mass);
  return std::move(g).finish();
}

DiscreteNoise discrete_gaussian_noise(double sigma, std::int64_t delta) {
  DiscreteNoise n;
  const auto k = static_cast<std::int64_t>(std::ceil(11 * sigma)) + 1;
  const auto far = static_cast<std::int64_t>(std::ceil(40 * sigma)) + 2;
  require(far <= 20'000'000, fmt::format("discrete gaussian: sigma must be <= 5e5 for the PLD "
                                         "accountant, got {}", sigma));
  auto w = [&](std::int64_t x) { return -static_cast<double>(x) * x / (2 * sigma * sigma); };
  double z = 0, tail = 0;  // normaliser and the one-sided tail beyond k
  for (std::int64_t x = -far; x <= far; ++x) z += std::exp(w(x));
  for (std::int64_t x = k + 1; x <= far; ++x) tail += std::exp(w(x));
  n.lo = -k;
  n.hi = k;
  for (std::int64_t x = -k - delta; x <= k + delta; ++x) n.log_p.push_back(w(x) - std::log(z));
  n.tail_mass = tail / z + 1e-300;
  n.shift = delta;
  return n;
}

// The discrete Laplace P(x) ~ exp(-|x| / t) on the integers, shift Delta (an integer), as a step
// CDF: a loss cell is still an x-interval (the loss (|x| - |x - Delta|) / t of an integer x is
// nondecreasing), holding the integers in it, so the cells' masses are exact (proofs §4) for any
// Delta and t, without enumerating atoms. F(n) = r^-n / (1 + r) for n < 0, r = e^(-1/t).
ContinuousNoise discrete_laplace_noise(double t, double delta) {
  ContinuousNoise n = laplace_noise(t, delta);
  const double inv_1r = 1 / (1 + std::exp(-1 / t));
  n.lower = [t, inv_1r](double x) {
    const double k = std::floor(x);
    return k < 0 ? std::exp(k / t) * inv_1r : 1 - std::exp(-(k + 1) / t) * inv_1r;
  };
  n.upper = [t, inv_1r](double x) {  // P(X > floor(x))
    const double k = std::floor(x);
    return k >= 0 ? std::exp(-(k + 1) / t) * inv_1r : 1 - std::exp(k / t) * inv_1r;
  };
  return n;
}

}  // namespace

const char* to_string(PldMechanism m) {
  switch (m) {
    case PldMechanism::gaussian: return "gaussian";
    case PldMechanism::laplace: return "laplace";
    case PldMechanism::discrete_gaussian: return "discrete_gaussian";
    case PldMechanism::discrete_laplace: return "discrete_laplace";
  }
  return "?";
}

// Internal steps of composition, shared with pld_compose.cpp.
namespace privacy_detail {
// What a single mechanism's PLD cuts from each tail: so little that 2^24 compositions of it
// move at most tail_mass.
double single_step_tail(const PldOptions& o) { return o.tail_mass * 0x1p-24; }
PldPmf convolve(const PldPmf& a, const PldPmf& b, const PldOptions& o, double tail);
PldPmf identity_pmf(double h);
void check_options(const PldOptions& o);
void PldTrim(PldPmf& p, const PldOptions& o, double tail);
double loss_deviation(const PldPmf& p);
PldPmf discretise(PldMechanism m, double noise, double sensitivity, double p1, double p2,
                  double h) {
  switch (m) {
    case PldMechanism::gaussian:
      return discretise_continuous(gaussian_noise(noise, sensitivity), {p1, p2}, h);
    case PldMechanism::laplace:
      return discretise_continuous(laplace_noise(noise, sensitivity), {p1, p2}, h);
    case PldMechanism::discrete_gaussian:
      return discretise_discrete(
          discrete_gaussian_noise(noise, static_cast<std::int64_t>(sensitivity)), {p1, p2}, h);
    case PldMechanism::discrete_laplace:
      return discretise_continuous(discrete_laplace_noise(noise, sensitivity), {p1, p2}, h);
  }
  return identity_pmf(h);
}
// The grid sized for the regime: options.discretization, halved (down to 1e-7) until the loss
// deviation spans cells_per_deviation cells, so that a concentrated loss (a small sampling rate)
// is resolved; then truncated (single_step_tail) and coarsened to fit (pld_compose.cpp).
PldPmf discretise_sized(PldMechanism m, double noise, double sensitivity, double p1, double p2,
                        const PldOptions& o) {
  double h = o.discretization;
  PldPmf p = discretise(m, noise, sensitivity, p1, p2, h);
  for (int refine = 0; refine < 2; ++refine) {
    const double deviation = loss_deviation(p);
    if (!(deviation > 0) || h * o.cells_per_deviation <= deviation) break;
    const double halvings = std::ceil(std::log2(h * o.cells_per_deviation / deviation));
    const double finer = std::max(h * std::exp2(-halvings), o.discretization * 0x1p-12);
    if (finer >= h || finer < 1e-7 || p.mass.size() * (h / finer) > (std::size_t{1} << 22)) break;
    h = finer;
    p = discretise(m, noise, sensitivity, p1, p2, h);
  }
  PldTrim(p, o, single_step_tail(o));
  return p;
}
PldPmf atoms(const std::vector<std::pair<double, double>>& loss_mass, double infinity, double h) {
  GridBuilder g(h);
  for (const auto& [l, p] : loss_mass) g.add_atom(l, p);
  g.add_infinity(infinity);
  return std::move(g).finish();
}
}  // namespace privacy_detail


PrivacyLossDistribution::PrivacyLossDistribution() : PrivacyLossDistribution({}, {}, true, {}) {}

PrivacyLossDistribution::PrivacyLossDistribution(PldPmf remove, PldPmf add, bool symmetric,
                                                 PldOptions options)
    : remove_(std::move(remove)), add_(std::move(add)), symmetric_(symmetric), options_(options) {
  // The default PldPmf is the identity (all mass at loss 0) on the default grid.
  if (remove_.mass.empty()) remove_ = privacy_detail::identity_pmf(options_.discretization);
  if (add_.mass.empty()) add_ = remove_;
}

PrivacyLossDistribution PrivacyLossDistribution::from_mechanism(
    PldMechanism m, double noise, double sensitivity, double q, Sampling sampling,
    Neighbouring neighbouring, const PldOptions& o) {
  privacy_detail::check_options(o);
  check_positive(noise, "noise");
  check_positive(sensitivity, "sensitivity");
  require(std::isfinite(q) && q > 0 && q <= 1,
          fmt::format("sampling_rate must be in (0, 1], got {}", q));
  const double max_sensitivity = m == PldMechanism::discrete_laplace ? 0x1p52 : 1e6;
  if (m == PldMechanism::discrete_gaussian || m == PldMechanism::discrete_laplace)
    require(sensitivity == std::floor(sensitivity) && sensitivity <= max_sensitivity,
            fmt::format("sensitivity of the {} mechanism must be an integer in [1, {}], got {}",
                        to_string(m), max_sensitivity, sensitivity));
  if (q < 1) {
    require(sampling == Sampling::poisson,
            fmt::format("sampling: the PLD accountant covers Poisson subsampling, got {} (see "
                        "docs/proofs/accounting.md §5)", to_string(sampling)));
    require(neighbouring == Neighbouring::add_remove,
            fmt::format("neighbouring: Poisson subsampling is accounted under add-remove, got {} "
                        "(see docs/proofs/accounting.md §5)", to_string(neighbouring)));
  }
  PldPmf remove = privacy_detail::discretise_sized(m, noise, sensitivity, q, 0, o);
  if (q == 1) return {remove, remove, true, o};
  PldPmf add = privacy_detail::discretise_sized(m, noise, sensitivity, 1, 1 - q, o);
  return {std::move(remove), std::move(add), false, o};
}

PrivacyLossDistribution PrivacyLossDistribution::subsampled_gaussian(double q, double z,
                                                                     Sampling sampling,
                                                                     Neighbouring neighbouring,
                                                                     const PldOptions& o) {
  return from_mechanism(PldMechanism::gaussian, z, 1, q, sampling, neighbouring, o);
}

PrivacyLossDistribution PrivacyLossDistribution::from_pure(double epsilon, const PldOptions& o) {
  return from_approximate(epsilon, 0, o);
}

PrivacyLossDistribution PrivacyLossDistribution::from_approximate(double epsilon, double delta,
                                                                  const PldOptions& o) {
  privacy_detail::check_options(o);
  require(std::isfinite(epsilon) && epsilon >= 0,
          fmt::format("epsilon must be a finite number >= 0, got {}", epsilon));
  require(std::isfinite(delta) && delta >= 0 && delta <= 1,
          fmt::format("delta must be in [0, 1], got {}", delta));
  // KOV15: P = (delta, (1-delta) e^eps/(1+e^eps), (1-delta)/(1+e^eps), 0), Q mirrored.
  const double up = (1 - delta) / (1 + std::exp(-epsilon));
  const PldPmf p = privacy_detail::atoms({{epsilon, up}, {-epsilon, 1 - delta - up}}, delta,
                                     o.discretization);
  return {p, p, true, o};
}

PrivacyLossDistribution PrivacyLossDistribution::from_gdp(double mu, const PldOptions& o) {
  check_positive(mu, "mu");
  return from_mechanism(PldMechanism::gaussian, 1, mu, 1, Sampling::poisson,
                        Neighbouring::add_remove, o);
}

PrivacyLossDistribution PrivacyLossDistribution::from_loss(const PrivacyLoss& l,
                                                           const PldOptions& o) {
  switch (l.kind) {
    case LossKind::pure: return from_pure(l.epsilon, o);
    case LossKind::approximate: return from_approximate(l.epsilon, l.delta, o);
    case LossKind::gdp:
      if (l.mu == 0) return from_pure(0, o);
      return from_gdp(l.mu, o);
    case LossKind::subsampled_gaussian:
      if (l.sampling_rate == 0) return from_pure(0, o);
      // A lattice step (l.discrete) is analysed as the continuous Gaussian it couples to; the
      // Budget adds the coupling slack (docs/proofs/accounting.md §9).
      return subsampled_gaussian(l.sampling_rate, l.noise_multiplier, l.sampling, l.neighbouring,
                                 o);
    case LossKind::zcdp: break;
  }
  throw InvalidArgument(fmt::format(
      "loss: the PLD accountant cannot count a {} loss ({}): rho-zCDP bounds Renyi divergences "
      "only and has no dominating pair; use the rdp or zcdp accountant",
      to_string(l.kind), l.describe()));
}

PrivacyLossDistribution PrivacyLossDistribution::compose(const PrivacyLossDistribution& b) const {
  return composed(b, options_.tail_mass);
}

PrivacyLossDistribution PrivacyLossDistribution::composed(const PrivacyLossDistribution& b,
                                                          double tail) const {
  const PldPmf r = privacy_detail::convolve(remove_, b.remove_, options_, tail);
  if (symmetric_ && b.symmetric_) return {r, r, true, options_};
  const PldPmf a = privacy_detail::convolve(add_, b.add_, options_, tail);
  return {r, a, false, options_};
}

// Repeated squaring. The 2^j-fold base enters the result floor(times / 2^j) times, so what a
// squaring cuts from its tails is scaled by 2^(j+1) / times: every level together moves at most
// about tail_mass per tail and direction, whatever the number of compositions (proofs §2b).
PrivacyLossDistribution PrivacyLossDistribution::self_compose(std::uint64_t times) const {
  if (times == 0) return PrivacyLossDistribution({}, {}, true, options_);
  const double total = static_cast<double>(times);
  std::optional<PrivacyLossDistribution> result;
  PrivacyLossDistribution base = *this;
  double copies = 1;  // of the original in `base`
  while (times > 0) {
    if (times & 1) result = result ? result->composed(base, options_.tail_mass) : base;
    times >>= 1;
    if (times > 0) {
      copies *= 2;
      base = base.composed(base, options_.tail_mass * copies / total);
    }
  }
  return *result;
}

double PrivacyLossDistribution::delta_for_epsilon(double epsilon) const {
  const double r = remove_.delta_for_epsilon(epsilon);
  return symmetric_ ? r : std::max(r, add_.delta_for_epsilon(epsilon));
}

double PrivacyLossDistribution::epsilon_for_delta(double delta) const {
  const double r = remove_.epsilon_for_delta(delta);
  return symmetric_ ? r : std::max(r, add_.epsilon_for_delta(delta));
}

}  // namespace dpstats
