// The lattice l2-Laplace (mechanisms/l2_laplace.hpp; docs/proofs/heavy-tailed.md §2.1):
// the exact integer law P(z) ∝ exp(-a⌈‖z‖⌉), the radius law at a fine lattice, the d > 32
// fallback, and the corrected tail bound (erratum §2.1). Thresholds from stat/fit.hpp (false
// alarm < 1e-6 per test).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "dpstats/mechanisms/l2_laplace.hpp"
#include "stat/fit.hpp"

namespace dpstats {
namespace {

TEST(HeavyTailedL2Laplace, IntegerLawIsExactOnACoarseLattice) {
  // d = 2, a = 0.7 per lattice unit: ⌈‖z‖⌉ differs from ‖z‖ by up to 1, so a sampler of
  // exp(-a‖z‖) (no ceiling) or of the proposal alone is rejected.
  const auto a_num = static_cast<std::uint64_t>(0.7 * 0x1p55);
  const LatticeL2Laplace sampler(2, a_num);
  const double a = static_cast<double>(a_num) * 0x1p-55;
  const int K = 4;  // cells |z_i| <= K, plus one "outside" cell
  std::vector<double> p_ceil, p_plain;
  double z_ceil = 0, z_plain = 0;
  for (int i = -60; i <= 60; ++i) {
    for (int j = -60; j <= 60; ++j) {
      const double r = std::hypot(i, j);
      z_ceil += std::exp(-a * std::ceil(r - 1e-12));
      z_plain += std::exp(-a * r);
    }
  }
  double in_ceil = 0, in_plain = 0;
  for (int i = -K; i <= K; ++i) {
    for (int j = -K; j <= K; ++j) {
      const double r = std::hypot(i, j);
      p_ceil.push_back(std::exp(-a * std::ceil(r - 1e-12)) / z_ceil);
      p_plain.push_back(std::exp(-a * r) / z_plain);
      in_ceil += p_ceil.back();
      in_plain += p_plain.back();
    }
  }
  p_ceil.push_back(1 - in_ceil);
  p_plain.push_back(1 - in_plain);
  std::vector<long> counts(p_ceil.size(), 0);
  SeededRng rng(811);
  RandomBits bits(rng);
  std::int64_t z[2];
  for (int s = 0; s < 200000; ++s) {
    sampler.sample(bits, z);
    if (std::abs(z[0]) <= K && std::abs(z[1]) <= K) {
      ++counts[static_cast<std::size_t>((z[0] + K) * (2 * K + 1) + (z[1] + K))];
    } else {
      ++counts.back();
    }
  }
  const auto good = fit::chi_square_test(counts, p_ceil);
  EXPECT_TRUE(good.passes()) << good.statistic << " > " << good.threshold;
  EXPECT_FALSE(fit::chi_square_test(counts, p_plain).passes());
}

TEST(HeavyTailedL2Laplace, RadiusIsGammaAtAFineLattice) {
  SeededRng rng(812);
  for (const std::size_t d : {1, 3, 8}) {
    const double beta = 0.7;
    const L2LaplaceMechanism m(beta, 1.0, d);
    ASSERT_EQ(m.sampler(), "lattice_l2_laplace");
    std::vector<double> radii(20000);
    const Eigen::VectorXd zero = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(d));
    for (double& r : radii) r = m.apply(zero, rng).norm();
    const double shape = static_cast<double>(d);
    const auto cdf = [&](double r) { return r <= 0 ? 0.0 : 1 - fit::gamma_q(shape, r / m.beta()); };
    const auto v = fit::ks_test(radii, cdf);
    EXPECT_TRUE(v.passes()) << d << ": " << v.statistic << " > " << v.threshold;
    const auto wrong = [&](double r) {
      return r <= 0 ? 0.0 : 1 - fit::gamma_q(shape, r / (0.8 * m.beta()));
    };
    EXPECT_FALSE(fit::ks_test(radii, wrong).passes()) << d;
  }
}

TEST(HeavyTailedL2Laplace, LargeDimensionFallsBackToCoordinateLaplace) {
  const L2LaplaceMechanism m(1.0, 1.0, 40);
  EXPECT_EQ(m.sampler(), "coordinate_laplace");
  EXPECT_TRUE(m.certified());
  // l1 sensitivity √40 per coordinate scale (plus the lattice allowance).
  EXPECT_GE(m.beta(), std::sqrt(40.0));
  EXPECT_LE(m.beta(), std::sqrt(40.0) * 1.001);
  const L2LaplaceMechanism f(1.0, 1.0, 40, NoiseMode::fast_float);
  EXPECT_FALSE(f.certified());
  EXPECT_EQ(f.sampler(), "float_gamma_radius");
}

TEST(HeavyTailedL2Laplace, CorrectedTailBoundHoldsAndThePapersFails) {
  // Erratum §2.1: P(Gamma(100) > 103) ≈ 0.37, not <= e^-3; P(‖b‖ > β(2d ln2 + 2t)) <= e^-t holds.
  EXPECT_NEAR(fit::gamma_q(100, 103), 0.37, 0.01);
  EXPECT_GT(fit::gamma_q(100, 103), std::exp(-3.0));
  for (const double d : {1.0, 10.0, 100.0, 1000.0}) {
    for (const double t : {1.0, 3.0, 10.0}) {
      EXPECT_LE(fit::gamma_q(d, 2 * d * std::log(2.0) + 2 * t), std::exp(-t)) << d << " " << t;
    }
  }
}

}  // namespace
}  // namespace dpstats
