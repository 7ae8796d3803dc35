// Conversions between zCDP, GDP and (epsilon, delta): check values, brute-force references,
// round trips, monotonicity and the conservative direction of every rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "dpstats/error.hpp"
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

// The CKS20 Prop. 12 objective at order a, evaluated directly (long double).
long double cks_epsilon(long double rho, long double delta, long double a) {
  return rho * a + (std::log(1 / delta) + (a - 1) * std::log1p(-1 / a) - std::log(a)) / (a - 1);
}

// The minimum of the objective over a dense log-scale grid of a - 1 in [1e-4, 1e8], which holds
// the optimum for every case below (an upper bound on the infimum; 50000 points over 12 decades
// put it within ~1e-7 relative of it).
double grid_epsilon(double rho, double delta) {
  long double best = INFINITY;
  for (int i = 0; i <= 50000; ++i) {
    const long double a = 1 + std::pow(10.0L, -4 + 12.0L * i / 50000);
    best = std::min(best, cks_epsilon(rho, delta, a));
  }
  return static_cast<double>(best);
}

TEST(Conversions, ZcdpToEpsilonCheckValue) {
  // rho = 0.5, delta = 1e-5 -> 4.72838698494331390 (mpmath, 30 digits; issue 2: ≈ 4.7284).
  const double eps = zcdp_to_epsilon(0.5, 1e-5);
  std::printf("zcdp_to_epsilon(0.5, 1e-5) = %.10f (reference 4.7283869849)\n", eps);
  EXPECT_GE(eps, 4.72838698494331390);
  EXPECT_LE(eps, 4.72838698494331390 * (1 + 1e-10));
  EXPECT_NEAR(eps, 4.7284, 5e-5);
}

TEST(Conversions, ZcdpToEpsilonMatchesBruteForceMinimum) {
  for (double rho : {1e-8, 1e-4, 0.01, 0.5, 3.0, 100.0}) {
    for (double delta : {1e-12, 1e-6, 1e-3, 0.2}) {
      const double eps = zcdp_to_epsilon(rho, delta);
      const double grid = grid_epsilon(rho, delta);
      // Never larger than a grid point by more than the margin, and the grid cannot beat it.
      EXPECT_LE(eps, std::max(grid, 0.0) * (1 + 1e-9) + 1e-15) << rho << " " << delta;
      EXPECT_GE(eps, std::max(grid, 0.0) * (1 - 1e-6)) << rho << " " << delta;
      // The tight conversion improves on the classical rho + 2 sqrt(rho log 1/delta).
      EXPECT_LT(eps, rho + 2 * std::sqrt(rho * std::log(1 / delta))) << rho << " " << delta;
    }
  }
}

TEST(Conversions, ZcdpToEpsilonMonotone) {
  double previous = 0;
  for (double rho = 1e-6; rho < 1e3; rho *= 1.7) {
    const double eps = zcdp_to_epsilon(rho, 1e-6);
    EXPECT_GT(eps, previous) << rho;
    previous = eps;
  }
  previous = INFINITY;
  for (double delta = 1e-15; delta < 0.5; delta *= 3) {
    const double eps = zcdp_to_epsilon(0.1, delta);
    EXPECT_LT(eps, previous) << delta;
    previous = eps;
  }
  EXPECT_EQ(zcdp_to_epsilon(0, 1e-6), 0);
}

TEST(Conversions, PureToZcdp) {
  EXPECT_EQ(pure_to_zcdp(0), 0);
  EXPECT_GE(pure_to_zcdp(1), 0.5);
  EXPECT_NEAR(pure_to_zcdp(1), 0.5, 1e-15);
  EXPECT_NEAR(pure_to_zcdp(0.3), 0.045, 1e-16);
}

TEST(Conversions, EpsilonDeltaToZcdpRoundTrip) {
  for (double eps : {0.01, 0.1, 1.0, 4.0, 20.0}) {
    for (double delta : {1e-10, 1e-6, 1e-3}) {
      const double rho = epsilon_delta_to_zcdp(eps, delta);
      const double back = zcdp_to_epsilon(rho, delta);
      EXPECT_LE(back, eps) << eps << " " << delta;
      EXPECT_GE(back, eps * (1 - 1e-9)) << eps << " " << delta;
      EXPECT_GT(zcdp_to_epsilon(rho * (1 + 1e-8), delta), eps) << eps << " " << delta;
    }
  }
}

