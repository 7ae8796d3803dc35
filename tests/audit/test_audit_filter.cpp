// Black-box audits of the private filter's and PRIME-ht's final releases at small size (card §6,
// privacy item 7), on the same neighbouring pair as PRIME's audit (one clean row replaced by an
// outlier in the corrupted direction), with the noise-off control that the audit must catch.
#include <gtest/gtest.h>

#include <iostream>

#include "audit/auditor.hpp"
#include "dpstats/data/synthetic.hpp"
#include "dpstats/mean/prime_ht.hpp"
#include "dpstats/mean/private_filter.hpp"

using namespace dpstats;
using dpstats::audit::AuditOptions;
using dpstats::audit::VectorMechanism;

namespace {

struct Pair {
  RowMatrix D, Dp;
};

Pair neighbours(std::int64_t n, std::int64_t d) {
  SeededRng g(11);
  Pair p;
  p.D = shifted_cluster(n, d, 0.1, 2.0, g);
  p.Dp = p.D;
  p.Dp.row(0) = Eigen::RowVectorXd::Constant(d, 6.0);
  return p;
}

VectorMechanism run_filter(const RowMatrix& X, const PrivateFilterOptions& o, bool noiseless) {
  return [&X, o, noiseless](Rng& g) {
    PrimeTrace trace;
    trace.noiseless = noiseless;
    const auto r = private_filter(X, o, g, nullptr, noiseless ? &trace : nullptr);
    if (r.status != Status::ok) return std::vector<double>(X.cols(), 1e9);
    return std::vector<double>(r.estimate.data(), r.estimate.data() + r.estimate.size());
  };
}

VectorMechanism run_ht(const RowMatrix& X, const PrimeOptions& o) {
  return [&X, o](Rng& g) {
    const auto r = prime_ht(X, o, g);
    if (r.status != Status::ok) return std::vector<double>(X.cols(), 1e9);
    return std::vector<double>(r.estimate.data(), r.estimate.data() + r.estimate.size());
  };
}

PrivateFilterOptions filter_options() {
  PrivateFilterOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 4;
  o.privacy.delta = 1e-3;
  o.alpha = 0.1;
  o.T = 4;
  return o;
}

}  // namespace

TEST(AuditPrivateFilter, PracticalFinalReleaseMeetsItsClaim) {
  const Pair p = neighbours(1000, 1);
  const auto o = filter_options();
  AuditOptions ao;
  ao.samples = 12000;
  ao.seed = 5;
  const auto r = dpstats::audit::audit(run_filter(p.D, o, false), run_filter(p.Dp, o, false),
                                       o.privacy.epsilon, o.privacy.delta, ao);
  std::cout << "  filter: " << r.summary() << "\n";
  EXPECT_FALSE(r.violation) << r.summary();
}

TEST(AuditPrivateFilter, TheNoiselessSwitchIsCaught) {
  const Pair p = neighbours(1000, 1);
  const auto o = filter_options();
  AuditOptions ao;
  ao.samples = 4000;
  ao.seed = 6;
  const auto r = dpstats::audit::audit(run_filter(p.D, o, true), run_filter(p.Dp, o, true),
                                       o.privacy.epsilon, o.privacy.delta, ao);
  std::cout << "  filter noiseless: " << r.summary() << "\n";
  EXPECT_TRUE(r.violation) << r.summary();
}

TEST(AuditPrimeHt, PracticalFinalReleaseMeetsItsClaim) {
  const Pair p = neighbours(1000, 1);
  PrimeOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 4;
  o.privacy.delta = 1e-3;
  o.alpha = 0.1;
  o.fallback = false;
  o.T1 = 2;
  o.T2 = 2;
  AuditOptions ao;
  ao.samples = 12000;
  ao.seed = 7;
  const auto r = dpstats::audit::audit(run_ht(p.D, o), run_ht(p.Dp, o), o.privacy.epsilon, o.privacy.delta, ao);
  std::cout << "  prime-ht: " << r.summary() << "\n";
  EXPECT_FALSE(r.violation) << r.summary();
}
