// Values at the edge (issue #21 item 3, docs/threat-model.md rows `silent-clamp` and
// `internal-names`): data far beyond what the range bins resolve abstain with a reason that names
// the scale, never a clamped "ok"; an estimate that overflows a double abstains; an epsilon
// outside what the samplers and accountants represent is refused naming epsilon and its range.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>

#include "../guarantee.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/dp_mean.hpp"
#include "dpstats/mean/exp_time_mean.hpp"
#include "dpstats/mean/prime.hpp"
#include "dpstats/mean/prime_ht.hpp"
#include "dpstats/mean/private_filter.hpp"
#include "dpstats/mechanisms/range.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/seam.hpp"

namespace dpstats {
namespace {

RowMatrix constant(Eigen::Index n, Eigen::Index d, double v) { return RowMatrix::Constant(n, d, v); }

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

void expect_scale_abstention(const Release<Vector>& r) {
  EXPECT_EQ(r.status, Status::abstained);
  EXPECT_EQ(r.estimate.size(), 0);
  ASSERT_TRUE(r.diagnostics.contains("abstained"));
  EXPECT_NE(r.diagnostics["abstained"].get<std::string>().find("scale"), std::string::npos)
      << r.diagnostics["abstained"];
  testing::expect_guarantee_from_ledger(r);
}

TEST(EdgeValues, RangeBeyondReasonOnlyForUnresolvableCentres) {
  EXPECT_FALSE(range_beyond_reason(Eigen::VectorXd::Constant(3, 1e15), 1.0));
  EXPECT_FALSE(range_beyond_reason(Eigen::VectorXd::Constant(1, -1e20), 1e6));
  const auto why = range_beyond_reason(Eigen::Vector2d(0.0, 0x1p62 * 2), 1.0);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("column 2"), std::string::npos) << *why;
  EXPECT_TRUE(range_beyond_reason(Eigen::Vector2d(-0x1p52, 0.0), 1.0));
}

// Every value 1e308 with a supplied scale of 1: the bins clamp at ±2^62 and used to release
// 9.22e18 with status ok.
TEST(EdgeValues, MeansAbstainInsteadOfAClampedEstimate) {
  const RowMatrix X = constant(4000, 2, 1e308);
  SeededRng rng(1);
  DpMeanOptions dm{.privacy = {1, 1e-6}, .scale = std::vector<double>{1.0}};
  expect_scale_abstention(dp_mean(X, dm, rng));
  PrimeOptions po{.privacy = {1, 1e-6}, .scale = std::vector<double>{1.0}};
  expect_scale_abstention(prime(X, po, rng));
  expect_scale_abstention(prime_ht(X, po, rng));
  PrivateFilterOptions fo{.privacy = {1, 1e-6}, .scale = std::vector<double>{1.0}};
  expect_scale_abstention(private_filter(X, fo, rng));
  ExpTimeMeanOptions eo{.privacy = {1, 1e-6}, .scale = std::vector<double>{1.0}};
  eo.window_resilience = true;  // the exact enumeration refuses n this large
  expect_scale_abstention(exp_time_mean(constant(40000, 1, -1e308), eo, rng));
}

TEST(EdgeValues, AnOverflowingEstimateAbstains) {
  ReleaseBudget account(PrivacyLoss::pure(1), Accountant::basic);
  SeededRng rng(1);
  const Release<Vector> r =
      seal(Vector(Vector::Constant(2, std::numeric_limits<double>::infinity())), account, SealFacts(true), rng);
  EXPECT_EQ(r.status, Status::abstained);
  EXPECT_EQ(r.estimate.size(), 0);
  EXPECT_NE(r.diagnostics["abstained"].get<std::string>().find("largest double"),
            std::string::npos);
  const Release<double> ok = seal(1e308, account, SealFacts(true), rng);
  EXPECT_EQ(ok.status, Status::ok);
}

TEST(EdgeValues, EpsilonOutsideItsRangeNamesEpsilon) {
  for (const double e : {1e-320, 1e-300, 1e-10, 1e308, 1e4}) {
    const std::string m = message_of([&] { validate(PrivacyTarget{e, 1e-6}); });
    EXPECT_NE(m.find("epsilon must be in [1e-09, 1000]"), std::string::npos) << e << ": " << m;
  }
  for (const double e : {1e-9, 1.0, 1e3})
    EXPECT_NO_THROW(validate(PrivacyTarget{e, 1e-6}));
  // The same message from a driver, before any internal quantity is computed.
  const RowMatrix X = constant(100, 2, 0.0);
  SeededRng rng(1);
  const std::string m = message_of([&] { dp_mean(X, {.privacy = {1e308, 1e-6}}, rng); });
  EXPECT_NE(m.find("epsilon must be in"), std::string::npos) << m;
  EXPECT_EQ(m.find("rho"), std::string::npos) << m;
}

}  // namespace
}  // namespace dpstats