TEST(Conversions, EpsilonDeltaToZcdpCardValue) {
  // docs/proofs/median.md: at (1, 9e-7) the simple conversion gives rho = 0.017341 and the
  // CKS20 one 0.0241 (mpmath: 0.0241296223448730960).
  const double rho = epsilon_delta_to_zcdp(1, 9e-7);
  std::printf("epsilon_delta_to_zcdp(1, 9e-7) = %.10f (reference 0.0241296223)\n", rho);
  EXPECT_LE(rho, 0.0241296223448730960);
  EXPECT_GE(rho, 0.0241296223448730960 * (1 - 1e-9));
}

TEST(Conversions, ZcdpToDeltaInvertsZcdpToEpsilon) {
  for (double rho : {1e-4, 0.05, 0.5, 5.0}) {
    for (double delta : {1e-9, 1e-5, 1e-2}) {
      const double eps = zcdp_to_epsilon(rho, delta);
      const double d = zcdp_to_delta(rho, eps);
      EXPECT_LE(d, delta * (1 + 1e-9)) << rho << " " << delta;
      // When epsilon is clamped at 0 the delta at 0 may be smaller than the target.
      if (eps > 0) {
        EXPECT_GE(d, delta * (1 - 1e-6)) << rho << " " << delta;
      }
    }
  }
  EXPECT_EQ(zcdp_to_delta(0, 1), 0);
  // rho = 1e-6 at epsilon = 1: about e^-250000, reported as a positive (never zero) bound.
  EXPECT_GT(zcdp_to_delta(1e-6, 1), 0);
  EXPECT_LE(zcdp_to_delta(1e-6, 1), 1e-300);
  // At epsilon = 0 the bound is a total-variation bound: for rho = 10 (the Gaussian with
  // sqrt(2 rho) = 4.47 standard deviations of shift has TV 2 Phi(2.236) - 1 = 0.9747) it must lie
  // between that exact TV and 1.
  EXPECT_GE(zcdp_to_delta(10, 0), 0.9746);
  EXPECT_LE(zcdp_to_delta(10, 0), 1);
}

TEST(Conversions, NormalCdfTails) {
  EXPECT_EQ(normal_cdf(0), 0.5);
  EXPECT_NEAR(normal_cdf(-10) / 7.6198530241605260659733e-24, 1, 1e-13);
  EXPECT_NEAR((1 - normal_cdf(5)) / 2.86651571879193911673752e-7, 1, 1e-9);
  EXPECT_NEAR(log_normal_cdf(-40), -804.608442013753788166607, 1e-12 * 804.6);
  EXPECT_NEAR(log_normal_cdf(-36.5), -670.642000000313701370847, 1e-12 * 670.6);
  EXPECT_NEAR(log_normal_cdf(-100), -5005.52420869420508862630, 1e-12 * 5005.5);
  // Continuity across the switch from erfc to the asymptotic series at -36.
  EXPECT_NEAR(log_normal_cdf(-36 - 1e-9), log_normal_cdf(-36 + 1e-9), 1e-6);
  EXPECT_NEAR(log_normal_cdf(3), std::log(normal_cdf(3)), 1e-15);
  EXPECT_EQ(log_normal_cdf(-INFINITY), -INFINITY);
}

