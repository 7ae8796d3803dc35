// PRIME and PRIME-ht over ranks (issue 18): on P = 1..4 in-process ranks (run_local_ranks) with
// uneven cuts (an empty rank included) the seeded release -- estimate, diagnostics, ledger -- is
// the single-process release on every rank and only rank 0 draws (as many words as one process):
// practical and paper profiles, the top-k cut on tied rows, q_range-ht, estimated units, the
// fallback to DP Mean and the boosted variants.
#include <bit>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/range_ht.hpp"
#include "../../src/mean/ranks_internal.hpp"  // mean_detail::q_range_ht (internal)
#include "robust_ranks.hpp"

namespace dpstats {
namespace {

using namespace robust_ranks;

MeanRequest prime_request(const char* method, Eigen::Index d, Profile profile) {
  MeanRequest r;
  r.method = method;
  r.alpha = 0.1;
  r.privacy = {10.0, 1e-6};
  r.profile = profile;
  r.fallback = false;  // PRIME itself, whatever the feasibility check says
  r.scale = std::vector<double>(static_cast<std::size_t>(d), 1.0);
  return r;
}

TEST(DistributedPrime, PracticalIsTheSingleProcessReleaseAndFilters) {
  const RowMatrix X = corrupted(6000, 4, 500, 40);
  const auto diag = expect_same_on_ranks(prime_request("prime", 4, Profile::practical), X);
  EXPECT_GE(diag.at("filter_rounds").get<int>(), 1) << diag.dump();
}

TEST(DistributedPrime, TopKCutOnTiedRowsIsTheSingleProcessRelease) {
  // 400 identical outliers, k = ceil(0.05 n) = 200: a round's cut takes some of them, chosen by
  // the value order (then the global row id) across ranks.
  const RowMatrix X = corrupted(4000, 3, 400, 0);
  MeanRequest r = prime_request("prime", 3, Profile::practical);
  r.alpha = 0.05;
  r.topk_multiplier = 1;
  const auto diag = expect_same_on_ranks(r, X);
  EXPECT_GE(diag.at("filter_rounds").get<int>(), 1) << diag.dump();
}

TEST(DistributedPrime, PaperProfileIsTheSingleProcessRelease) {
  // Paper: ψ̃ = (1/n)Σ(τ − 1) is an exact lattice sum, the uniform Z's are drawn on rank 0.
  const RowMatrix X = corrupted(30000, 2, 3000, 10);
  MeanRequest r = prime_request("prime", 2, Profile::paper);
  r.privacy = {100.0, 1e-3};
  r.T1 = 2;
  r.T2 = 2;
  const auto diag = expect_same_on_ranks(r, X);
  EXPECT_GE(diag.at("filter_rounds").get<int>(), 1) << diag.dump();
}

TEST(DistributedPrime, HeavyTailedPracticalIsTheSingleProcessRelease) {
  const RowMatrix X = corrupted(6000, 3, 600, 40);
  const auto diag = expect_same_on_ranks(prime_request("prime-ht", 3, Profile::practical), X);
  EXPECT_TRUE(diag.at("heavy_tailed").get<bool>());
  EXPECT_GE(diag.at("filter_rounds").get<int>(), 1) << diag.dump();
}

TEST(DistributedPrime, HeavyTailedPaperIsTheSingleProcessRelease) {
  // Paper PRIME-ht: q_range-ht's random partition drawn on rank 0 over the global rows, every
  // part's bins merged exactly, every part released on rank 0. At the paper's split (m parts at
  // (eps/m, delta/m), the 0.9 cap) every part abstains at any n a test can afford: the release is
  // that abstention, with the same draws (one stability histogram per part and coordinate).
  const RowMatrix X = corrupted(30000, 2, 1500, 10);
  MeanRequest r = prime_request("prime-ht", 2, Profile::paper);
  r.privacy = {200.0, 1e-2};
  r.failure_probability = 0.5;  // m = 278 parts
  const auto diag = expect_same_on_ranks(r, X);
  EXPECT_EQ(diag.at("abstained"), "q_range-ht: every part abstained") << diag.dump();
}

TEST(DistributedPrime, QRangeHtCentreIsTheSingleProcessCentre) {
  // q_range-ht itself where its parts do release (few parts, parallel composition): the centre
  // (the median of the parts' centres) and the draws are one process's.
  const RowMatrix X = corrupted(10000, 3, 200, 10);
  RangeHtOptions o;
  o.epsilon = 20;
  o.delta = 1e-3;
  o.partitions = 9;
  o.parallel = true;
  o.sigma = 0.05;
  CountingRng one(3);
  const auto ref = q_range_ht(X, o, one);
  ASSERT_TRUE(ref.has_value());
  ASSERT_EQ(ref->failed, 0);
  for (int P = 1; P <= 4; ++P) {
    std::mutex m;
    std::vector<std::optional<Vector>> got(static_cast<std::size_t>(P));
    std::vector<long> draws(static_cast<std::size_t>(P));
    run_local_ranks(P, [&](Communicator& c) {
      const Eigen::Index lo = cut(c.rank(), P, X.rows()), hi = cut(c.rank() + 1, P, X.rows());
      CountingRng rng(3);
      auto centre = mean_detail::q_range_ht(X.middleRows(lo, hi - lo), X.rows(), o, c, rng, 2);
      const std::lock_guard lock(m);
      got[static_cast<std::size_t>(c.rank())] = std::move(centre);
      draws[static_cast<std::size_t>(c.rank())] = rng.draws;
    });
    for (int k = 0; k < P; ++k) {
      ASSERT_TRUE(got[static_cast<std::size_t>(k)].has_value()) << "P = " << P;
      for (Eigen::Index j = 0; j < X.cols(); ++j)
        EXPECT_EQ(std::bit_cast<std::uint64_t>((*got[static_cast<std::size_t>(k)])[j]),
                  std::bit_cast<std::uint64_t>(ref->centre[j]))
            << "P = " << P << ", rank " << k << ", column " << j;
      EXPECT_EQ(draws[static_cast<std::size_t>(k)], k == 0 ? one.draws : 0) << "P = " << P;
    }
  }
}

TEST(DistributedPrime, EstimatedUnitsAreTheSingleProcessRelease) {
  // No scale: the units are estimated privately over every rank (mean/units.hpp).
  const RowMatrix X = corrupted(6000, 3, 500, 20);
  MeanRequest r = prime_request("prime", 3, Profile::practical);
  r.scale.reset();
  const auto diag = expect_same_on_ranks(r, X);
  EXPECT_EQ(diag.at("units").at("scale"), "estimated") << diag.dump();
}

TEST(DistributedPrime, FallbackToDpMeanIsTheSingleProcessRelease) {
  // Infeasible at this budget: the practical profile falls back to DP Mean, over ranks too.
  const RowMatrix X = corrupted(2000, 3, 0, 0);
  MeanRequest r = prime_request("prime", 3, Profile::practical);
  r.privacy = {0.2, 1e-6};
  r.fallback = true;
  const auto diag = expect_same_on_ranks(r, X);
  EXPECT_EQ(diag.at("fallback"), "dp-mean") << diag.dump();
}

TEST(DistributedPrime, BoostedIsTheSingleProcessRelease) {
  // Boosting: rank 0 draws the partition of the global rows; each part (its rows in global row
  // order) is a PRIME release over every rank.
  const RowMatrix X = corrupted(9000, 2, 300, 10);
  for (const char* method : {"prime-boosted", "prime-ht-boosted"}) {
    MeanRequest r = prime_request(method, 2, Profile::practical);
    r.boost_zeta = 0.2;  // 3 parts
    const auto diag = expect_same_on_ranks(r, X);
    EXPECT_EQ(diag.at("boost_parts").get<int>(), 3) << diag.dump();
    EXPECT_TRUE(diag.contains("boost_selected_part")) << method << ": " << diag.dump();
  }
}

}  // namespace
}  // namespace dpstats
