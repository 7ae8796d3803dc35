// The mean family over ranks (issue 18): on P = 1..4 in-process ranks (run_local_ranks) the
// seeded release -- estimate, diagnostics, ledger -- is the single-process release, every rank
// gets it, only rank 0 draws (as many words as one process), and the guards stop every rank.
#include <gtest/gtest.h>

#include <atomic>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/bounded_mean.hpp"
#include "dpstats/mean/methods.hpp"
#include "dpstats/scale/bounds.hpp"
#include "dpstats/stats/stats.hpp"
#include "../ranks_harness.hpp"

namespace dpstats {
namespace {

RowMatrix odd_units(Eigen::Index n) {
  SeededRng g(42);
  RowMatrix X(n, 3);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double u = static_cast<double>(g.next_u64() >> 11) * 0x1p-53;
    const double v = static_cast<double>(g.next_u64() >> 11) * 0x1p-53;
    X(i, 0) = 1e-3 * (u - 0.5);
    X(i, 1) = 5e4 + 1e3 * (v - 0.5);
    X(i, 2) = i % 97 == 0 ? 1e9 : 1 / (0.01 + u);  // heavy tail, a few huge rows
  }
  return X;
}

using ranks_harness::dump;

std::string dump(const Release<Bounds>& r) {
  std::string s = release_fields_json(r).dump();
  const ScaleEstimate& e = r.estimate.scale;
  for (const Vector& v : {e.location(), e.scale(), e.lo(), e.hi()})
    for (Eigen::Index j = 0; j < v.size(); ++j) s += fmt::format(" {:a}", v[j]);
  return s;
}

std::string dump(const Release<stats::Histogram>& r) {
  std::string s = release_fields_json(r).dump();
  for (std::size_t k = 0; k < r.estimate.categories.size(); ++k)
    s += fmt::format(" {}={:a}", r.estimate.categories[k], r.estimate.counts[static_cast<Eigen::Index>(k)]);
  return s;
}

// Where rank r's rows start of n rows on P ranks (rank P: n). Even blocks; uneven blocks (rank r
// holds about (2r + 1)/P^2 of the rows); and rank 1 holding none.
using Cut = Eigen::Index (*)(Eigen::Index n, int P, int r);
Eigen::Index even(Eigen::Index n, int P, int r) { return n * r / P; }
Eigen::Index uneven(Eigen::Index n, int P, int r) { return n * r * r / (P * P); }
Eigen::Index empty_rank_1(Eigen::Index n, int P, int r) {
  return r == 0 ? 0 : n * std::max(r - 1, 1) / std::max(P - 1, 1);
}

// The single-process release and its draw count, then the same on P = 1..4 ranks (rank r holding
// the rows [cut(r), cut(r + 1))), checked on every rank. Returns the single-process release's dump.
template <class Run>
std::string expect_same_release_on_ranks(const RowMatrix& X, Run run, Cut cut) {
  return ranks_harness::expect_same_on_ranks(
      X.rows(), cut, 7, [&](Eigen::Index lo, Eigen::Index hi, Communicator* c, Rng& rng) {
        return dump(run(X.middleRows(lo, hi - lo), c, rng));
      });
}

std::string expect_same_mean_on_ranks(const MeanRequest& base, Eigen::Index n, Cut cut,
                                      Eigen::Index columns = 3) {
  return expect_same_release_on_ranks(
      RowMatrix(odd_units(n).leftCols(columns)),
      [&](const ConstMatrixRef& X, Communicator* c, Rng& rng) {
        MeanRequest r = base;
        r.run.comm = c;
        return run_mean(X, r, rng);
      },
      cut);
}

// The same on P ranks each holding a contiguous block.
void expect_same_on_ranks(const MeanRequest& base, Eigen::Index n) {
  expect_same_mean_on_ranks(base, n, even);
}

TEST(DistributedMean, BoundedLaplaceIsTheSingleProcessRelease) {
  MeanRequest r;
  r.method = "bounded";
  r.privacy = {1.0, 0.0};
  r.bounds = std::vector<double>{-10, 10};
  expect_same_on_ranks(r, 5003);
}

TEST(DistributedMean, BoundedPerColumnGaussianIsTheSingleProcessRelease) {
  MeanRequest r;
  r.method = "bounded";
  r.privacy = {0.5, 1e-6};
  r.bounds = std::vector<double>{-1e-3, 1e-3, 4.9e4, 5.1e4, 0, 50};
  expect_same_on_ranks(r, 4099);
}

TEST(DistributedMean, DpMeanWithScaleIsTheSingleProcessRelease) {
  MeanRequest r;
  r.method = "dp-mean";
  r.privacy = {1.0, 1e-6};
  r.scale = std::vector<double>{1e-3, 1e3, 10};
  expect_same_on_ranks(r, 6007);
}

// A dump of a release that did not abstain (the estimate's words follow the JSON).
bool released(const std::string& dump) {
  return dump.find("\"status\":\"abstained\"") == std::string::npos &&
         dump.find(" 0x") != std::string::npos;
}

// The private scale layer over ranks: the selections' counts, the winsorised lattice sum and the
// tail count are merged exactly, so estimating the units gives the single-process release.
TEST(DistributedMean, BoundedWithEstimatedBoundsIsTheSingleProcessRelease) {
  MeanRequest r;
  r.method = "bounded";
  r.privacy = {8.0, 0.0};  // enough for the units' 12 selections at n = 5003 (else: abstains)
  for (Cut cut : {even, uneven}) {
    const std::string s = expect_same_mean_on_ranks(r, 5003, cut);
    EXPECT_TRUE(released(s)) << s;
    EXPECT_NE(s.find("private_clip_bounds"), std::string::npos) << s;
  }
  r.privacy = {6.0, 1e-6};
  EXPECT_TRUE(released(expect_same_mean_on_ranks(r, 4099, empty_rank_1)));
}

TEST(DistributedMean, DpMeanWithEstimatedScaleIsTheSingleProcessRelease) {
  MeanRequest r;
  r.method = "dp-mean";
  r.privacy = {8.0, 1e-6};
  // The two light-tailed columns: on the third DP Mean's tail check (rows beyond 3 private
  // scales) rightly abstains, and an abstention would compare little.
  EXPECT_TRUE(released(expect_same_mean_on_ranks(r, 6007, uneven, 2)));
  EXPECT_TRUE(released(expect_same_mean_on_ranks(r, 6007, empty_rank_1, 2)));
}

TEST(DistributedMean, PrivateBoundsAreTheSingleProcessRelease) {
  for (const double delta : {0.0, 1e-6}) {
    BoundsOptions base;
    base.privacy = {delta > 0 ? 4.0 : 1.0, delta};
    base.run.threads = 2;
    if (delta > 0) base.norm_quantile = 0.9;  // and the norm quantile about the location
    for (Cut cut : {even, uneven, empty_rank_1}) {
      const std::string s = expect_same_release_on_ranks(
          odd_units(3001),
          [&](const ConstMatrixRef& X, Communicator* c, Rng& rng) {
            BoundsOptions o = base;
            o.run.comm = c;
            return private_bounds(X, o, rng);
          },
          cut);
      EXPECT_NE(s.find("\"all_ok\":true"), std::string::npos) << s;
      EXPECT_EQ(s.find("norm_quantile") != std::string::npos, delta > 0) << s;
    }
  }
}

TEST(DistributedMean, EstimatedBoundsAbstainAlikeOnTooFewRows) {
  MeanRequest r;
  r.method = "bounded";
  r.privacy = {0.05, 0.0};
  // The scale selections cannot be guaranteed: every rank abstains alike, with the reason.
  const std::string s = expect_same_mean_on_ranks(r, 40, uneven);
  EXPECT_NE(s.find("\"status\":\"abstained\""), std::string::npos) << s;
}

TEST(DistributedMean, FewerRowsThanRanksStillAgree) {
  MeanRequest r;
  r.method = "bounded";
  r.privacy = {1.0, 1e-6};
  r.bounds = std::vector<double>{-1e9, 1e9};
  expect_same_on_ranks(r, 3);  // P = 4: one rank holds no row
}

TEST(DistributedMean, MismatchedOptionsStopEveryRankBeforeAnyDraw) {
  std::atomic<int> refused{0};
  std::atomic<long> draws{0};
  const RowMatrix X = odd_units(100);
  EXPECT_THROW(run_local_ranks(3, [&](Communicator& c) {
    BoundedMeanOptions o;
    o.privacy = {1.0, 0.0};
    o.bounds = std::vector<double>{-10, c.rank() == 2 ? 11.0 : 10.0};
    o.run.comm = &c;
    CountingRng rng(1);
    try {
      bounded_mean(X.middleRows(30 * c.rank(), 30), o, rng);
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("ranks disagree"), std::string::npos) << e.what();
      ++refused;
      draws += rng.draws;
      throw;
    }
  }), InvalidArgument);
  EXPECT_EQ(refused.load(), 3);
  EXPECT_EQ(draws.load(), 0);
}

