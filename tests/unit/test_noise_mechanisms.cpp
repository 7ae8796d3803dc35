// Laplace, Gaussian and l2-Laplace mechanisms: lattice properties (power-of-two step, outputs
// exact multiples of it, clamping), calibration (scale >= Δ/ε, rho <= requested, sigma against
// the analytic and discrete calibrations), the fast_float opt-in, ledger entries and parameter
// validation.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/l2_laplace.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/privacy/calibration.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats {
namespace {

constexpr double kZ = 4.8916;  // P(|N(0,1)| > kZ) = 1e-6

template <class F>
void expect_invalid(F f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected an InvalidArgument naming '" << needle << "'";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

bool is_power_of_two(double g) {
  int exponent = 0;
  return g > 0 && std::frexp(g, &exponent) == 0.5;
}

// x is an integer multiple of g (a power of two): x/g is exact, so it must be an integer.
bool on_lattice(double x, double g) { return std::floor(x / g) == x / g; }

// ---- Laplace ----------------------------------------------------------------------------------

TEST(LaplaceMechanism, LatticeAndScale) {
  struct Case {
    double sensitivity, epsilon;
    std::size_t d;
  };
  for (const Case c : {Case{1, 1, 1}, Case{0.3, 0.1, 1}, Case{1e-7, 2, 5}, Case{1e6, 1e-3, 100},
                       Case{2, 1e-9, 1000}}) {
    const LaplaceMechanism m(c.sensitivity, c.epsilon, c.d);
    const double g = m.granularity();
    EXPECT_TRUE(is_power_of_two(g)) << g;
    EXPECT_GE(m.noise_scale(), c.sensitivity / c.epsilon);
    // Rounding to the lattice costs at most d extra steps of sensitivity, plus the rounding up
    // of the scale: below 2^-19 relative for d <= 100 at these parameters.
    EXPECT_LE(m.noise_scale(), c.sensitivity / c.epsilon * (1 + 1.1 * c.d * g / c.sensitivity + 1e-9))
        << c.sensitivity << " " << c.epsilon << " " << c.d;
    if (c.epsilon >= 1e-3) EXPECT_LE(g, c.sensitivity / (static_cast<double>(c.d) * 0x1p20));
    EXPECT_EQ(m.mode(), NoiseMode::secure);
    SeededRng rng(1);
    for (int i = 0; i < 1000; ++i) {
      const double y = m.apply(0.123456789, rng);
      ASSERT_TRUE(on_lattice(y, g)) << y << " " << g;
    }
  }
}

TEST(LaplaceMechanism, ScaleIsWithinTwoToMinusNineteenForScalars) {
  const LaplaceMechanism m(1, 1);
  EXPECT_GE(m.noise_scale(), 1.0);
  EXPECT_LE(m.noise_scale(), 1 + 0x1p-19);
  EXPECT_EQ(m.granularity(), 0x1p-20);
}

TEST(LaplaceMechanism, ClampsHugeInputsToTheLatticeRange) {
  const LaplaceMechanism m(1, 1);
  const double bound = 0x1p60 * m.granularity();
  SeededRng rng(2);
  for (int i = 0; i < 100; ++i) {
    const double y = m.apply(1e300, rng);
    EXPECT_LE(std::abs(y - bound), 60 * m.noise_scale());
    const double z = m.apply(-1e300, rng);
    EXPECT_LE(std::abs(z + bound), 60 * m.noise_scale());
  }
}

TEST(LaplaceMechanism, NoiseIsCentredWithTheRightVariance) {
  const LaplaceMechanism m(2, 0.5);
  SeededRng rng(3);
  const int n = 100000;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const double e = m.apply(10, rng) - 10;
    sum += e;
    sum2 += e * e;
  }
  const double b = m.noise_scale(), var = 2 * b * b, m4 = 24 * b * b * b * b;
  EXPECT_LE(std::abs(sum / n), kZ * std::sqrt(var / n));
  EXPECT_LE(std::abs(sum2 / n - var), kZ * std::sqrt((m4 - var * var) / n));
}

TEST(LaplaceMechanism, VectorsAndSeeds) {
  const LaplaceMechanism m(1, 1, 3);
  Eigen::VectorXd x(3);
  x << 1, -2, 3.5;
  SeededRng a(4), b(4);
  const Eigen::VectorXd ya = m.apply(x, a), yb = m.apply(x, b);
  EXPECT_EQ(ya, yb);  // seeded releases are reproducible
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(on_lattice(ya[i], m.granularity()));
  expect_invalid([&] { m.apply(Eigen::VectorXd::Zero(2), a); },
                 "value has length 2 but the mechanism's dimension is 3");
  Eigen::VectorXd bad = x;
  bad[1] = std::nan("");
  expect_invalid([&] { m.apply(bad, a); }, "value must be finite");
  expect_invalid([&] { m.apply(INFINITY, a); }, "value must be finite");
}

TEST(LaplaceMechanism, FastFloatIsOptIn) {
  const LaplaceMechanism m(1, 2, 1, NoiseMode::fast_float);
  EXPECT_EQ(m.mode(), NoiseMode::fast_float);
  EXPECT_EQ(m.granularity(), 0);
  EXPECT_EQ(m.noise_scale(), 0.5);
  SeededRng rng(5);
  int off_lattice = 0;
  for (int i = 0; i < 100; ++i) off_lattice += !on_lattice(m.apply(0.1, rng), 0x1p-20);
  EXPECT_GT(off_lattice, 90);
}

TEST(LaplaceMechanism, LedgerEntry) {
  const LaplaceMechanism m(2, 0.5, 4);
  const LedgerEntry e = m.ledger_entry("sums");
  EXPECT_EQ(e.mechanism, "laplace");
  EXPECT_EQ(e.purpose, "sums");
  EXPECT_EQ(e.sensitivity, 2);
  EXPECT_EQ(e.noise_scale, m.noise_scale());
  EXPECT_EQ(e.loss.kind, LossKind::pure);
  EXPECT_EQ(e.loss.epsilon, 0.5);
  EXPECT_EQ(e.count, 1);
}

TEST(LaplaceMechanism, RejectsBadParameters) {
  expect_invalid([] { LaplaceMechanism(0, 1); }, "l1_sensitivity");
  expect_invalid([] { LaplaceMechanism(-1, 1); }, "l1_sensitivity");
  expect_invalid([] { LaplaceMechanism(std::nan(""), 1); }, "l1_sensitivity");
  expect_invalid([] { LaplaceMechanism(INFINITY, 1); }, "l1_sensitivity");
  expect_invalid([] { LaplaceMechanism(1, 0); }, "epsilon");
  expect_invalid([] { LaplaceMechanism(1, -2); }, "epsilon");
  expect_invalid([] { LaplaceMechanism(1, INFINITY); }, "epsilon");
  expect_invalid([] { LaplaceMechanism(1, 1, 0); }, "dimension must be >= 1");
  expect_invalid([] { LaplaceMechanism(1e-310, 1); }, "l1_sensitivity / (dimension * 2^20)");
  expect_invalid([] { LaplaceMechanism(1, 1e-300, 1); }, "epsilon");
}

// ---- Gaussian ---------------------------------------------------------------------------------

TEST(GaussianMechanism, FromRhoIsCalibratedConservatively) {
  for (const std::size_t d : {1, 7, 1000}) {
    for (const double rho : {0.5, 0.01, 1e-4}) {
      const auto m = GaussianMechanism::from_rho(3, rho, d);
      EXPECT_TRUE(is_power_of_two(m.granularity()));
      EXPECT_LE(m.rho(), rho);
      EXPECT_GE(m.sigma(), 3 / std::sqrt(2 * rho));
      EXPECT_LE(m.sigma(), 3 / std::sqrt(2 * rho) * (1 + 0x1p-16)) << d << " " << rho;
      EXPECT_EQ(m.loss().kind, LossKind::zcdp);
      EXPECT_EQ(m.loss().rho, rho);
    }
  }
}

TEST(GaussianMechanism, FromEpsilonDeltaScalarUsesTheDiscreteCalibration) {
  for (const double eps : {0.1, 1.0, 4.0}) {
    const auto m = GaussianMechanism::from_epsilon_delta(1, eps, 1e-6);
    const double g = m.granularity();
    EXPECT_EQ(g, 0x1p-20);
    const double k = std::floor(1 / g) + 1;
    const double s = m.sigma() / g;
    EXPECT_LE(discrete_gaussian_delta_upper(eps, k, s), 1e-6);
    // Within a hair of the continuous analytic Gaussian (the lattice costs ~2^-20).
    const double analytic = analytic_gaussian_sigma(1, eps, 1e-6);
    EXPECT_NEAR(m.sigma() / analytic, 1, 1e-4) << eps;
    EXPECT_EQ(m.loss().kind, LossKind::approximate);
    EXPECT_EQ(m.loss().epsilon, eps);
    EXPECT_EQ(m.loss().delta, 1e-6);
    EXPECT_GE(m.rho(), k * k / (2 * s * s));
  }
}

TEST(GaussianMechanism, FromEpsilonDeltaVectorGoesThroughZcdp) {
  const auto m = GaussianMechanism::from_epsilon_delta(2, 1, 1e-5, 10);
  const double rho = epsilon_delta_to_zcdp(1, 1e-5);
  EXPECT_LE(m.rho(), rho);
  EXPECT_GE(m.sigma(), 2 / std::sqrt(2 * rho));
  EXPECT_LE(zcdp_to_epsilon(m.rho(), 1e-5), 1 + 1e-9);
  EXPECT_EQ(m.loss().kind, LossKind::approximate);
}

TEST(GaussianMechanism, FromSigmaReportsItsRho) {
  const auto m = GaussianMechanism::from_sigma(1, 5, 4);
  EXPECT_GE(m.sigma(), 5);
  EXPECT_LE(m.sigma(), 5 * (1 + 1e-6));  // s^2 rounded up to a multiple of t (2 sqrt(s^2) at most)
  EXPECT_EQ(m.loss().kind, LossKind::zcdp);
  EXPECT_EQ(m.loss().rho, m.rho());
  // rho = K^2 / (2 s^2) with K = Δ/g + sqrt(d): a hair above Δ^2/(2 σ^2).
  EXPECT_GE(m.rho(), 1.0 / 50);
  EXPECT_LE(m.rho(), 1.0 / 50 * (1 + 0x1p-17));
}

TEST(GaussianMechanism, HugeNoiseCoarsensTheLattice) {
  const auto m = GaussianMechanism::from_rho(1, 1e-12);
  EXPECT_GE(m.sigma(), 1 / std::sqrt(2e-12));
  EXPECT_LE(m.sigma() / m.granularity(), 0x1p31);
  EXPECT_GT(m.granularity(), 0x1p-20);
}

TEST(GaussianMechanism, OutputsOnTheLatticeAndCentred) {
  const auto m = GaussianMechanism::from_epsilon_delta(1, 1, 1e-5, 3);
  const double g = m.granularity();
  SeededRng rng(6);
  const int n = 30000;
  double sum = 0, sum2 = 0;
  Eigen::VectorXd x(3);
  x << 0.1, 0.2, -7;
  for (int i = 0; i < n; ++i) {
    const Eigen::VectorXd y = m.apply(x, rng);
    for (int j = 0; j < 3; ++j) ASSERT_TRUE(on_lattice(y[j], g));
    sum += y[2] + 7;
    sum2 += (y[2] + 7) * (y[2] + 7);
  }
  const double var = m.sigma() * m.sigma();
  EXPECT_LE(std::abs(sum / n), kZ * std::sqrt(var / n));
  EXPECT_LE(std::abs(sum2 / n - var), kZ * std::sqrt(2 * var * var / n));
}

TEST(GaussianMechanism, ClampsHugeInputs) {
  const auto m = GaussianMechanism::from_rho(1, 0.5);
  SeededRng rng(7);
  const double bound = 0x1p60 * m.granularity();
  EXPECT_LE(std::abs(m.apply(-1e308, rng) + bound), 40 * m.sigma());
}

TEST(GaussianMechanism, FastFloatIsOptIn) {
  const auto m = GaussianMechanism::from_epsilon_delta(1, 1, 1e-5, 1, NoiseMode::fast_float);
  EXPECT_EQ(m.mode(), NoiseMode::fast_float);
  EXPECT_EQ(m.granularity(), 0);
  EXPECT_EQ(m.sigma(), analytic_gaussian_sigma(1, 1, 1e-5));
  const auto r = GaussianMechanism::from_rho(2, 0.5, 1, NoiseMode::fast_float);
  EXPECT_GE(r.sigma(), 2);  // Δ/sqrt(2 rho), rounded up
  EXPECT_LE(r.sigma(), 2 * (1 + 1e-12));
  EXPECT_EQ(r.rho(), 0.5);
  SeededRng rng(8);
  int off_lattice = 0;
  for (int i = 0; i < 100; ++i) off_lattice += !on_lattice(m.apply(0.1, rng), 0x1p-20);
  EXPECT_GT(off_lattice, 90);
}

TEST(GaussianMechanism, LedgerEntry) {
  const auto m = GaussianMechanism::from_epsilon_delta(2, 1, 1e-6, 5);
  const LedgerEntry e = m.ledger_entry("mean");
  EXPECT_EQ(e.mechanism, "gaussian");
  EXPECT_EQ(e.purpose, "mean");
  EXPECT_EQ(e.sensitivity, 2);
  EXPECT_EQ(e.noise_scale, m.sigma());
  EXPECT_EQ(e.loss.kind, LossKind::approximate);
  EXPECT_EQ(e.count, 1);
}

TEST(GaussianMechanism, RejectsBadParameters) {
  expect_invalid([] { GaussianMechanism::from_rho(0, 1); }, "l2_sensitivity");
  expect_invalid([] { GaussianMechanism::from_rho(1, 0); }, "rho");
  expect_invalid([] { GaussianMechanism::from_rho(1, -1); }, "rho");
  expect_invalid([] { GaussianMechanism::from_rho(1, 1, 0); }, "dimension must be >= 1");
  expect_invalid([] { GaussianMechanism::from_epsilon_delta(1, 0, 1e-5); }, "epsilon");
  expect_invalid([] { GaussianMechanism::from_epsilon_delta(1, 1, 0); }, "delta must be in (0, 1)");
  expect_invalid([] { GaussianMechanism::from_epsilon_delta(1, 1, 1); }, "delta must be in (0, 1)");
  expect_invalid([] { GaussianMechanism::from_epsilon_delta(std::nan(""), 1, 0.1); },
                 "l2_sensitivity");
  expect_invalid([] { GaussianMechanism::from_sigma(1, 0); }, "sigma");
  expect_invalid([] { GaussianMechanism::from_sigma(1, INFINITY); }, "sigma");
  const auto m = GaussianMechanism::from_rho(1, 1, 2);
  SeededRng rng(1);
  expect_invalid([&] { m.apply(Eigen::VectorXd::Zero(3), rng); },
                 "value has length 3 but the mechanism's dimension is 2");
  expect_invalid([&] { m.apply(std::nan(""), rng); }, "value must be finite");
}

// ---- l2-Laplace -------------------------------------------------------------------------------

TEST(L2LaplaceMechanism, RadiusIsGammaAndOutputSnapped) {
  // Secure (lattice) sampler for d <= 32: effective scale within 2^-18 of Δ/ε (the lattice
  // rounding allowance), output on the mechanism's power-of-two lattice.
  for (const std::size_t d : {1, 5, 12}) {
    const L2LaplaceMechanism m(2, 4, d);
    EXPECT_EQ(m.sampler(), "lattice_l2_laplace");
    EXPECT_GE(m.beta(), 0.5);
    EXPECT_LE(m.beta(), 0.5 * (1 + 0x1p-18));
    const double g = m.granularity();
    SeededRng rng(9);
    const int n = 20000;
    double sum = 0, sum2 = 0;
    const Eigen::VectorXd zero = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(d));
    for (int i = 0; i < n; ++i) {
      const Eigen::VectorXd y = m.apply(zero, rng);
      for (Eigen::Index j = 0; j < y.size(); ++j) ASSERT_TRUE(on_lattice(y[j], g));
      const double r = y.norm();
      sum += r;
      sum2 += r * r;
    }
    // ||b|| ~ Gamma(d, beta): mean d beta, variance d beta^2 (the lattice moves it by < 1e-5).
    const double mean = d * 0.5, var = d * 0.25;
    EXPECT_LE(std::abs(sum / n - mean), kZ * std::sqrt(var / n) + 1e-5) << d;
    const double second = var + mean * mean;
    EXPECT_GT(sum2 / n, 0.9 * second);
    EXPECT_LT(sum2 / n, 1.1 * second);
  }
}