TEST(Conversions, GdpToDeltaReferenceValues) {
  // mpmath: Phi(-1/2) - e Phi(-3/2) and Phi(3/4) - e^0.5 Phi(-5/4).
  const double d1 = gdp_to_delta(1, 1);
  const double d2 = gdp_to_delta(2, 0.5);
  std::printf("gdp_to_delta(1, 1) = %.15f (reference 0.126936737506644)\n", d1);
  EXPECT_GE(d1, 0.126936737506643945);
  EXPECT_LE(d1, 0.126936737506643945 * (1 + 1e-10));
  EXPECT_GE(d2, 0.599185618533933263);
  EXPECT_LE(d2, 0.599185618533933263 * (1 + 1e-10));
  EXPECT_EQ(gdp_to_delta(0, 1), 0);
  // Large epsilon: e^eps overflows a double, the log-space form does not.
  // Far below the double range: reported as the smallest positive double, never 0.
  EXPECT_GT(gdp_to_delta(1, 800), 0);
  EXPECT_LE(gdp_to_delta(1, 800), 1e-300);
  const double big = gdp_to_delta(40, 700);
  EXPECT_TRUE(std::isfinite(big));
  EXPECT_GT(big, 0);
  EXPECT_LE(big, 1);
}

TEST(Conversions, GdpRoundTrips) {
  for (double mu : {0.05, 0.5, 1.0, 3.0, 10.0}) {
    for (double delta : {1e-10, 1e-5, 1e-2}) {
      const double eps = gdp_to_epsilon(mu, delta);
      EXPECT_LE(gdp_to_delta(mu, eps), delta) << mu << " " << delta;
      if (eps > 0) {
        EXPECT_GT(gdp_to_delta(mu, eps * (1 - 1e-9)), delta) << mu << " " << delta;
      }
    }
  }
  for (double eps : {0.1, 1.0, 8.0}) {
    for (double delta : {1e-9, 1e-5, 1e-3}) {
      const double mu = epsilon_delta_to_gdp(eps, delta);
      EXPECT_LE(gdp_to_delta(mu, eps), delta);
      EXPECT_GT(gdp_to_delta(mu * (1 + 1e-9), eps), delta);
    }
  }
  // A small mu needs no epsilon at all: TV(N(0,1), N(mu,1)) = 2 Phi(mu/2) - 1 <= delta.
  EXPECT_EQ(gdp_to_epsilon(1e-6, 0.01), 0);
}

TEST(Conversions, GdpMonotone) {
  double previous = 0;
  for (double mu = 0.2; mu < 20; mu *= 1.5) {
    const double d = gdp_to_delta(mu, 1);
    EXPECT_GT(d, previous) << mu;
    previous = d;
  }
  previous = INFINITY;
  for (double eps = 0; eps < 10; eps += 0.25) {
    const double d = gdp_to_delta(2, eps);
    EXPECT_LT(d, previous) << eps;
    previous = d;
  }
}

TEST(Conversions, InvalidArgumentsNameTheParameter) {
  expect_invalid([] { zcdp_to_epsilon(-1, 1e-5); }, "rho");
  expect_invalid([] { zcdp_to_epsilon(NAN, 1e-5); }, "rho");
  expect_invalid([] { zcdp_to_epsilon(0.5, 0); }, "delta");
  expect_invalid([] { zcdp_to_epsilon(0.5, 1); }, "delta");
  expect_invalid([] { zcdp_to_delta(0.5, -1); }, "epsilon");
  expect_invalid([] { epsilon_delta_to_zcdp(0, 1e-5); }, "epsilon");
  expect_invalid([] { epsilon_delta_to_zcdp(1, 1.5); }, "delta");
  // The per-thread memo never answers for invalid input, not even on a first call.
  expect_invalid([] { epsilon_delta_to_zcdp(-1, -1); }, "epsilon");
  expect_invalid([] { epsilon_delta_to_zcdp(0, 0); }, "epsilon");
  expect_invalid([] { pure_to_zcdp(INFINITY); }, "epsilon");
  expect_invalid([] { gdp_to_delta(-0.1, 1); }, "mu");
  expect_invalid([] { gdp_to_delta(1, NAN); }, "epsilon");
  expect_invalid([] { gdp_to_epsilon(1, 0); }, "delta");
  expect_invalid([] { epsilon_delta_to_gdp(-1, 1e-5); }, "epsilon");
  expect_invalid([] { normal_cdf(NAN); }, "x");
  // The message shows the offending value and the valid range.
  try {
    zcdp_to_epsilon(0.5, 2);
    ADD_FAILURE();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(0, 1)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dpstats
