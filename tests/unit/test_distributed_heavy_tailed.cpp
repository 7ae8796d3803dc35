// The heavy-tailed fit's scale step over ranks (issue 18 item 4): with no moment bound and the
// default centring, on P = 1..4 in-process ranks (run_local_ranks) with uneven cuts (a rank may
// hold no row), the seeded release -- estimate, diagnostics, ledger -- is the single-process
// release on every rank, and only rank 0 draws (as many words as one process): the private
// centring (private_location over every rank's rows), the moment-bound estimate (the scale
// layer's exact counts) and, below the centring's threshold, the offset check (exact counts).
#include <gtest/gtest.h>

#include <string>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/heavy_tailed/heavy_tailed.hpp"
#include "dpstats/synthetic/heavy_tailed_data.hpp"
#include "../ranks_harness.hpp"

namespace dpstats::optimize {
namespace {

HeavyTailedSample sample(std::int64_t n, std::int64_t d, std::uint64_t seed, double shift = 0) {
  HeavyTailedTask t;
  t.kind = HeavyTailedTaskKind::l1_student_t;
  t.d = d;
  t.nu = 5;
  SeededRng rng(seed);
  HeavyTailedSample s = generate_heavy_tailed(t, n, rng);
  s.X.col(0).array() += shift;  // a column far from 0 (offset check) when shift is large
  return s;
}

// Rank r of P holds rows [cut(r), cut(r + 1)): uneven, and rank 0 holds none (P > 1).
Eigen::Index cut(Eigen::Index n, int P, int r) {
  return r == 0 ? 0 : (r == P ? n : n * (r * r + r - 2) / (P * P + P - 2));
}

// The single-process release; checks every P = 1..4 against it (bytes and draws; the ranks
// alternate 1 and 2 threads). The single-process release's status must be `want`.
std::string expect_same_on_ranks(const HeavyTailedSample& s, const HeavyTailedOptions& o,
                                 Status want = Status::ok) {
  const std::string single = ranks_harness::expect_same_on_ranks(
      s.X.rows(), cut, 77, [&](Eigen::Index lo, Eigen::Index hi, Communicator* c, Rng& rng) {
        HeavyTailedOptions mine = o;
        mine.run.comm = c;
        if (c) mine.run.threads = 1 + c->rank() % 2;
        return ranks_harness::dump(
            fit_heavy_tailed(s.X.middleRows(lo, hi - lo), s.y.segment(lo, hi - lo), mine, rng));
      });
  EXPECT_NE(single.find(fmt::format("\"status\":\"{}\"", to_string(want))), std::string::npos)
      << single;
  return single;
}

HeavyTailedOptions defaults(HeavyTailedMethod m, double epsilon = 4) {
  HeavyTailedOptions o;
  o.method = m;
  o.privacy = {epsilon, m == HeavyTailedMethod::dp_sgd ? 1e-6 : 0.0};
  o.domain_radius = 2;
  o.steps = 6;
  return o;
}

TEST(DistributedHeavyTailed, DefaultCentringAndMomentEstimateAreTheOneProcessRelease) {
  const HeavyTailedSample s = sample(9000, 3, 5);
  for (auto m : {HeavyTailedMethod::clipped_gd, HeavyTailedMethod::dp_sgd}) {
    const std::string single = expect_same_on_ranks(s, defaults(m));
    EXPECT_NE(single.find("\"intercept\":true"), std::string::npos) << single;
    EXPECT_NE(single.find("\"estimated\":true"), std::string::npos) << single;
  }
}

TEST(DistributedHeavyTailed, CentreTrueAndCentreFalseOnRanks) {
  const HeavyTailedSample s = sample(9000, 2, 6);
  HeavyTailedOptions o = defaults(HeavyTailedMethod::clipped_gd);
  o.centre = false;  // the moment-bound estimate alone
  const std::string plain = expect_same_on_ranks(s, o);
  EXPECT_NE(plain.find("\"estimated\":true"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("\"intercept\":true"), std::string::npos) << plain;
  o.centre = true;
  o.moment_bound = 2.5;  // the centring alone
  EXPECT_NE(expect_same_on_ranks(s, o).find("\"intercept\":true"), std::string::npos);
}

TEST(DistributedHeavyTailed, OffsetCheckBelowTheCentringThresholdOnRanks) {
  // Too few records to centre: the offset check runs over every rank's rows. A centred table
  // passes it (and the moment bound is estimated); a shifted column abstains on every rank.
  const HeavyTailedOptions o = defaults(HeavyTailedMethod::clipped_gd, 2);
  const std::string passed = expect_same_on_ranks(sample(1500, 2, 7), o);
  EXPECT_NE(passed.find("offset_check"), std::string::npos) << passed;
  EXPECT_NE(passed.find("\"estimated\":true"), std::string::npos) << passed;
  const std::string far = expect_same_on_ranks(sample(1500, 2, 7, 50), o, Status::abstained);
  EXPECT_NE(far.find("far from 0"), std::string::npos) << far;
}

}  // namespace
}  // namespace dpstats::optimize

namespace dpstats::optimize {
namespace {

// Output perturbation and lipschitz-extension: rank 0 gathers the rows (global order) and runs the
// certified solver, the final block's clip quantile and the noise; the final clipped-GD phase
// runs over the ranks. Rank 0 holds no row of its own here (the cut), so every row it solves on
// came from another rank.
TEST(DistributedHeavyTailed, CertifiedSolverMethodsAreTheOneProcessRelease) {
  const HeavyTailedSample s = sample(6000, 3, 8);
  for (auto m : {HeavyTailedMethod::lipschitz_extension, HeavyTailedMethod::output_perturbation}) {
    HeavyTailedOptions o = defaults(m, 2);
    o.steps.reset();
    o.moment_bound = 2.5;
    o.centre = false;
    const std::string single = expect_same_on_ranks(s, o);
    EXPECT_NE(single.find("\"phases\""), std::string::npos) << single;
  }
  // The defaults: the moment bound estimated and the features centred over the ranks, then
  // lipschitz-extension's certified first phase and private-clip GD phase.
  HeavyTailedOptions le = defaults(HeavyTailedMethod::lipschitz_extension);
  le.steps.reset();
  const std::string single = expect_same_on_ranks(sample(9000, 3, 9), le);
  EXPECT_NE(single.find("\"intercept\":true"), std::string::npos) << single;
}

}  // namespace
}  // namespace dpstats::optimize
