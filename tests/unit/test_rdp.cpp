// Subsampled-Gaussian RDP accountant (privacy/rdp.hpp) against published values.
#include <gtest/gtest.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/privacy/rdp.hpp"

using namespace dpstats;

namespace {
double eps_at(double q, double z, std::size_t steps, double delta, std::vector<double> orders,
              bool classic = false) {
  RdpAccountant acc(std::move(orders));
  acc.compose_subsampled_gaussian(q, z, steps);
  return (classic ? acc.epsilon_classic(delta) : acc.epsilon(delta)).epsilon;
}
}  // namespace

// Opacus' compute_dp_sgd_privacy documentation: q = 1%, z = 1.0, 300 steps, orders
// {2, 5, 10, 20, 100}, delta = 1e-5 -> epsilon = 2.39 at order 5 (improved conversion).
TEST(Rdp, OpacusDocumentedExample) {
  RdpAccountant acc({2, 5, 10, 20, 100});
  acc.compose_subsampled_gaussian(0.01, 1.0, 300);
  const auto e = acc.epsilon(1e-5);
  EXPECT_NEAR(e.epsilon, 2.39, 0.005);
  EXPECT_EQ(e.order, 5);
}

// Opacus' older documentation (classic conversion): N = 60000, batch 256, z = 1.12, 60 epochs
// (60 * ceil(60000/256) = 14100 steps), orders {10, 20, 100}, delta = 1e-5 -> epsilon = 2.95.
TEST(Rdp, OpacusMnistExampleClassicConversion) {
  EXPECT_NEAR(eps_at(256.0 / 60000, 1.12, 14100, 1e-5, {10, 20, 100}, true), 2.95, 0.005);
}

// Card docs/proofs/moments.md cross-check of the paper's CIFAR-10 settings (q = B/50000,
// 10 epochs, integer orders, delta = 1e-6).
TEST(Rdp, CardTable4Settings) {
  EXPECT_NEAR(eps_at(256.0 / 50000, 1.0, 1954, 1e-6, integer_rdp_orders()), 1.78, 0.01);
  EXPECT_NEAR(eps_at(256.0 / 50000, 1.0, 1954, 1e-6, integer_rdp_orders(), true), 2.17, 0.01);
  EXPECT_NEAR(eps_at(1.0 / 50000, 2.0, 500000, 1e-6, integer_rdp_orders()), 0.10, 0.005);
  EXPECT_NEAR(eps_at(1.0 / 50000, 2.0, 500000, 1e-6, integer_rdp_orders(), true), 0.165, 0.005);
}

TEST(Rdp, FullBatchIsTheGaussianAndFractionalOrdersInterpolate) {
  EXPECT_NEAR(subsampled_gaussian_rdp(1.0, 2.0, 3.5), 3.5 / 8, 1e-9);
  for (double q : {0.001, 0.01, 0.2}) {
    // The fractional series at an integer order agrees with the binomial expansion.
    const double r3 = subsampled_gaussian_rdp(q, 1.1, 3), r4 = subsampled_gaussian_rdp(q, 1.1, 4);
    const double r35 = subsampled_gaussian_rdp(q, 1.1, 3.5);
    EXPECT_GT(r35, r3);
    EXPECT_LT(r35, r4);
    EXPECT_NEAR(subsampled_gaussian_rdp(q, 1.1, 3.0000001), r3, 1e-5 * r3);
    // Subsampling amplifies: below the unsampled a/(2 z^2) and roughly q^2 a / z^2 for small q.
    EXPECT_LT(r3, 3 / (2 * 1.1 * 1.1));
  }
  EXPECT_NEAR(subsampled_gaussian_rdp(0.001, 4.0, 2), std::log1p(1e-6 * (std::exp(1.0 / 16) - 1)),
              1e-12);
}

TEST(Rdp, CalibrationInvertsTheAccountant) {
  const double q = 256.0 / 60000;
  const std::size_t steps = 2340;
  const double z = calibrate_noise_multiplier(q, steps, 1.7, 1e-6);
  EXPECT_LE(eps_at(q, z, steps, 1e-6, integer_rdp_orders()), 1.7);
  EXPECT_GT(eps_at(q, z * 0.999, steps, 1e-6, integer_rdp_orders()), 1.7);
  // Published-setting round trip: the card's sigma = 1 at epsilon 1.784.
  EXPECT_NEAR(calibrate_noise_multiplier(256.0 / 50000, 1954, 1.7841, 1e-6), 1.0, 2e-3);
}

TEST(Rdp, RejectsBadInput) {
  EXPECT_THROW(subsampled_gaussian_rdp(1.5, 1, 2), InvalidArgument);
  EXPECT_THROW(subsampled_gaussian_rdp(0.1, 0, 2), InvalidArgument);
  EXPECT_THROW(subsampled_gaussian_rdp(0.1, 1, 1), InvalidArgument);
  EXPECT_THROW(calibrate_noise_multiplier(0.1, 10, -1, 1e-6), InvalidArgument);
  EXPECT_THROW(calibrate_noise_multiplier(0.1, 10, 1, 0), InvalidArgument);
  EXPECT_THROW(RdpAccountant({1.0}), InvalidArgument);
}
