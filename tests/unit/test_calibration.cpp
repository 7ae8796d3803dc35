// Noise calibration: the analytic Gaussian check values (privacy/calibration.hpp), the
// conservative direction of every scale, and the rigorous discrete Gaussian bound against a
// brute-force sum.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "dpstats/error.hpp"
#include "dpstats/privacy/calibration.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats {
namespace {

template <class F>
void expect_invalid(F f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected an InvalidArgument naming '" << needle << "'";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

struct SigmaCase {
  double epsilon, delta, sigma;  // sigma: mpmath bisection, 30 digits
};
// Card check values: 0.480014, 50.2098, 3.730632, 4.224679.
constexpr SigmaCase kSigmaCases[] = {{8, 1e-3, 0.480013752480110446},
                                     {0.1, 1e-9, 50.2098182630153308},
                                     {1, 1e-5, 3.73063163481594183},
                                     {1, 1e-6, 4.22467888932683528}};

TEST(Calibration, AnalyticGaussianCheckValues) {
  for (const auto& c : kSigmaCases) {
    const double sigma = analytic_gaussian_sigma(1, c.epsilon, c.delta);
    std::printf("analytic_gaussian_sigma(1, %g, %g) = %.7f (reference %.7f)\n", c.epsilon, c.delta,
                sigma, c.sigma);
    EXPECT_GE(sigma, c.sigma) << c.epsilon << " " << c.delta;  // never below the exact answer
    EXPECT_LE(sigma, c.sigma * (1 + 1e-10)) << c.epsilon << " " << c.delta;
  }
  EXPECT_NEAR(analytic_gaussian_sigma(1, 8, 1e-3), 0.480014, 5e-7);
  EXPECT_NEAR(analytic_gaussian_sigma(1, 0.1, 1e-9), 50.2098, 5e-5);
  EXPECT_NEAR(analytic_gaussian_sigma(1, 1, 1e-5), 3.730632, 5e-7);
  EXPECT_NEAR(analytic_gaussian_sigma(1, 1, 1e-6), 4.224679, 5e-7);
}

TEST(Calibration, AnalyticGaussianIsTheSmallestValidSigma) {
  for (double eps : {0.01, 0.1, 1.0, 5.0, 30.0, 200.0}) {
    for (double delta : {1e-12, 1e-6, 1e-2}) {
      const double sigma = analytic_gaussian_sigma(1, eps, delta);
      EXPECT_LE(analytic_gaussian_delta(1, sigma, eps), delta) << eps << " " << delta;
      EXPECT_GT(analytic_gaussian_delta(1, sigma * (1 - 1e-9), eps), delta) << eps << " " << delta;
    }
  }
}

TEST(Calibration, AnalyticGaussianScalesAndIsMonotone) {
  const double s1 = analytic_gaussian_sigma(1, 1, 1e-5);
  EXPECT_NEAR(analytic_gaussian_sigma(2.5, 1, 1e-5), 2.5 * s1, 1e-12 * s1);
  double previous = INFINITY;
  for (double eps = 0.05; eps < 50; eps *= 1.5) {
    const double s = analytic_gaussian_sigma(1, eps, 1e-6);
    EXPECT_LT(s, previous) << eps;
    previous = s;
  }
  previous = INFINITY;
  for (double delta = 1e-14; delta < 0.5; delta *= 10) {
    const double s = analytic_gaussian_sigma(1, 1, delta);
    EXPECT_LT(s, previous) << delta;
    previous = s;
  }
  // The analytic mechanism beats the classic one where both apply, and equals GDP calibration.
  EXPECT_LT(analytic_gaussian_sigma(1, 0.5, 1e-5), classic_gaussian_sigma(1, 0.5, 1e-5));
  EXPECT_NEAR(1 / epsilon_delta_to_gdp(1, 1e-5), s1, 1e-9 * s1);
}

TEST(Calibration, ClassicGaussian) {
  // sqrt(2 ln(1.25e5)) = 4.84481 (card: 4.8448 at (1, 1e-5)); at epsilon = 0.5 twice that.
  const double s = classic_gaussian_sigma(1, 0.5, 1e-5);
  EXPECT_GE(s, 2 * std::sqrt(2 * std::log(1.25e5)));
  EXPECT_NEAR(s, 9.68962, 1e-5);
  expect_invalid([] { classic_gaussian_sigma(1, 1, 1e-5); }, "epsilon");
  expect_invalid([] { classic_gaussian_sigma(1, 2, 1e-5); }, "< 1");
  expect_invalid([] { classic_gaussian_sigma(1, 0.5, 0); }, "delta");
}

TEST(Calibration, LaplaceAndZcdpScales) {
  EXPECT_EQ(laplace_scale(2, 0.5), 4);
  EXPECT_EQ(laplace_scale(1, 0.1), 10);
  // Rounded up: b * epsilon >= sensitivity exactly.
  for (double eps : {0.3, 0.7, 3.0, 1.0 / 3, 11.0}) {
    const double b = laplace_scale(1, eps);
    EXPECT_GE(static_cast<long double>(b) * eps, 1.0L) << eps;
    EXPECT_LE(b, 1 / eps * (1 + 4e-16)) << eps;
  }
  EXPECT_GE(zcdp_gaussian_sigma(1, 0.5), 1);
  EXPECT_NEAR(zcdp_gaussian_sigma(1, 0.5), 1, 1e-14);
  EXPECT_NEAR(zcdp_gaussian_sigma(3, 0.02), 15, 1e-13);
  expect_invalid([] { laplace_scale(0, 1); }, "l1_sensitivity");
  expect_invalid([] { laplace_scale(1, -1); }, "epsilon");
  expect_invalid([] { zcdp_gaussian_sigma(1, 0); }, "rho");
  expect_invalid([] { analytic_gaussian_sigma(-1, 1, 1e-5); }, "l2_sensitivity");
  expect_invalid([] { analytic_gaussian_sigma(1, 0, 1e-5); }, "epsilon");
  expect_invalid([] { analytic_gaussian_sigma(1, 1, 0); }, "delta");
  expect_invalid([] { analytic_gaussian_delta(1, 0, 1); }, "sigma");
}

// The exact delta(epsilon) of N_Z(0, s^2) with sensitivity K: sum_y [p(y) - e^eps p(y - K)]_+,
// by brute force over |y| <= 60 s + K in long double.
long double brute_force_discrete_delta(double eps, int K, double s) {
  const long R = static_cast<long>(std::ceil(60 * s)) + K + 2;
  auto f = [&](long y) { return std::exp(-static_cast<long double>(y) * y / (2.0L * s * s)); };
  long double z = 0;
  for (long y = -R; y <= R; ++y) z += f(y);
  long double delta = 0;
  const long double e = std::exp(static_cast<long double>(eps));
  for (long y = -R; y <= R + K; ++y) {
    const long double term = f(y) - e * f(y - K);
    if (term > 0) delta += term;
  }
  return delta / z;
}

TEST(Calibration, DiscreteGaussianBoundAgainstBruteForce) {
  for (int K : {1, 2, 3}) {
    for (double s : {0.5, 0.8, 1.0, 1.5, 2.0, 3.0, 5.0, 20.0}) {
      for (double eps : {0.05, 0.1, 0.5, 1.0, 2.0}) {
        const long double exact = brute_force_discrete_delta(eps, K, s);
        const double bound = discrete_gaussian_delta_upper(eps, K, s);
        EXPECT_GE(static_cast<long double>(bound), exact) << K << " " << s << " " << eps;
        // Close: the explicit sums make the bound tight up to the ~1e-12 margins; below s = 0.8
        // the Poisson-summation interval for the normaliser (width 2r^2, r = e^{-2 pi^2 s^2})
        // dominates.
        const double rel = s >= 0.8 ? 1e-8 : 1e-3;
        EXPECT_LE(static_cast<long double>(bound), exact * (1 + rel) + 1e-15)
            << K << " " << s << " " << eps;
      }
    }
  }
  std::printf("discrete Gaussian K=1 s=2 eps=0.5: bound %.15g, brute force %.15Lg\n",
              discrete_gaussian_delta_upper(0.5, 1, 2), brute_force_discrete_delta(0.5, 1, 2));
}

TEST(Calibration, DiscreteGaussianSigmaSmallScale) {
  for (double eps : {0.5, 1.0, 3.0}) {
    for (double delta : {1e-3, 1e-6}) {
      const double s = discrete_gaussian_sigma(1, eps, delta);
      EXPECT_LE(discrete_gaussian_delta_upper(eps, 1, s), delta);
      EXPECT_LE(brute_force_discrete_delta(eps, 1, s), delta);
      EXPECT_GT(discrete_gaussian_delta_upper(eps, 1, s * (1 - 1e-9)), delta);
      // The exact delta just below s exceeds the target: the bound costs almost nothing.
      EXPECT_GT(brute_force_discrete_delta(eps, 1, s * (1 - 1e-6)), delta);
    }
  }
}

TEST(Calibration, DiscreteGaussianLargeScaleMatchesAnalytic) {
  const double K = 0x1p20;  // sensitivity 1 on a lattice of granularity 2^-20
  for (const auto& c : kSigmaCases) {
    const double s = discrete_gaussian_sigma(K, c.epsilon, c.delta);
    const double continuous = K * analytic_gaussian_sigma(1, c.epsilon, c.delta);
    std::printf("discrete_gaussian_sigma(2^20, %g, %g) / 2^20 = %.9f (analytic %.9f)\n", c.epsilon,
                c.delta, s / K, continuous / K);
    EXPECT_LE(std::fabs(s / continuous - 1), 1e-5) << c.epsilon << " " << c.delta;
    EXPECT_LE(discrete_gaussian_delta_upper(c.epsilon, K, s), c.delta);
  }
}

TEST(Calibration, DiscreteGaussianInvalidArguments) {
  expect_invalid([] { discrete_gaussian_delta_upper(1, 1.5, 2); }, "K");
  expect_invalid([] { discrete_gaussian_delta_upper(1, 0, 2); }, "K");
  expect_invalid([] { discrete_gaussian_delta_upper(1, 1, -2); }, "s");
  expect_invalid([] { discrete_gaussian_delta_upper(0, 1, 2); }, "epsilon");
  expect_invalid([] { discrete_gaussian_sigma(1, 1, 0); }, "delta");
  expect_invalid([] { discrete_gaussian_sigma(NAN, 1, 1e-5); }, "K");
}

}  // namespace
}  // namespace dpstats
