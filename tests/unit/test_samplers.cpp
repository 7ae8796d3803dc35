// Exact samplers: decisions on crafted bit streams (ties in the lazy comparisons are settled by
// the exact fallback, unread bits are passed on intact), parameter validation, and seeded
// moment checks with thresholds from the exact distributions (failure probability < 1e-6 each).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/random/bernoulli.hpp"
#include "dpstats/random/discrete_gaussian.hpp"
#include "dpstats/random/discrete_laplace.hpp"
#include "dpstats/random/geometric.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {
namespace {

constexpr double kZ = 4.8916;  // P(|N(0,1)| > kZ) = 1e-6
constexpr int kSamples = 200000;

// Returns the scripted words first, then words from a seeded generator; counts every draw.
class ScriptedRng final : public Rng {
 public:
  explicit ScriptedRng(std::vector<std::uint64_t> words) : words_(std::move(words)) {}
  std::uint64_t next_u64() override {
    ++drawn_;
    return drawn_ <= words_.size() ? words_[drawn_ - 1] : fallback_.next_u64();
  }
  bool seeded() const noexcept override { return true; }
  std::size_t drawn() const { return drawn_; }

 private:
  std::vector<std::uint64_t> words_;
  std::size_t drawn_ = 0;
  SeededRng fallback_{99};
};

template <class F>
void expect_invalid(F f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected an InvalidArgument naming '" << needle << "'";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// |count - n p| within kZ binomial standard deviations.
void expect_frequency(long count, long n, double p, const std::string& what) {
  const double sd = std::sqrt(n * p * (1 - p));
  EXPECT_LE(std::abs(count - n * p), kZ * sd + 1e-9)
      << what << ": " << count << " of " << n << ", p = " << p;
}

const u128 kTwo64 = static_cast<u128>(1) << 64;

// ---- Bernoulli(num/den) -----------------------------------------------------------------------

TEST(BernoulliRational, ZeroAndOneNeedNoBits) {
  ScriptedRng rng({});
  for (int i = 0; i < 100; ++i) {
    EXPECT_FALSE(bernoulli_rational(rng, 0, 7));
    EXPECT_TRUE(bernoulli_rational(rng, 7, 7));
    EXPECT_TRUE(bernoulli_rational(rng, kTwo64 * 5, kTwo64 * 5));
  }
  EXPECT_EQ(rng.drawn(), 0u);
}

TEST(BernoulliRational, FrequenciesMatch) {
  struct Case {
    u128 num, den;
    double p;
  };
  const Case cases[] = {{1, 3, 1.0 / 3},
                        {2, 7, 2.0 / 7},
                        {999, 1000, 0.999},
                        {1, 1000, 0.001},
                        {kTwo64 + 1, 2 * kTwo64 + 3, 0.5},
                        {(static_cast<u128>(1) << 120) / 3, static_cast<u128>(1) << 120, 1.0 / 3}};
  SeededRng rng(1);
  for (const Case& c : cases) {
    long hits = 0;
    for (int i = 0; i < kSamples; ++i) hits += bernoulli_rational(rng, c.num, c.den);
    expect_frequency(hits, kSamples, c.p, "bernoulli_rational");
  }
}

// p = 1/3 = 0.010101...: a first word equal to p's first 64 digits is a tie, settled by the next
// word against p's next digits, for denominators in each of the long division's three regimes
// (below 2^64, below 2^96, above).
TEST(BernoulliRational, TieIsSettledByLaterDigits) {
  const std::uint64_t third = 0x5555555555555555ULL;
  const u128 scales[] = {1, kTwo64, static_cast<u128>(1) << 100};
  for (const u128 scale : scales) {
    const u128 num = scale, den = 3 * scale;
    ScriptedRng below({third, third - 1});
    EXPECT_TRUE(bernoulli_rational(below, num, den));
    EXPECT_EQ(below.drawn(), 2u);
    ScriptedRng above({third, third + 1});
    EXPECT_FALSE(bernoulli_rational(above, num, den));
    ScriptedRng third_word({third, third, 0});
    EXPECT_TRUE(bernoulli_rational(third_word, num, den));
    EXPECT_EQ(third_word.drawn(), 3u);
  }
}

TEST(BernoulliRational, ExactBoundaryIsNotBelow) {
  // u = 1/2 exactly on the first 64 digits: the digits of 1/2 end there, so u >= 1/2.
  ScriptedRng at({0x8000000000000000ULL});
  EXPECT_FALSE(bernoulli_rational(at, 1, 2));
  ScriptedRng below({0x7FFFFFFFFFFFFFFFULL});
  EXPECT_TRUE(bernoulli_rational(below, 1, 2));
}

TEST(BernoulliRational, RejectsBadParameters) {
  SeededRng rng(1);
  expect_invalid([&] { bernoulli_rational(rng, 1, 0); }, "den must be >= 1");
  expect_invalid([&] { bernoulli_rational(rng, 5, 4); }, "num must be in [0, den]");
}

// ---- Bernoulli(exp(-gamma)) -------------------------------------------------------------------

TEST(BernoulliExp, FrequenciesMatch) {
  SeededRng rng(2);
  const double gammas[] = {0.25, 1, 1.7, 5};
  for (const double gamma : gammas) {
    long hits = 0, hits_rational = 0;
    for (int i = 0; i < kSamples; ++i) hits += bernoulli_exp(rng, gamma);
    const auto num = static_cast<u128>(gamma * 1000);
    for (int i = 0; i < kSamples; ++i) hits_rational += bernoulli_exp(rng, num, u128{1000});
    expect_frequency(hits, kSamples, std::exp(-gamma), "bernoulli_exp(double)");
    expect_frequency(hits_rational, kSamples, std::exp(-gamma), "bernoulli_exp(num, den)");
  }
}

TEST(BernoulliExp, LargeDenominatorsAndNumerators) {
  SeededRng rng(3);
  const u128 den = (static_cast<u128>(1) << 125) + 12345;
  long hits = 0;
  for (int i = 0; i < kSamples; ++i) hits += bernoulli_exp(rng, den / 2, den);
  expect_frequency(hits, kSamples, std::exp(-0.5), "den near 2^125");
  hits = 0;
  for (int i = 0; i < kSamples; ++i) hits += bernoulli_exp(rng, 3 * den, 2 * den);
  expect_frequency(hits, kSamples, std::exp(-1.5), "gamma > 1 with a huge den");
}

// gamma = 1/3: a first word equal to 1/3's digits is a tie with T_1 = 1/3, settled by the next
// word; below 1/3 the chain's next threshold 1/18 is far below, so K = 2 (false).
TEST(BernoulliExp, ChainTieIsExact) {
  const std::uint64_t third = 0x5555555555555555ULL;
  ScriptedRng below({third, third - 1});
  EXPECT_FALSE(bernoulli_exp(below, 1, 3));
  EXPECT_EQ(below.drawn(), 2u);
  ScriptedRng above({third, third + 1});
  EXPECT_TRUE(bernoulli_exp(above, 1, 3));
  // gamma = 1: thresholds 1/k!; a tie with 1/6 = 0.0010101... (next digits 0xAAAA...) decides
  // between K = 3 (u >= 1/6, true) and K = 4 (false).
  const std::uint64_t sixth = 0x2AAAAAAAAAAAAAAAULL;
  ScriptedRng sixth_below({sixth, 0xAAAAAAAAAAAAAAA9ULL});
  EXPECT_FALSE(bernoulli_exp(sixth_below, 1, 1));
  ScriptedRng sixth_above({sixth, 0xAAAAAAAAAAAAAAABULL});
  EXPECT_TRUE(bernoulli_exp(sixth_above, 1, 1));
}

TEST(BernoulliExp, ReadsOnlyTheBitsItNeeds) {
  // exp(-1) by the chain: a first bit 1 means u >= 1/2 = T_2, so K = 2 (false) after one bit.
  ScriptedRng rng({~std::uint64_t{0}});
  RandomBits bits(rng);
  EXPECT_FALSE(bernoulli_exp_minus_one(bits));
  EXPECT_EQ(bits.take(63), 0x7FFFFFFFFFFFFFFFULL);
}

TEST(BernoulliExp, DoubleMatchesItsDyadicRational) {
  SeededRng a(4), b(4);
  for (int i = 0; i < 10000; ++i) {
    ASSERT_EQ(bernoulli_exp(a, 0.375), bernoulli_exp(b, u128{3}, u128{8}));
    ASSERT_EQ(bernoulli_exp(a, 6.5), bernoulli_exp(b, u128{13}, u128{2}));
  }
}

TEST(BernoulliExp, Extremes) {
  ScriptedRng none({});
  EXPECT_TRUE(bernoulli_exp(none, 0.0));
  EXPECT_TRUE(bernoulli_exp(none, u128{0}, u128{5}));
  EXPECT_EQ(none.drawn(), 0u);
  SeededRng rng(5);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(bernoulli_exp(rng, 1e-300));  // gamma = m / 2^k with k > 127
    EXPECT_TRUE(bernoulli_exp(rng, 5e-324));  // the smallest subnormal
    EXPECT_FALSE(bernoulli_exp(rng, 1e300));  // gamma >= 2^127
    EXPECT_FALSE(bernoulli_exp(rng, 200.0));  // exp(-200)
  }
  long hits = 0;
  for (int i = 0; i < kSamples; ++i) hits += bernoulli_exp(rng, std::ldexp(1.0, -3));
  expect_frequency(hits, kSamples, std::exp(-0.125), "gamma = 2^-3");
}

TEST(BernoulliExp, RejectsBadParameters) {
  SeededRng rng(1);
  expect_invalid([&] { bernoulli_exp(rng, std::nan("")); }, "gamma must be a finite number >= 0");
  expect_invalid([&] { bernoulli_exp(rng, -1.0); }, "gamma");
  expect_invalid([&] { bernoulli_exp(rng, INFINITY); }, "gamma");
  expect_invalid([&] { bernoulli_exp(rng, u128{1}, u128{0}); }, "den must be >= 1");
  expect_invalid([&] { BernoulliExp(u128{0}); }, "den must be >= 1");
}

// ---- uniform_below ----------------------------------------------------------------------------

TEST(UniformBelow, RangeAndFrequencies) {
  SeededRng rng(6);
  RandomBits bits(rng);
  EXPECT_EQ(bits.uniform_below(1), 0u);
  long counts[3] = {0, 0, 0};
  for (int i = 0; i < kSamples; ++i) ++counts[bits.uniform_below(3)];
  for (const long c : counts) expect_frequency(c, kSamples, 1.0 / 3, "uniform_below(3)");
  const std::uint64_t big = (std::uint64_t{1} << 63) + 3;
  long upper_half = 0;
  for (int i = 0; i < kSamples; ++i) {
    const std::uint64_t x = bits.uniform_below(big);
    ASSERT_LT(x, big);
    upper_half += x >= big / 2;
  }
  expect_frequency(upper_half, kSamples, 0.5, "uniform_below(2^63 + 3) upper half");
}

// ---- floor(t E) and geometric -----------------------------------------------------------------

// von Neumann's runs on 8-bit chunks, t = 256 so that floor(t F) is F's first byte.
TEST(ExponentialFloor, CraftedRunsInOneWord) {
  // Trial 1: 0x90 > 0x50, then 0x70 > 0x50 ends an even run: rejected (V = 1). Trial 2: 0x60,
  // then 0x80 > 0x60: odd run, accepted with F = 0x60.../256. X = 96 + 256.
  ScriptedRng rng({0x9050706080000000ULL});
  RandomBits bits(rng);
  EXPECT_EQ(exponential_floor(bits, 256, 1), 96u + 256u);
  EXPECT_EQ(rng.drawn(), 2u);  // the reader keeps 64 bits of lookahead
}

TEST(ExponentialFloor, CraftedRunWithTies) {
  // Trial 1: x1 and x2 tie on their first chunk (0x80), so both take a second chunk:
  // x1 = 0x8040, x2 = 0x8020 < x1; x3 = 0xFFFF (16 digits, matching x2) ends an even run.
  // Trial 2: 0xA0 > 0x10, then 0xF0 > 0x10: even, rejected. Trial 3: 0x30, then 0x50 > 0x30:
  // accepted with F = 0x30.../256. V = 2, X = 48 + 2·256.
  ScriptedRng rng({0x80804020FFFFA010ULL, 0xF030500000000000ULL});
  RandomBits bits(rng);
  EXPECT_EQ(exponential_floor(bits, 256, 1), 48u + 512u);
  // floor(t F) / t_den and clamping follow the same X.
  ScriptedRng again({0x80804020FFFFA010ULL, 0xF030500000000000ULL});
  RandomBits bits_again(again);
  EXPECT_EQ(exponential_floor(bits_again, 256, 8), (48u + 512u) / 8);
}

TEST(ExponentialFloor, FloorSettledByFurtherDigits) {
  // The run: x1 = 0x55, x2 = 0xFF > x1, accepted. t = 3: F's first 64 digits are 0x5555...55
  // (the rest of the first word and the top byte of the second), so 3F is within 3·2^-64 of 1
  // and the next 64 digits (the second word's last 56 bits and the third word's top 8) decide
  // against 1/3's: 0x...54 below, 0x...56 above.
  ScriptedRng low({0x55FF555555555555ULL, 0x5555555555555555ULL, 0x5400000000000000ULL});
  RandomBits bits_low(low);
  EXPECT_EQ(exponential_floor(bits_low, 3, 1), 0u);
  ScriptedRng high({0x55FF555555555555ULL, 0x5555555555555555ULL, 0x5600000000000000ULL});
  RandomBits bits_high(high);
  EXPECT_EQ(exponential_floor(bits_high, 3, 1), 1u);
}

TEST(Geometric, MeanMatches) {
  SeededRng rng(7);
  struct Case {
    std::uint64_t num, den;
  };
  for (const Case c : {Case{1, 2}, Case{3, 1}, Case{1, 1000}}) {
    const double q = std::exp(-static_cast<double>(c.num) / static_cast<double>(c.den));
    const double mean = q / (1 - q), sd = std::sqrt(q) / (1 - q);
    double sum = 0;
    for (int i = 0; i < kSamples; ++i) sum += static_cast<double>(geometric_exp(rng, c.num, c.den));
    EXPECT_LE(std::abs(sum / kSamples - mean), kZ * sd / std::sqrt(kSamples))
        << c.num << "/" << c.den;
  }
}

TEST(Geometric, RejectsBadParameters) {
  SeededRng rng(1);
  RandomBits bits(rng);
  expect_invalid([&] { geometric_exp(rng, 0, 1); }, "num must be >= 1");
  expect_invalid([&] { geometric_exp(rng, 1, 0); }, "den must be >= 1");
  expect_invalid([&] { exponential_floor(bits, 0, 1); }, "t_num must be >= 1");
  expect_invalid([&] { exponential_floor(bits, 1, 0); }, "t_den must be >= 1");
}

// ---- geometric of a double rate (GeometricTrials) --------------------------------------------

// (253/256)^32 = 253^32 / 2^256 = r^(2^5) for q = 3/256, as four 64-bit words, most significant
// first (253^32 is odd, so its last word is not 0).
std::vector<std::uint64_t> power_253_32() {
  std::vector<std::uint64_t> w = {1, 0, 0, 0};  // least significant first
  for (int i = 0; i < 32; ++i) {
    u128 carry = 0;
    for (auto& x : w) {
      const u128 t = static_cast<u128>(x) * 253 + carry;
      x = static_cast<std::uint64_t>(t);
      carry = t >> 64;
    }
  }
  return {w[3], w[2], w[1], w[0]};
}

TEST(GeometricTrials, PowersAreExactWhereTheBracketIsOpen) {
  // q = 3/256: (253/256)^32 needs 256 bits, so its 128-bit bracket is open and a uniform that
  // agrees with it on 128 bits is settled at 256 bits, exactly: U = x, x - 2^-256, x + 2^-320.
  const GeometricTrials g(3.0 / 256);
  ASSERT_EQ(g.levels(), 6);  // (253/256)^64 = 0.47 <= 1/2 < (253/256)^32
  const auto x = power_253_32();
  auto below = [&](std::vector<std::uint64_t> words) {
    ScriptedRng rng(std::move(words));
    RandomBits bits(rng);
    return g.below_power(bits, 5);
  };
  EXPECT_FALSE(below({x[0], x[1], x[2], x[3], 0}));                    // U = x: not below
  EXPECT_TRUE(below({x[0], x[1], x[2], x[3] - 1, ~std::uint64_t{0}}));  // just below
  EXPECT_FALSE(below({x[0], x[1], x[2], x[3], 1}));                    // just above
  EXPECT_TRUE(below({x[0] - 1}));                                      // on the first word
  EXPECT_FALSE(below({x[0] + 1}));
}

TEST(GeometricTrials, SmallPowersAreDecidedOnTheirBits) {
  // q = 1/2: r = 1/2, r^(2^j) = 2^-(2^j) exactly; U = that value is not below it.
  const GeometricTrials g(0.5);
  EXPECT_EQ(g.levels(), 0);
  ScriptedRng rng({std::uint64_t{1} << 63, 0, 0, 0});
  RandomBits bits(rng);
  EXPECT_FALSE(g.below_power(bits, 0));
}

TEST(GeometricTrials, MeanMatchesAndRateOneIsZero) {
  SeededRng rng(8);
  RandomBits bits(rng);
  for (const double q : {0.9, 1.0 / 3, 1.0 / 4000, 0x1p-30}) {
    const GeometricTrials g(q);
    const double mean = (1 - q) / q, sd = std::sqrt(1 - q) / q;
    double sum = 0;
    for (int i = 0; i < kSamples; ++i) sum += static_cast<double>(g(bits));
    EXPECT_LE(std::abs(sum / kSamples - mean), kZ * sd / std::sqrt(kSamples)) << q;
  }
  const GeometricTrials one(1.0);
  EXPECT_EQ(one(bits), 0u);
}

TEST(GeometricTrials, RejectsBadRates) {
  for (const double q : {0.0, -0.5, 1.5, 0x1p-65, std::nan("")})
    expect_invalid([q] { GeometricTrials g(q); }, "rate q must be in [2^-64, 1]");
}

// ---- discrete Laplace -------------------------------------------------------------------------

// Sample mean and variance against the exact moments of P(y) ∝ q^|y|, q = exp(-1/t):
// Var = 2q/(1-q)^2, E[Y^4] = 2 (1-q)/(1+q) · q (1 + 11q + 11q^2 + q^3)/(1-q)^5.
void expect_laplace_moments(std::uint64_t num, std::uint64_t den, std::uint64_t seed) {
  const double t = static_cast<double>(num) / static_cast<double>(den);
  const double q = std::exp(-1 / t), p = -std::expm1(-1 / t);  // p = 1 - q
  const double var = 2 * q / (p * p);
  const double m4 = 2 * q * (1 + 11 * q + 11 * q * q + q * q * q) / ((1 + q) * std::pow(p, 4));
  SeededRng rng(seed);
  const DiscreteLaplace sampler(num, den);
  double sum = 0, sum2 = 0;
  for (int i = 0; i < kSamples; ++i) {
    const auto y = static_cast<double>(sampler(rng));
    sum += y;
    sum2 += y * y;
  }
  const double n = kSamples;
  EXPECT_LE(std::abs(sum / n), kZ * std::sqrt(var / n)) << "mean, t = " << t;
  EXPECT_LE(std::abs(sum2 / n - var), kZ * std::sqrt((m4 - var * var) / n))
      << "variance, t = " << t;
}

TEST(DiscreteLaplace, SymmetricWithTheExactVariance) {
  expect_laplace_moments(1, 2, 11);
  expect_laplace_moments(3, 1, 12);
  expect_laplace_moments(1000, 7, 13);
  expect_laplace_moments(std::uint64_t{1} << 40, std::uint64_t{1} << 20, 14);
  expect_laplace_moments((std::uint64_t{1} << 56) - 1, 1, 15);
}

TEST(DiscreteLaplace, RejectsBadParameters) {
  SeededRng rng(1);
  expect_invalid([&] { discrete_laplace(rng, 0, 1); }, "scale_num must be in [1, 2^56)");
  expect_invalid([&] { discrete_laplace(rng, std::uint64_t{1} << 56, 1); }, "scale_num");
  expect_invalid([&] { discrete_laplace(rng, 1, 0); }, "scale_den must be >= 1");
}

// ---- discrete Gaussian ------------------------------------------------------------------------

// Exact variance and fourth moment by summing the pmf (terms beyond 40 sigma are below 1e-340).
void expect_gaussian_moments(std::uint64_t num, std::uint64_t den, std::uint64_t seed,
                             DiscreteGaussian::Sampler which = DiscreteGaussian::Sampler::automatic) {
  const double s2 = static_cast<double>(num) / static_cast<double>(den);
  double var = s2, m4 = 3 * s2 * s2;  // exact to double precision for sigma >= 3 (Poisson sum)
  if (s2 < 9) {
    double z = 1, e2 = 0, e4 = 0;
    for (int y = 1; y < 200; ++y) {
      const double w = 2 * std::exp(-y * y / (2 * s2));
      z += w;
      e2 += w * y * y;
      e4 += w * y * y * y * y;
    }
    var = e2 / z;
    m4 = e4 / z;
  }
  SeededRng rng(seed);
  const DiscreteGaussian sampler(num, den, which);
  double sum = 0, sum2 = 0;
  for (int i = 0; i < kSamples; ++i) {
    const auto y = static_cast<double>(sampler(rng));
    sum += y;
    sum2 += y * y;
  }
  const double n = kSamples;
  EXPECT_LE(std::abs(sum / n), kZ * std::sqrt(var / n)) << "mean, sigma^2 = " << s2;
  EXPECT_LE(std::abs(sum2 / n - var), kZ * std::sqrt((m4 - var * var) / n))
      << "variance, sigma^2 = " << s2;
}

TEST(DiscreteGaussian, SymmetricWithTheExactVariance) {
  expect_gaussian_moments(1, 3, 21);
  expect_gaussian_moments(2, 1, 22);  // t = 2 divides 2: integer centre
  expect_gaussian_moments(100, 1, 23);
  expect_gaussian_moments(std::uint64_t{1} << 46, 1, 24);
  // t = 2^23 + 1 divides sigma^2: the integer-centre form of the acceptance exponent.
  expect_gaussian_moments(((std::uint64_t{1} << 23) + 1) << 23, 1, 26);
  // sigma^2 = (2^63 - 1) / 2^20: |Y| t den - num often exceeds 2^64 (the 256-bit square).
  expect_gaussian_moments((std::uint64_t{1} << 63) - 1, std::uint64_t{1} << 20, 25);
  // The same large sigmas through CKS20 (the binned sampler draws them by default).
  constexpr auto cks = DiscreteGaussian::Sampler::cks;
  expect_gaussian_moments(std::uint64_t{1} << 46, 1, 27, cks);
  expect_gaussian_moments(((std::uint64_t{1} << 23) + 1) << 23, 1, 28, cks);
  expect_gaussian_moments((std::uint64_t{1} << 63) - 1, std::uint64_t{1} << 20, 29, cks);
  // The binned sampler at its smallest sigma (2^10), a non-integer sigma^2 and an odd one.
  expect_gaussian_moments(std::uint64_t{1} << 20, 1, 30);
  expect_gaussian_moments((std::uint64_t{3} << 40) + 7, 1000, 31);
  expect_gaussian_moments(17592186044417, 1, 32);
}

TEST(DiscreteGaussian, ProposalScaleIsFloorSigmaPlusOne) {
  EXPECT_EQ(DiscreteGaussian(1, 3).proposal_scale(), 1u);
  EXPECT_EQ(DiscreteGaussian(10, 1).proposal_scale(), 4u);
  EXPECT_EQ(DiscreteGaussian(16, 1).proposal_scale(), 5u);
  EXPECT_EQ(DiscreteGaussian(std::uint64_t{1} << 62, 1).proposal_scale(),
            (std::uint64_t{1} << 31) + 1);
  EXPECT_EQ(DiscreteGaussian(100, 4).proposal_scale(), 6u);
}

TEST(DiscreteGaussian, RejectsBadParameters) {
  SeededRng rng(1);
  expect_invalid([&] { discrete_gaussian(rng, 0, 1); }, "sigma2_num must be >= 1");
  expect_invalid([&] { discrete_gaussian(rng, 1, 0); }, "sigma2_den must be >= 1");
  expect_invalid([&] { discrete_gaussian(rng, (std::uint64_t{1} << 62) + 1, 1); },
                 "sigma^2 = sigma2_num / sigma2_den must be <= 2^62");
  // Coprime, both near 2^64: 2 num den t^2 does not fit in 128 bits.
  expect_invalid([&] { discrete_gaussian(rng, ~std::uint64_t{0}, ~std::uint64_t{0} - 1); },
                 "must be < 2^128");
}

}  // namespace
}  // namespace dpstats
