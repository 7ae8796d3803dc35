// User-level fits, statistical (docs/results/user-level.md; issue 7 targets): over 12
// noise seeds, one adversarial user (labels flipped, features ×100 clipped to A) moves the default
// DP-GD's excess by less than the privacy noise moves it, and the default beats one-pass DP-SGD and
// item-level DP-SGD + group privacy. Thresholds leave a wide margin to the measured values
// (docs/results/user-level.md): noise sd 3.9e-4 vs adversary shift ≤ 1.4e-5 at 1000 × 20.
#include <gtest/gtest.h>

#include <cmath>

#include "dpstats/synthetic/synthetic_users.hpp"
#include "dpstats/user_level/user_level.hpp"

using namespace dpstats;
using namespace dpstats::optimize;

namespace {
struct StudyData {
  UserDataset D, Dadv, test;
  Vector w;
};

StudyData make_setup() {
  UserTask t;
  t.n = 1000;
  t.m = 20;
  t.d = 10;
  SeededRng wr(42);
  const Vector w = make_w_star(t, wr);
  SeededRng a(43), b(43), c(44);
  auto D = make_user_task(t, w, a);
  t.adversaries = 1;
  auto Dadv = make_user_task(t, w, b);
  UserTask tt = t;
  tt.adversaries = 0;
  tt.n = 4000;
  tt.m = 5;
  auto test = make_user_task(tt, w, c);
  return {std::move(D), std::move(Dadv), std::move(test), w};
}

double excess(const StudyData& s, const Vector& x) {
  const LogisticLoss loss;
  return empirical_risk(s.test, loss, x) - empirical_risk(s.test, loss, s.w);
}
}  // namespace

TEST(UserLevelStat, OneAdversaryMovesDefaultDpGdLessThanItsNoise) {
  const StudyData s = make_setup();
  UserLevelOptions o;
  o.privacy = {1, 1e-6};
  o.domain_radius = 5;
  std::vector<double> ex, shift;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    SeededRng r1(seed), r2(seed);
    const double e = excess(s, fit_user_level(s.D, o, r1).estimate);
    const double e2 = excess(s, fit_user_level(s.Dadv, o, r2).estimate);
    ex.push_back(e);
    shift.push_back(std::abs(e2 - e));
  }
  double mean = 0, var = 0, max_shift = 0;
  for (double e : ex) mean += e / ex.size();
  for (double e : ex) var += (e - mean) * (e - mean) / (ex.size() - 1);
  for (double d : shift) max_shift = std::max(max_shift, d);
  const double sd = std::sqrt(var);
  EXPECT_GT(sd, 0);
  EXPECT_LT(max_shift, sd) << "adversary shift " << max_shift << " vs noise sd " << sd;
  // The fit is useful: far below F(0) − F* (0.12 on this task).
  EXPECT_LT(mean, 5e-3);
}

TEST(UserLevelStat, DefaultDpGdBeatsOnePassAndGroupPrivacyBaselines) {
  const StudyData s = make_setup();
  auto mean_excess = [&](UserLevelMethod m) {
    UserLevelOptions o;
    o.privacy = {1, 1e-6};
    o.method = m;
    o.domain_radius = 5;
    double total = 0;
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      SeededRng r(seed);
      total += excess(s, fit_user_level(s.D, o, r).estimate) / 6;
    }
    return total;
  };
  const double gd = mean_excess(UserLevelMethod::dp_gd_user);
  const double sgd = mean_excess(UserLevelMethod::dp_sgd_user);
  const double group = mean_excess(UserLevelMethod::dp_sgd_group);
  EXPECT_LT(gd, sgd);
  EXPECT_LT(2 * gd, group);
}

TEST(UserLevelStat, OneAdversaryMovesAlg3PracticalLessThanItsNoiseAndDefaultStaysAhead) {
  // Alg 3 practical at its defaults (one full-batch phase, T = 20, clip L/(4√m)): the adversary
  // moves its excess by less than the privacy noise does, and the recommended default (DP-GD)
  // stays ahead of it on the same data and seeds (measured 2.2× at 1000 × 20 in the study).
  const StudyData s = make_setup();
  UserLevelOptions o;
  o.privacy = {1, 1e-6};
  o.method = UserLevelMethod::accelerated;
  o.domain_radius = 5;
  UserLevelOptions def;
  def.privacy = {1, 1e-6};
  def.domain_radius = 5;
  std::vector<double> ex, shift;
  double gd = 0;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    SeededRng r1(seed), r2(seed), r3(seed);
    const double e = excess(s, fit_user_level(s.D, o, r1).estimate);
    const double e2 = excess(s, fit_user_level(s.Dadv, o, r2).estimate);
    gd += excess(s, fit_user_level(s.D, def, r3).estimate) / 12;
    ex.push_back(e);
    shift.push_back(std::abs(e2 - e));
  }
  double mean = 0, var = 0, max_shift = 0;
  for (double e : ex) mean += e / ex.size();
  for (double e : ex) var += (e - mean) * (e - mean) / (ex.size() - 1);
  for (double d : shift) max_shift = std::max(max_shift, d);
  const double sd = std::sqrt(var);
  EXPECT_GT(sd, 0);
  EXPECT_LT(max_shift, sd) << "adversary shift " << max_shift << " vs noise sd " << sd;
  EXPECT_LT(mean, 2e-2);  // useful: F(0) − F* ≈ 0.12
  EXPECT_LT(gd, mean) << "default " << gd << " vs Alg 3 practical " << mean;
}
