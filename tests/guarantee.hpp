// expect_guarantee_from_ledger: the check every driver's tests run on its releases. It recounts
// the release's ledger with the release's accountant and fails unless the stated guarantee is
// exactly what that ledger composes to -- so a driver that copies epsilon from its options, or
// drops an entry, fails.
#pragma once
#include <gtest/gtest.h>

#include <cmath>

#include "dpstats/privacy/budget.hpp"
#include "dpstats/release.hpp"

namespace dpstats::testing {

template <class T>
void expect_guarantee_from_ledger(const Release<T>& r) {
  const auto& p = r.privacy;
  if (!p.accountant) {  // not private: no guarantee is claimed
    EXPECT_TRUE(std::isinf(p.epsilon));
    EXPECT_FALSE(p.certified);
    EXPECT_TRUE(r.ledger.empty());
    return;
  }
  if (r.ledger.empty()) {  // an abstention its plan decided before anything was charged
    EXPECT_EQ(r.status, Status::abstained) << "a private release with an empty ledger";
    EXPECT_EQ(p.epsilon, 0);
    EXPECT_EQ(p.delta, 0);
    return;
  }
  // A total no ledger reaches, with the release's delta where the accountant converts at it.
  const bool converts = *p.accountant != Accountant::basic;
  Budget b(PrivacyLoss::approximate(1e300, converts ? p.delta : 0.999999), *p.accountant);
  for (const auto& e : r.ledger) b.spend(e);
  const PrivacyLoss spent = b.spent_epsilon_delta();
  EXPECT_EQ(spent.epsilon, p.epsilon) << "the stated epsilon is not what the ledger composes to";
  EXPECT_EQ(spent.delta, p.delta) << "the stated delta is not what the ledger composes to";
  if (*p.accountant == Accountant::zcdp) {
    ASSERT_TRUE(p.rho.has_value());
    EXPECT_EQ(b.spent().rho, *p.rho);
  }
}

}  // namespace dpstats::testing