TEST(L2LaplaceMechanism, DirectionIsUniform) {
  // Each coordinate of the direction is symmetric with E[u_j^2] = 1/d.
  SeededRng rng(10);
  const int n = 20000, d = 4;
  double sum_sq = 0, sum = 0;
  for (int i = 0; i < n; ++i) {
    const Eigen::VectorXd b = sample_l2_laplace(d, 1, rng);
    const double u = b[0] / b.norm();
    sum += u;
    sum_sq += u * u;
  }
  // Var(u_j) = 1/d, Var(u_j^2) = E[u^4] - 1/d^2 = 3/(d(d+2)) - 1/d^2.
  EXPECT_LE(std::abs(sum / n), kZ * std::sqrt(1.0 / d / n));
  EXPECT_LE(std::abs(sum_sq / n - 1.0 / d),
            kZ * std::sqrt((3.0 / (d * (d + 2)) - 1.0 / (d * d)) / n));
}

TEST(L2LaplaceMechanism, LedgerAndValidation) {
  const L2LaplaceMechanism m(1, 0.5, 3);
  const LedgerEntry e = m.ledger_entry("gradient");
  EXPECT_EQ(e.mechanism, "l2_laplace");
  EXPECT_NEAR(e.noise_scale, 2, 2 * 0x1p-18);
  EXPECT_EQ(e.loss.kind, LossKind::pure);
  EXPECT_EQ(e.loss.epsilon, 0.5);
  SeededRng rng(1);
  expect_invalid([&] { m.apply(Eigen::VectorXd::Zero(2), rng); }, "value has length 2");
  expect_invalid([] { L2LaplaceMechanism(0, 1, 2); }, "l2_sensitivity");
  expect_invalid([] { L2LaplaceMechanism(1, 0, 2); }, "epsilon");
  expect_invalid([] { L2LaplaceMechanism(1, 1, 0); }, "dimension must be >= 1");
  expect_invalid([&] { sample_l2_laplace(2, -1, rng); }, "beta");
}

}  // namespace
}  // namespace dpstats
