// dp-gd-filter (docs/proofs/user-level.md §3.1): the ledger is the planned charges (2 Gaussian
// mechanisms × T steps composing to the method's ρ), the soft weight, and one adversarial user
// (flipped labels, features ×100) moving the seeded release by less than the noise.
#include <gtest/gtest.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/synthetic/synthetic_users.hpp"
#include "dpstats/user_level/filter.hpp"
#include "dpstats/user_level/user_level.hpp"
#include "guarantee.hpp"

using namespace dpstats;
using namespace dpstats::optimize;

namespace {
UserDataset filter_data(std::int64_t n, std::int64_t m, std::int64_t d, std::uint64_t seed,
                        std::int64_t adversaries = 0) {
  UserTask t;
  t.n = n;
  t.m = m;
  t.d = d;
  t.adversaries = adversaries;
  SeededRng rng(seed);
  const Vector w = make_w_star(t, rng);
  return make_user_task(t, w, rng);
}

UserLevelOptions filter_options() {
  UserLevelOptions o;
  o.method = UserLevelMethod::dp_gd_filter;
  o.privacy = {1, 1e-6};
  o.domain_radius = 5;
  o.steps = 10;
  return o;
}
}  // namespace

TEST(FilterWeight, OneInsideRZeroBeyondTwoRLinearBetween) {
  EXPECT_EQ(filter_weight(0, 0.5), 1);
  EXPECT_EQ(filter_weight(0.5, 0.5), 1);
  EXPECT_DOUBLE_EQ(filter_weight(0.75, 0.5), 0.5);
  EXPECT_EQ(filter_weight(1.0, 0.5), 0);
  EXPECT_EQ(filter_weight(7.0, 0.5), 0);
}

TEST(UserLevelFilter, LedgerIsThePlannedChargesAndComposesToRho) {
  const auto D = filter_data(400, 10, 3, 21);
  ASSERT_TRUE(D.has_feature_bound());  // no estimate: the whole ρ goes to the method
  const auto o = filter_options();
  SeededRng rng(5);
  const auto r = fit_user_level(D, o, rng);
  dpstats::testing::expect_guarantee_from_ledger(r);
  ASSERT_EQ(r.ledger.size(), 2u);
  FilterOptions f;
  f.steps = 10;
  f.clip = r.diagnostics["clip"].get<double>();
  f.radius = r.diagnostics["filter_radius"].get<double>();
  EXPECT_DOUBLE_EQ(f.radius, kFilterRadiusOverClip * f.clip);
  const double rho = epsilon_delta_to_zcdp(1, 1e-6);
  f.rho = rho;
  const Ledger planned = plan_filter(400, 3, f);
  double spent = 0;
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.ledger[i].mechanism, planned[i].mechanism);
    EXPECT_EQ(r.ledger[i].count, 10);
    EXPECT_DOUBLE_EQ(r.ledger[i].sensitivity, planned[i].sensitivity);
    EXPECT_DOUBLE_EQ(r.ledger[i].noise_scale, planned[i].noise_scale);
    EXPECT_DOUBLE_EQ(r.ledger[i].loss.rho, planned[i].loss.rho);
    spent += r.ledger[i].count * r.ledger[i].loss.rho;
  }
  EXPECT_NEAR(spent, rho, 1e-12 * rho);
  // The residual's terms have norm <= 2r = c: its sensitivity is the centre's.
  EXPECT_NEAR(r.ledger[1].sensitivity, r.ledger[0].sensitivity, 1e-9 * r.ledger[0].sensitivity);
  EXPECT_EQ(r.diagnostics["method"], "dp-gd-filter");
}

TEST(UserLevelFilter, OneAdversarialUserMovesTheSeededReleaseByLessThanTheNoise) {
  // D' = D with user 0 replaced by an adversary (labels flipped, features ×100, clipped to A).
  const auto D = filter_data(500, 10, 4, 13, 0);
  const auto Dp = filter_data(500, 10, 4, 13, 1);
  const auto o = filter_options();
  // The noise scale: the root-mean-square spread of the release over seeds on D.
  constexpr int kSeeds = 12;
  std::vector<Vector> xs;
  Vector mean = Vector::Zero(4);
  for (int s = 0; s < kSeeds; ++s) {
    SeededRng rng(100 + s);
    xs.push_back(fit_user_level(D, o, rng).estimate);
    mean += xs.back() / kSeeds;
  }
  double spread = 0;
  for (const auto& x : xs) spread += (x - mean).squaredNorm() / (kSeeds - 1);
  spread = std::sqrt(spread);
  ASSERT_GT(spread, 0);
  for (int s = 0; s < 3; ++s) {
    SeededRng r1(100 + s), r2(100 + s);
    const auto a = fit_user_level(D, o, r1);
    const auto b = fit_user_level(Dp, o, r2);
    const double moved = (a.estimate - b.estimate).norm();
    EXPECT_GT(moved, 0);
    EXPECT_LT(moved, spread) << "seed " << 100 + s;
  }
}

TEST(UserLevelFilter, NoiselessRunConvergesAndRejectsBadRadius) {
  const auto D = filter_data(400, 20, 3, 14);
  auto o = filter_options();
  o.steps = 200;
  UserLevelTrace trace;
  trace.noiseless = true;
  SeededRng rng(3);
  const auto r = fit_user_level(D, o, rng, nullptr, &trace);
  auto np = o;
  np.method = UserLevelMethod::dp_gd_user;
  SeededRng rng2(3);
  const auto b = fit_user_level(D, np, rng2, nullptr, &trace);
  // With every weight near 1 the filtered step is the DP-GD step (the centre cancels).
  EXPECT_LT((r.estimate - b.estimate).norm(), 0.25 * b.estimate.norm());
  FilterOptions f;
  f.rho = 1;
  f.radius = 0;
  SeededRng rng3(1);
  GradientCounter counter;
  const Ball ball(Vector::Zero(3), 5);
  EXPECT_THROW(filtered_dp_gd(D, *make_loss(GlmKind::logistic), ball, Vector::Zero(3), f, rng3,
                              counter),
               InvalidArgument);
}