TEST(DistributedMean, OneRanksBadCellStopsEveryRank) {
  std::atomic<int> refused{0};
  RowMatrix X = odd_units(90);
  X(70, 1) = std::numeric_limits<double>::quiet_NaN();  // rank 2's rows
  EXPECT_THROW(run_local_ranks(3, [&](Communicator& c) {
    BoundedMeanOptions o;
    o.privacy = {1.0, 1e-6};
    o.bounds = std::vector<double>{-10, 10};
    o.run.comm = &c;
    SeededRng rng(1);
    try {
      bounded_mean(X.middleRows(30 * c.rank(), 30), o, rng);
    } catch (const InvalidArgument&) {
      ++refused;
      throw;
    }
  }), InvalidArgument);
  EXPECT_EQ(refused.load(), 3);
}

TEST(DistributedMean, MethodsNotDistributedRefuseSeveralRanks) {
  const RowMatrix X = odd_units(200);
  EXPECT_THROW(run_local_ranks(2, [&](Communicator& c) {
    MeanRequest r;
    r.method = "exp-time";  // not distributed (PRIME is: test_distributed_prime.cpp)
    r.alpha = 0.05;
    r.privacy = {1.0, 1e-6};
    r.run.comm = &c;
    SeededRng rng(1);
    run_mean(X.middleRows(100 * c.rank(), 100).leftCols(1), r, rng);
  }), InvalidArgument);
}

