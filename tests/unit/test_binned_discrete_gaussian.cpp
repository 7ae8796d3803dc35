// The binned discrete Gaussian's tables and the exact constant comparisons it rests on: proven
// bounds that contain the constant and tighten with precision, exact decisions on crafted bit
// streams past the 64-bit window, and the proposal's invariants (weights summing to 2^64 exactly,
// every acceptance constant at most 1). Its law is checked in tests/stat/test_sampler_fit.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/random/binned_discrete_gaussian.hpp"
#include "dpstats/random/discrete_gaussian.hpp"
#include "dpstats/random/exp_constant.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {
namespace {

// Returns the scripted words, then zeros.
class ScriptedRng final : public Rng {
 public:
  explicit ScriptedRng(std::vector<std::uint64_t> words) : words_(std::move(words)) {}
  std::uint64_t next_u64() override { return next_ < words_.size() ? words_[next_++] : 0; }
  bool seeded() const noexcept override { return true; }
  std::size_t drawn() const { return next_; }

 private:
  std::vector<std::uint64_t> words_;
  std::size_t next_ = 0;
};

double as_fraction(const std::vector<std::uint64_t>& words, int integer_words) {
  double x = 0;
  for (std::size_t i = 0; i < words.size(); ++i) {
    x += std::ldexp(static_cast<double>(words[i]), 64 * (integer_words - static_cast<int>(i)));
  }
  return x;
}

TEST(ExpConstant, BoundsContainTheConstantAndTighten) {
  // c = exp(-7/3) · 5/4 and exp(-1/2) / (1 - e^-1) · 1/2.
  const ExpConstant a{7, 3, 5, 4, false};
  const ExpConstant b{1, 2, 1, 2, true};
  const double ca = std::exp(-7.0 / 3) * 1.25, cb = std::exp(-0.5) / (1 - std::exp(-1.0)) / 2;
  for (const auto& [c, value] : {std::pair{a, ca}, std::pair{b, cb}}) {
    std::vector<std::uint64_t> lo128, hi128, lo256, hi256;
    c.bounds(128, lo128, hi128);
    c.bounds(256, lo256, hi256);
    ASSERT_EQ(lo128.size(), 3u);
    EXPECT_EQ(lo128[0], 0u);  // c < 1: the integer word is 0
    // Bounds of width at most a few units of 2^-128, around the double value.
    EXPECT_NEAR(as_fraction(lo128, 0), value, 1e-15);
    EXPECT_LE(hi128[2] - lo128[2], 4u);
    EXPECT_EQ(lo128[1], hi128[1]);
    // The 256-bit bounds refine the 128-bit ones: same leading words, within [lo, hi].
    EXPECT_EQ(lo256[1], lo128[1]);
    EXPECT_GE(lo256[2], lo128[2]);
    EXPECT_LE(hi256[2], hi128[2]);
    const ExpConstant::Window w = c.window();
    EXPECT_EQ(w.lo, lo128[1]);
    EXPECT_LE(static_cast<u128>(w.hi) - w.lo, 1u);
  }
  // c = 1 exactly: its lower bound 2^64 is kept as 2^64 - 1.
  EXPECT_EQ((ExpConstant{0, 1, 3, 3, false}.window().lo), ~std::uint64_t{0});
  EXPECT_THROW((ExpConstant{0, 1, 5, 4, false}.window()), InvalidArgument);  // 5/4 > 1
}

TEST(ExpConstant, ExactComparisonPastTheWindow) {
  // c = 1/3 = 0.010101...: u's first 64 bits equal c's, so the decision needs later words.
  const ExpConstant third{0, 1, 1, 3, false};
  const std::uint64_t digits = 0x5555555555555555;
  {
    ScriptedRng rng({digits, digits, 0x6000000000000000});  // u > 1/3 at bit 130
    RandomBits bits(rng);
    EXPECT_FALSE(bernoulli_exp_constant(bits, third, third.window()));
    EXPECT_EQ(rng.drawn(), 3u);
  }
  {
    ScriptedRng rng({digits, digits, 0x4000000000000000});  // u < 1/3 at bit 130
    RandomBits bits(rng);
    EXPECT_TRUE(bernoulli_exp_constant(bits, third, third.window()));
  }
  {
    // Decided by the window alone: two words are buffered, only the leading bits consumed.
    ScriptedRng rng({0x5000000000000000, 0});
    RandomBits bits(rng);
    EXPECT_TRUE(bernoulli_exp_constant(bits, third, third.window()));
    EXPECT_EQ(bits.take(60), 0u);  // the unread bits of the first word are passed on
  }
  // A transcendental c = exp(-1/2): u equal to c on 128 bits, then above or below.
  const ExpConstant c{1, 2, 1, 1, false};
  std::vector<std::uint64_t> lo, hi;
  c.bounds(192, lo, hi);
  ASSERT_EQ(lo[1], hi[1]);
  ASSERT_EQ(lo[2], hi[2]);
  for (const bool above : {true, false}) {
    ScriptedRng rng({lo[1], lo[2], above ? ~std::uint64_t{0} : 0, above ? ~std::uint64_t{0} : 0});
    RandomBits bits(rng);
    EXPECT_EQ(bernoulli_exp_constant(bits, c, c.window()), !above);
  }
}

TEST(BinnedDiscreteGaussian, Eligibility) {
  EXPECT_TRUE(BinnedDiscreteGaussian::eligible(std::uint64_t{1} << 20, 1));
  EXPECT_FALSE(BinnedDiscreteGaussian::eligible((std::uint64_t{1} << 20) - 1, 1));
  EXPECT_TRUE(BinnedDiscreteGaussian::eligible(std::uint64_t{1} << 62, 1));
  EXPECT_FALSE(BinnedDiscreteGaussian::eligible(std::uint64_t{1} << 62, std::uint64_t{1} << 33));
  EXPECT_THROW(BinnedDiscreteGaussian(1000, 1), InvalidArgument);
}

TEST(BinnedDiscreteGaussian, ProposalInvariants) {
  for (const auto& [num, den] :
       {std::pair<std::uint64_t, std::uint64_t>{std::uint64_t{1} << 20, 1},
        {17592186044417, 1},
        {(std::uint64_t{3} << 40) + 7, 1000},
        {std::uint64_t{1} << 62, 1}}) {
    const BinnedDiscreteGaussian g(num, den);
    const double sigma = std::sqrt(static_cast<double>(num) / static_cast<double>(den));
    const double width = std::ldexp(1.0, g.bin_bits());
    EXPECT_GT(width, sigma / 32);
    EXPECT_LE(width, sigma / 16);
    EXPECT_GE(static_cast<double>(g.core_bins()) * width * width, sigma * sigma * (1 - 1e-12));
    u128 total = static_cast<u128>(g.tail_weight()) + g.reject_weight();
    for (std::size_t j = 0; j < g.core_bins(); ++j) {
      total += g.bin_weight(j);
      EXPECT_GE(g.bin_weight(j), 1u);
      const ExpConstant::Window& w = g.bin_window(j);
      EXPECT_LE(w.hi, static_cast<u128>(1) << 64) << "C_j > 1 at bin " << j;
      EXPECT_LE(static_cast<u128>(w.lo), w.hi);
      EXPECT_LE(g.bin_floor(j), w.lo) << "the floor must bound C_j exp(-delta) <= C_j";
    }
    EXPECT_EQ(total, static_cast<u128>(1) << 64);
    // The proposal wastes almost nothing: the reject outcome is a few thousand units of 2^-64.
    EXPECT_LT(g.reject_weight(), std::uint64_t{1} << 20);
    // Bin 0's constant is exactly 1 (E_0 = 1, P_0 = D); the tail's is at most 1.
    EXPECT_EQ(g.bin_window(0).lo, ~std::uint64_t{0});
    // Near sigma the floor accepts most proposals without arithmetic on m.
    const auto at_sigma = static_cast<std::size_t>(sigma / width);
    EXPECT_GT(std::ldexp(static_cast<double>(g.bin_floor(at_sigma)), -64), 0.9);
    EXPECT_LE(g.tail_constant().window().hi, static_cast<u128>(1) << 64);
  }
}

TEST(BinnedDiscreteGaussian, SharedTablesAndSameLawAsCks) {
  EXPECT_EQ(BinnedDiscreteGaussian::shared(std::uint64_t{1} << 30, 1),
            BinnedDiscreteGaussian::shared(std::uint64_t{1} << 30, 1));
  // Seeded draws differ between the algorithms but both are symmetric integers around 0 with
  // sigma^2 = 2^30 (moments are tested in test_samplers.cpp, the law in tests/stat).
  SeededRng rng(7);
  const DiscreteGaussian binned(std::uint64_t{1} << 30, 1);
  const DiscreteGaussian cks(std::uint64_t{1} << 30, 1, DiscreteGaussian::Sampler::cks);
  double s2_binned = 0, s2_cks = 0;
  constexpr int n = 20000;
  for (int i = 0; i < n; ++i) {
    const auto a = static_cast<double>(binned(rng)), b = static_cast<double>(cks(rng));
    s2_binned += a * a;
    s2_cks += b * b;
  }
  // Var of a sample variance ~ 2 sigma^4 / n: 5 standard errors.
  const double tolerance = 5 * std::sqrt(2.0 / n);
  EXPECT_NEAR(s2_binned / n / std::ldexp(1.0, 30), 1, tolerance);
  EXPECT_NEAR(s2_cks / n / std::ldexp(1.0, 30), 1, tolerance);
}

}  // namespace
}  // namespace dpstats
