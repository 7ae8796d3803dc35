// The mean family over ranks (issue 18): on P = 1..4 in-process ranks (run_local_ranks) the
// seeded release -- estimate, diagnostics, ledger -- is the single-process release, every rank
// gets it, only rank 0 draws (as many words as one process), and the guards stop every rank.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/bounded_mean.hpp"
#include "dpstats/mean/methods.hpp"

namespace dpstats {
namespace {

// Counts the words drawn (split() is not offered, so every draw goes through here).
class CountingRng final : public Rng {
 public:
  explicit CountingRng(std::uint64_t seed) : inner_(seed) {}
  std::uint64_t next_u64() override {
    ++draws;
    return inner_.next_u64();
  }
  bool seeded() const noexcept override { return true; }
  long draws = 0;

 private:
  SeededRng inner_;
};

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

std::string dump(const Release<Vector>& r) {
  std::string s = release_fields_json(r).dump();
  for (Eigen::Index j = 0; j < r.estimate.size(); ++j) s += fmt::format(" {:a}", r.estimate[j]);
  return s;
}

// The single-process release and its draw count, then the same on P ranks (each holding a
// contiguous block), checked on every rank.
void expect_same_on_ranks(const MeanRequest& base, Eigen::Index n) {
  const RowMatrix X = odd_units(n);
  CountingRng one(7);
  const std::string single = dump(run_mean(X, base, one));
  for (int P = 1; P <= 4; ++P) {
    std::mutex m;
    std::vector<std::string> got(static_cast<std::size_t>(P));
    std::vector<long> draws(static_cast<std::size_t>(P));
    run_local_ranks(P, [&](Communicator& c) {
      const Eigen::Index lo = n * c.rank() / P, hi = n * (c.rank() + 1) / P;
      MeanRequest r = base;
      r.run.comm = &c;
      CountingRng rng(7);
      const std::string s = dump(run_mean(X.middleRows(lo, hi - lo), r, rng));
      const std::lock_guard lock(m);
      got[static_cast<std::size_t>(c.rank())] = s;
      draws[static_cast<std::size_t>(c.rank())] = rng.draws;
    });
    for (int k = 0; k < P; ++k) {
      EXPECT_EQ(got[static_cast<std::size_t>(k)], single) << "P = " << P << ", rank " << k;
      EXPECT_EQ(draws[static_cast<std::size_t>(k)], k == 0 ? one.draws : 0) << "P = " << P;
    }
  }
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
    r.method = "prime";
    r.alpha = 0.05;
    r.privacy = {1.0, 1e-6};
    r.run.comm = &c;
    SeededRng rng(1);
    run_mean(X.middleRows(100 * c.rank(), 100), r, rng);
  }), InvalidArgument);
}

}  // namespace
}  // namespace dpstats