// stat quantiles over ranks: the counts below every candidate are added exactly and rank 0
// selects; with given bounds and with the bounds estimated privately (the scale layer over
// ranks), pure (delta = 0) and zCDP targets, uneven cuts and an empty rank.
TEST(DistributedStats, QuantilesAreTheSingleProcessRelease) {
  for (const double delta : {0.0, 1e-6}) {
    for (const bool given : {true, false}) {
      stats::StatOptions base;
      base.privacy = {given ? 3.0 : 6.0, delta};  // a rank error within a quarter of the rows
      base.quantiles = {0.1, 0.5, 0.9};
      base.grid_size = given ? 4096 : 1024;
      if (given) base.bounds = {{-1e-3, 1e-3}, {4.9e4, 5.1e4}, {0, 200}};
      for (Cut cut : {uneven, empty_rank_1}) {
        const std::string s = expect_same_release_on_ranks(
            odd_units(3001),
            [&](const ConstMatrixRef& X, Communicator* c, Rng& rng) {
              stats::StatOptions o = base;
              o.run.comm = c;
              return stats::quantiles(X, o, rng);
            },
            cut);
        EXPECT_TRUE(released(s)) << s;
        EXPECT_EQ(s.find("bounds_estimate") == std::string::npos, given) << s;
      }
    }
  }
}

// The moments with their bounds estimated privately now run on ranks too.
TEST(DistributedStats, VarianceWithEstimatedBoundsIsTheSingleProcessRelease) {
  stats::StatOptions base;
  base.privacy = {6.0, 1e-6};
  const std::string s = expect_same_release_on_ranks(
      odd_units(3001),
      [&](const ConstMatrixRef& X, Communicator* c, Rng& rng) {
        stats::StatOptions o = base;
        o.run.comm = c;
        return stats::variance(X, o, rng);
      },
      uneven);
  EXPECT_TRUE(released(s)) << s;
  EXPECT_NE(s.find("bounds_estimate"), std::string::npos) << s;
}

// stat histogram over ranks: every rank's tally gathered and added (exact counts, the same
// sorted categories), rank 0 draws; public categories (pure) and the private selection.
TEST(DistributedStats, HistogramIsTheSingleProcessRelease) {
  RowMatrix codes(4001, 1);
  SeededRng g(3);
  for (Eigen::Index i = 0; i < codes.rows(); ++i)  // a few common categories, a long rare tail
    codes(i, 0) = static_cast<double>(g.uniform_below(i % 3 == 0 ? 400 : 6));
  for (const double delta : {0.0, 1e-6}) {
    stats::StatOptions base;
    base.privacy = {1.0, delta};
    if (delta == 0) base.categories = {"0", "1", "2", "5", "17", "absent"};
    for (Cut cut : {uneven, empty_rank_1}) {
      const std::string s = expect_same_release_on_ranks(
          codes,
          [&](const ConstMatrixRef& X, Communicator* c, Rng& rng) {
            std::vector<std::string> values;
            for (Eigen::Index i = 0; i < X.rows(); ++i)
              values.push_back(std::to_string(static_cast<int>(X(i, 0))));
            stats::StatOptions o = base;
            o.run.comm = c;
            return stats::histogram(values, o, rng);
          },
          cut);
      EXPECT_NE(s.find(" 5="), std::string::npos) << s;  // a common category is released
      EXPECT_EQ(s.find(" 399="), std::string::npos) << s;  // a rare one is not
    }
  }
}

}  // namespace
}  // namespace dpstats
