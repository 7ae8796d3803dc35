// Boosting by disjoint parts and median-of-means selection (mean/boosted.hpp; docs/proofs/mean.md
// §8): the number of parts, the selection's 3r guarantee, the partition, the ledger and the
// registry methods prime-boosted / prime-ht-boosted.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "dpstats/error.hpp"
#include "dpstats/mean/boosted.hpp"
#include "dpstats/mean/methods.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/random/float_normal.hpp"
#include "dpstats/seam.hpp"

using namespace dpstats;

TEST(Boosting, PartsFromZeta) {
  EXPECT_EQ(boost_parts(0.1), 7);
  EXPECT_EQ(boost_parts(0.05), 9);
  EXPECT_EQ(boost_parts(0.01), 19);
  EXPECT_EQ(boost_parts(0.5), 1);
  EXPECT_NEAR(boost_failure_bound(9, 0.75), 0.0489273071, 1e-9);
  EXPECT_LE(boost_failure_bound(boost_parts(1e-4), 0.75), 1e-4);
  EXPECT_GT(boost_failure_bound(boost_parts(1e-4) - 2, 0.75), 1e-4);
  EXPECT_THROW(boost_parts(0), InvalidArgument);
  EXPECT_THROW(boost_parts(1), InvalidArgument);
  EXPECT_THROW(boost_parts(0.05, 0.5), InvalidArgument);
}

TEST(Boosting, SelectionIsWithinThreeRadiiOfAGoodMajority) {
  SeededRng rng(41);
  for (int trial = 0; trial < 2000; ++trial) {
    const int m = 1 + 2 * static_cast<int>(rng.uniform_below(10));
    const int good = m / 2 + 1 + static_cast<int>(rng.uniform_below(static_cast<std::uint64_t>(m - m / 2)));
    const Vector mu = Vector::Constant(3, 5.0);
    std::vector<std::optional<Vector>> est;
    for (int j = 0; j < m; ++j) {
      if (j < good) {  // within r = 1 of μ
        Vector u = Vector::Random(3);
        est.emplace_back(mu + u / std::max(1.0, u.norm()));
      } else if (rng.uniform_below(3) == 0) {
        est.emplace_back(std::nullopt);  // an abstaining part
      } else {  // adversarial: a tight far cluster
        est.emplace_back(Vector::Constant(3, 100.0) + 1e-3 * Vector::Random(3));
      }
    }
    double radius = 0;
    const auto j = boost_select(est, &radius);
    ASSERT_TRUE(j.has_value());
    EXPECT_LE((*est[*j] - mu).norm(), 3.0 + 1e-12);
    EXPECT_LE(radius, 2.0 + 1e-12);
  }
  // No strict majority present: no selection.
  std::vector<std::optional<Vector>> few = {Vector::Zero(1), std::nullopt, std::nullopt};
  EXPECT_FALSE(boost_select(few).has_value());
}

