#include "dpstats/random/discrete_gaussian.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "dpstats/error.hpp"

namespace dpstats {
namespace {

// floor(sqrt(x)) for x <= 2^62, exactly: the double estimate is off by at most one either way.
std::uint64_t isqrt(std::uint64_t x) {
  auto r = static_cast<std::uint64_t>(std::sqrt(static_cast<double>(x)));
  while (r * r > x) --r;
  while ((r + 1) * (r + 1) <= x) ++r;
  return r;
}

}  // namespace

struct DiscreteGaussian::Parameters {
  std::uint64_t num, den, t;
  std::uint64_t centre;  // num / t when den = 1 and t divides num, else 0
  u128 accept_den;       // 2 · num when centre > 0, else 2 · num · den · t^2
};

DiscreteGaussian::Parameters DiscreteGaussian::checked(std::uint64_t sigma2_num,
                                                       std::uint64_t sigma2_den) {
  if (sigma2_num < 1) throw InvalidArgument("discrete_gaussian: sigma2_num must be >= 1, got 0");
  if (sigma2_den < 1) throw InvalidArgument("discrete_gaussian: sigma2_den must be >= 1, got 0");
  if (static_cast<u128>(sigma2_num) > (static_cast<u128>(sigma2_den) << 62)) {
    throw InvalidArgument(fmt::format(
        "discrete_gaussian: sigma^2 = sigma2_num / sigma2_den must be <= 2^62, got {} / {}",
        sigma2_num, sigma2_den));
  }
  Parameters p{sigma2_num, sigma2_den, 0, 0, 0};
  // floor(sigma) = floor(sqrt(floor(sigma^2))).
  p.t = isqrt(sigma2_num / sigma2_den) + 1;
  const auto accept_den = [&p]() -> u128 {
    u128 out;
    const u128 nm = static_cast<u128>(p.num) * p.den;
    return __builtin_mul_overflow(nm, static_cast<u128>(2) * p.t * p.t, &out) ? 0 : out;
  };
  if (sigma2_den == 1 && sigma2_num % p.t == 0) {
    p.centre = sigma2_num / p.t;
    p.accept_den = 2 * static_cast<u128>(sigma2_num);
    return p;
  }
  p.accept_den = accept_den();
  if (p.accept_den == 0) {
    const std::uint64_t g = std::gcd(p.num, p.den);
    p.num /= g;
    p.den /= g;
    p.accept_den = accept_den();
  }
  if (p.accept_den == 0) {
    throw InvalidArgument(
        fmt::format("discrete_gaussian: 2 * sigma2_num * sigma2_den * t^2 must be < 2^128 with "
                    "t = floor(sigma) + 1 = {}; got sigma^2 = {} / {} (use a smaller denominator)",
                    p.t, sigma2_num, sigma2_den));
  }
  return p;
}

namespace {

// a^2 / d as q + r/d with r < d, exactly. For a < 2^64 the square fits in 128 bits; otherwise it
// is formed in 256 bits and divided bit by bit. Returns false when q >= 2^128.
bool split_square(u128 a, u128 d, u128& q, u128& r) {
  if ((a >> 64) == 0) {
    const u128 sq = a * a;
    q = sq / d;
    r = sq - q * d;
    return true;
  }
  const u128 a_hi = a >> 64, a_lo = static_cast<std::uint64_t>(a);
  const u128 low = a_lo * a_lo, mid = 2 * (a_hi * a_lo), high = a_hi * a_hi;  // a < 2^127
  const u128 sq_lo = low + (mid << 64);
  const u128 sq_hi = high + (mid >> 64) + (sq_lo < low ? 1 : 0);
  if (sq_hi >= d) return false;
  r = sq_hi;
  q = 0;
  for (int i = 127; i >= 0; --i) {
    const bool carry = (r >> 127) != 0;
    r = (r << 1) | ((sq_lo >> i) & 1);
    q <<= 1;
    if (carry || r >= d) {
      r -= d;
      q |= 1;
    }
  }
  return true;
}

}  // namespace

DiscreteGaussian::DiscreteGaussian(std::uint64_t sigma2_num, std::uint64_t sigma2_den,
                                   Sampler sampler)
    : DiscreteGaussian(checked(sigma2_num, sigma2_den), sampler) {}

DiscreteGaussian::DiscreteGaussian(const Parameters& p, Sampler sampler)
    : num_(p.num),
      den_(p.den),
      scaled_t_(static_cast<u128>(p.t) * p.den),
      centre_(p.centre),
      proposal_(p.t, 1),
      accept_(p.accept_den),
      binned_(sampler == Sampler::automatic && BinnedDiscreteGaussian::eligible(p.num, p.den)
                  ? BinnedDiscreteGaussian::shared(p.num, p.den)
                  : nullptr) {}

std::int64_t DiscreteGaussian::cks(RandomBits& bits) const {
  // CKS20 Alg. 3: Y from the discrete Laplace proposal with scale t, accepted with probability
  // exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)) = exp(-(|Y| t den - num)^2 / (2 num den t^2)).
  // With an integer centre c = sigma^2/t the exponent is (|Y| - c)^2 / (2 num).
  const u128 accept_den = accept_.den();
  for (;;) {
    const std::int64_t y = proposal_(bits);
    const std::uint64_t abs_y =
        y < 0 ? 0 - static_cast<std::uint64_t>(y) : static_cast<std::uint64_t>(y);
    if (centre_ != 0) {
      const std::uint64_t a = abs_y >= centre_ ? abs_y - centre_ : centre_ - abs_y;
      if (accept_(bits, static_cast<u128>(a) * a)) return y;
      continue;
    }
    u128 scaled;
    // |Y| t den >= 2^127 makes the exponent exceed 2^124 (a >= 2^126, accept_den < 2^128):
    // rejected without drawing, see the header.
    if (__builtin_mul_overflow(static_cast<u128>(abs_y), scaled_t_, &scaled) ||
        (scaled >> 127) != 0) {
      continue;
    }
    const u128 a = scaled >= num_ ? scaled - num_ : num_ - scaled;
    if ((a >> 64) == 0) {
      if (accept_(bits, a * a)) return y;
      continue;
    }
    // exp(-a^2/d) = exp(-1)^q · exp(-r/d): q independent Bernoulli(exp(-1)), stopping at the
    // first failure, then Bernoulli(exp(-r/d)). q >= 2^128 (true with probability below
    // exp(-2^128)) is rejected outright.
    u128 q, r;
    if (!split_square(a, accept_den, q, r)) continue;
    bool accepted = true;
    for (u128 i = 0; i < q && accepted; ++i) accepted = bernoulli_exp_minus_one(bits);
    if (accepted && accept_(bits, r)) return y;
  }
}

std::int64_t DiscreteGaussian::operator()(Rng& rng) const {
  RandomBits bits(rng);
  return (*this)(bits);
}

std::int64_t discrete_gaussian(Rng& rng, std::uint64_t sigma2_num, std::uint64_t sigma2_den) {
  return DiscreteGaussian(sigma2_num, sigma2_den)(rng);
}

}  // namespace dpstats
