// The moments stream over ranks (issue 18 item 4; comm/replay.hpp): a step is one row, so every
// rank gathers the rows in global order and runs the single-process stream, rank 0 drawing and the
// others replaying its words. On P = 1..4 in-process ranks with uneven cuts, every rank's seeded
// release (series, diagnostics, ledger) is the single-process release, and only rank 0 draws (as
// many words as one process).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/comm/replay.hpp"
#include "dpstats/error.hpp"
#include "dpstats/moments/estimator.hpp"
#include "../ranks_harness.hpp"

namespace dpstats::moments {
namespace {

// Odd units per column (x 1e-3, x 1e3 shifted), heavy tails in one, a few corrupted rows.
RowMatrix table(Eigen::Index n, Eigen::Index d, unsigned seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> z;
  std::student_t_distribution<double> t2(2);
  RowMatrix X(n, d);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < d; ++j)
      X(i, j) = j % 3 == 0 ? 1e-3 * (2 + z(g)) : j % 3 == 1 ? 5e4 + 1e3 * z(g) : t2(g);
  for (Eigen::Index i = 0; i < n; i += 151) X.row(i) *= 1e6;
  return X;
}

std::string dump(const Release<MomentSeries>& r) {
  std::string s = release_fields_json(r).dump();
  for (const RowMatrix* m : {&r.estimate.first, &r.estimate.second})
    for (Eigen::Index i = 0; i < m->size(); ++i) s += fmt::format(" {:a}", m->data()[i]);
  return s;
}

// `Gen`: CountingRng (draws counted) or SeededRng (splits for the chunked noise).
template <class Gen>
void expect_same_on_ranks(const RowMatrix& X, const MomentsConfig& base) {
  const std::string single = ranks_harness::expect_same_on_ranks<Gen>(
      X.rows(), ranks_harness::uneven, 7,
      [&](Eigen::Index lo, Eigen::Index hi, Communicator* c, Rng& rng) {
        MomentsConfig o = base;
        o.run.comm = c;
        return dump(estimate_moments(X.middleRows(lo, hi - lo), o, rng));
      });
  EXPECT_NE(single.find("\"status\":\"ok\""), std::string::npos) << single.substr(0, 400);
}

TEST(DistributedMoments, PrivateClipAndCentreGiveTheSingleProcessRelease) {
  const RowMatrix X = table(1500, 3, 1);
  MomentsConfig c = make_config(1500, 3, "jme", "average", "sqrt", false);
  c.privacy = {.epsilon = 2, .delta = 1e-6};
  expect_same_on_ranks<CountingRng>(X, c);
}

TEST(DistributedMoments, SuppliedClipWithItsCheckGivesTheSingleProcessRelease) {
  const RowMatrix X = table(400, 4, 2);
  MomentsConfig c = make_config(400, 4, "jme", "prefix", "banded:4", true);
  c.privacy = {.epsilon = 1, .delta = 1e-6};
  c.clip = 6e4;
  expect_same_on_ranks<CountingRng>(X, c);
}

// d^2 = 33,124 values per step: the noise is drawn in chunks from split generators (on 2 threads),
// which the other ranks replay in the order rank 0 split them.
TEST(DistributedMoments, SplitGeneratorsAreReplayed) {
  const RowMatrix X = table(12, 182, 3);
  MomentsConfig c = make_config(12, 182, "jme", "prefix", "sqrt", false);
  c.privacy = {.epsilon = 1, .delta = 1e-6};
  c.clip = 1e9;
  c.run.threads = 2;
  expect_same_on_ranks<SeededRng>(X, c);
}

TEST(DistributedMoments, RanksThatDisagreeOnTheOptionsAreRefused) {
  const RowMatrix X = table(100, 2, 4);
  EXPECT_THROW(run_local_ranks(2,
                               [&](Communicator& c) {
                                 MomentsConfig o = make_config(100, 2, "jme", "prefix", "sqrt", false);
                                 o.privacy = {.epsilon = c.rank() == 0 ? 1.0 : 2.0, .delta = 1e-6};
                                 o.clip = 10;
                                 o.run.comm = &c;
                                 SeededRng rng(1);
                                 (void)estimate_moments(X.middleRows(c.rank() * 50, 50), o, rng);
                               }),
               InvalidArgument);
}

// A replay that reads more or fewer words than rank 0 drew is refused on that rank.
TEST(DistributedMoments, AReplayThatDivergesIsRefused) {
  EXPECT_THROW(run_local_ranks(2,
                               [](Communicator& c) {
                                 SeededRng rng(1);
                                 (void)replay_on_ranks(c, rng, [&](Rng& r) {
                                   return r.next_u64() + (c.rank() == 1 ? r.next_u64() : 0);
                                 });
                               }),
               InvalidArgument);
}

}  // namespace
}  // namespace dpstats::moments