TEST(Boosting, DisjointPartsOneEntryAndTheTarget) {
  const std::int64_t n = 1003;
  RowMatrix X(n, 1);
  for (std::int64_t i = 0; i < n; ++i) X(i, 0) = static_cast<double>(i);
  std::multiset<double> seen;
  std::vector<Eigen::Index> sizes;
  const PrivacyTarget target{1, 1e-6};
  auto run = [&](const ConstMatrixRef& part, Rng& g, Budget* b) {
    for (Eigen::Index i = 0; i < part.rows(); ++i) seen.insert(part(i, 0));
    sizes.push_back(part.rows());
    ReleaseBudget account(target.loss(), Accountant::basic, b);
    const auto m = GaussianMechanism::from_epsilon_delta(1, 1, 1e-6);
    account.charge(m.ledger_entry("part"));
    return seal(Vector(Vector::Constant(1, m.apply(0.0, g))), account, SealFacts(true), g);
  };
  SeededRng rng(42);
  Budget caller(PrivacyLoss::approximate(1, 1e-6), Accountant::basic);
  const auto r = boosted_release(X, target, 9, "test", run, NoiseMode::secure, rng, &caller);
  ASSERT_EQ(r.status, Status::ok);
  EXPECT_EQ(sizes.size(), 9u);
  for (const auto s : sizes) EXPECT_TRUE(s == n / 9 || s == n / 9 + 1);
  std::multiset<double> all;
  for (std::int64_t i = 0; i < n; ++i) all.insert(static_cast<double>(i));
  EXPECT_EQ(seen, all);  // every row in exactly one part
  ASSERT_EQ(r.ledger.size(), 1u);
  EXPECT_EQ(r.ledger[0].mechanism, "parallel_composition");
  EXPECT_EQ(r.ledger[0].blocks.size(), 9u);  // the parts' own ledgers
  EXPECT_EQ(r.ledger[0].blocks[0][0].mechanism, "gaussian");
  EXPECT_DOUBLE_EQ(r.privacy.epsilon, 1);
  EXPECT_DOUBLE_EQ(r.privacy.delta, 1e-6);
  EXPECT_TRUE(r.privacy.certified);
  EXPECT_EQ(caller.ledger().size(), 1u);  // one charge, not nine
  EXPECT_EQ(r.diagnostics["boost_parts"], 9);
}

TEST(Boosting, AbstainsWithoutAMajorityAndRefusesAnOverspendingPart) {
  RowMatrix X = RowMatrix::Zero(100, 1);
  const PrivacyTarget target{1, 1e-6};
  int calls = 0;
  auto abstain_most = [&](const ConstMatrixRef&, Rng& g, Budget*) {
    ReleaseBudget account(target.loss(), Accountant::basic);
    account.charge(LaplaceMechanism(1, 0.5).ledger_entry("part"));
    SealFacts f(true);
    if (calls++ % 3 != 0) f.abstained = "part abstained";
    return seal(Vector(Vector::Zero(1)), account, f, g);
  };
  SeededRng rng(43);
  const auto r = boosted_release(X, target, 5, "test", abstain_most, NoiseMode::secure, rng);
  EXPECT_EQ(r.status, Status::abstained);
  EXPECT_EQ(r.ledger.size(), 1u);  // the abstention spent the budget
  auto overspend = [&](const ConstMatrixRef&, Rng& g, Budget* b) {
    ReleaseBudget account(PrivacyLoss::approximate(2, 1e-6), Accountant::basic, b);
    account.charge(GaussianMechanism::from_epsilon_delta(1, 2, 1e-6).ledger_entry("x"));
    return seal(Vector(Vector::Zero(1)), account, SealFacts(true), g);
  };
  EXPECT_THROW(boosted_release(X, target, 5, "test", overspend, NoiseMode::secure, rng),
               std::logic_error);
  EXPECT_THROW(boosted_release(RowMatrix::Zero(9, 1), target, 5, "test", abstain_most,
                               NoiseMode::secure, rng),
               InvalidArgument);
}

TEST(Boosting, RegistryMethods) {
  SeededRng rng(44);
  RowMatrix X(9 * 4000, 2);
  for (Eigen::Index i = 0; i < X.rows(); ++i) X.row(i) << standard_normal(rng), standard_normal(rng);
  MeanRequest r;
  r.method = "prime-boosted";
  r.privacy = {10, 0.01};
  r.alpha = 0.05;
  r.scale = std::vector<double>{1};
  const auto out = run_mean(X, r, rng);
  ASSERT_EQ(out.status, Status::ok);
  EXPECT_EQ(out.diagnostics["boost_parts"], 9);
  EXPECT_LE(out.privacy.epsilon, 10);
  EXPECT_LT(out.estimate.norm(), 0.5);
  r.boost_zeta = 0.1;
  EXPECT_EQ(run_mean(X, r, rng).diagnostics["boost_parts"], 7);
  r.method = "prime";  // boost_zeta does not apply
  EXPECT_THROW(run_mean(X, r, rng), InvalidArgument);
  r.method = "prime-ht-boosted";
  r.boost_zeta = 2;
  EXPECT_THROW(run_mean(X, r, rng), InvalidArgument);
}
