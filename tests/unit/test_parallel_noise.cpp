// GaussianMechanism::apply_each: chunked noise with split generators (the d = 10^6 streams).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {
namespace {

TEST(ApplyEach, SeededOutputDoesNotDependOnThreads) {
  const auto mech = GaussianMechanism::from_sigma(1.0, 2.0);
  const std::size_t n = 3 * GaussianMechanism::kChunk + 17;
  std::vector<double> values(n, 0.5), one(n), two(n), three(n);
  SeededRng a(9), b(9), c(9);
  mech.apply_each(values, one, a, 1);
  mech.apply_each(values, two, b, 2);
  mech.apply_each(values, three, c, 3);
  EXPECT_EQ(one, two);
  EXPECT_EQ(one, three);
  EXPECT_EQ(a.next_u64(), b.next_u64());  // the parent advanced by one word per chunk
  // Chunks use different streams: the first entries of two chunks differ.
  EXPECT_NE(one[0], one[GaussianMechanism::kChunk]);
}

TEST(ApplyEach, NoiseHasTheMechanismsLawAcrossChunks) {
  const auto mech = GaussianMechanism::from_sigma(1.0, 3.0);
  const std::size_t n = 8 * GaussianMechanism::kChunk;
  std::vector<double> values(n, 0.0), out(n);
  SecureRng rng;
  mech.apply_each(values, out, rng, 2);
  double sum = 0, sum2 = 0;
  for (double v : out) {
    sum += v;
    sum2 += v * v;
  }
  const double mean = sum / n, var = sum2 / n - mean * mean;
  const double sigma = mech.sigma();
  EXPECT_LT(std::abs(mean), 5 * sigma / std::sqrt(static_cast<double>(n)));
  // Var of the sample variance ≈ 2σ⁴/n: 5 standard errors.
  EXPECT_LT(std::abs(var - sigma * sigma), 5 * std::sqrt(2.0 / n) * sigma * sigma);
}

TEST(ApplyEach, ShortSpansAndUnsplittableGeneratorsStaySequential) {
  const auto mech = GaussianMechanism::from_sigma(1.0, 2.0);
  std::vector<double> values(100, 1.0), out(100), ref(100);
  SeededRng a(4), b(4);
  mech.apply_each(values, out, a, 2);
  RandomBits bits(b);
  for (std::size_t i = 0; i < 100; ++i) ref[i] = mech.apply(values[i], bits);
  EXPECT_EQ(out, ref);
  std::vector<double> wrong(99);
  EXPECT_THROW(mech.apply_each(values, wrong, a, 1), InvalidArgument);
  EXPECT_THROW(mech.apply_each(values, out, a, 0), InvalidArgument);
}

}  // namespace
}  // namespace dpstats
