// The private filter over ranks (issue 18): on P = 1..4 in-process ranks (run_local_ranks) with
// uneven cuts (an empty rank included) the seeded release -- estimate, diagnostics, ledger -- is
// the single-process release on every rank, only rank 0 draws (as many words as one process),
// for both profiles, with the top-k cut binding on tied rows, and with estimated units.
#include "dpstats/error.hpp"
#include "robust_ranks.hpp"

namespace dpstats {
namespace {

using namespace robust_ranks;

MeanRequest filter_request(Eigen::Index d, Profile profile) {
  MeanRequest r;
  r.method = "filter";
  r.alpha = 0.05;
  r.privacy = {2.0, 1e-6};
  r.profile = profile;
  r.scale = std::vector<double>(static_cast<std::size_t>(d), 1.0);
  return r;
}

TEST(DistributedFilter, PracticalIsTheSingleProcessReleaseAndFilters) {
  const RowMatrix X = corrupted(6000, 4, 500, 40);
  MeanRequest r = filter_request(4, Profile::practical);
  r.alpha = 0.1;
  r.privacy = {10.0, 1e-6};
  const auto diag = expect_same_on_ranks(r, X);
  EXPECT_GE(diag.at("filter_rounds").get<int>(), 1) << diag.dump();
}

TEST(DistributedFilter, TopKCutOnTiedRowsIsTheSingleProcessRelease) {
  // 400 identical outliers and k = ceil(0.05 n) = 200: the first round's cut takes 200 of them,
  // chosen by the value order (then the global row id) across ranks.
  const RowMatrix X = corrupted(4000, 3, 400, 0);
  MeanRequest r = filter_request(3, Profile::practical);
  r.privacy = {10.0, 1e-6};
  r.topk_multiplier = 1;
  r.T = 3;
  const auto diag = expect_same_on_ranks(r, X);
  EXPECT_GE(diag.at("filter_rounds").get<int>(), 1) << diag.dump();
}

TEST(DistributedFilter, PaperProfileIsTheSingleProcessRelease) {
  const RowMatrix X = corrupted(30000, 2, 3000, 10);  // paper: noisy lambda needs n large
  MeanRequest r = filter_request(2, Profile::paper);
  r.alpha = 0.1;
  r.privacy = {100.0, 1e-3};  // paper: n >= (4/eps1) ln(1/(2 delta1)), eps1 <= 0.9/(4 sqrt(2T ln(2/delta)))
  r.T = 4;
  const auto diag = expect_same_on_ranks(r, X);
  EXPECT_GE(diag.at("filter_rounds").get<int>(), 1) << diag.dump();
}

TEST(DistributedFilter, EstimatedUnitsAreTheSingleProcessRelease) {
  // No scale: the units are estimated privately over every rank (mean/units.hpp).
  const RowMatrix X = corrupted(6000, 3, 300, 20);
  MeanRequest r = filter_request(3, Profile::practical);
  r.scale.reset();
  r.privacy = {10.0, 1e-6};
  const auto diag = expect_same_on_ranks(r, X);
  EXPECT_EQ(diag.at("units").at("scale"), "estimated") << diag.dump();
  EXPECT_GE(diag.at("filter_rounds").get<int>(), 1) << diag.dump();
}

}  // namespace
}  // namespace dpstats
