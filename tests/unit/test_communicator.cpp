// The communicator seam: the single-process identity, exact merges, shard offsets, the agreement
// guard, noise-once broadcasts and failure propagation, on P ranks as threads (run_local_ranks).
#include <gtest/gtest.h>

#include <atomic>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"

namespace dpstats {
namespace {

TEST(Communicator, SingleProcessIsTheIdentity) {
  auto& c = single_process();
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  Vector v(2);
  v << 3, -4;
  allreduce_exact(c, v);
  EXPECT_EQ(v[1], -4);
  EXPECT_EQ(shard_rows(c, 7).total, 7);
  EXPECT_EQ(on_root(c, [] { return 2.5; }), 2.5);
}

TEST(Communicator, ExactSumsAndOffsetsOverRanks) {
  for (int p = 1; p <= 4; ++p)
    run_local_ranks(p, [p](Communicator& c) {
      Vector v(2);
      v << c.rank() + 1, 0x1p52 / 8;
      allreduce_exact(c, v);
      EXPECT_EQ(v[0], p * (p + 1) / 2);
      EXPECT_EQ(v[1], p * 0x1p52 / 8);
      const auto s = shard_rows(c, 10 + c.rank());
      EXPECT_EQ(s.offset, 10 * c.rank() + c.rank() * (c.rank() - 1) / 2);
      EXPECT_EQ(s.total, 10 * p + p * (p - 1) / 2);
      EXPECT_EQ(allreduce_count(c, 1), p);
    });
}

TEST(Communicator, OverflowOfTheGlobalSumIsRefusedOnEveryRank) {
  std::atomic<int> refused{0};
  run_local_ranks(3, [&](Communicator& c) {
    Vector v(1);
    v << 0x1p52;
    try {
      allreduce_exact(c, v);
    } catch (const InvalidArgument&) {
      ++refused;
    }
  });
  EXPECT_EQ(refused.load(), 3);
}

TEST(Communicator, OnlyRankZeroDraws) {
  std::atomic<int> draws{0};
  run_local_ranks(4, [&](Communicator& c) {
    const Vector got = on_root(c, [&] {
      ++draws;
      Vector v(3);
      v << 1.5, -2, 1e-300;
      return v;
    });
    EXPECT_EQ(got.size(), 3);
    EXPECT_EQ(got[2], 1e-300);
  });
  EXPECT_EQ(draws.load(), 1);
}

TEST(Communicator, AFailureOnRankZeroStopsEveryRank) {
  std::atomic<int> threw{0};
  EXPECT_THROW(run_local_ranks(3, [&](Communicator& c) {
                 try {
                   on_root(c, []() -> double { throw InvalidArgument("budget exceeded"); });
                 } catch (const InvalidArgument& e) {
                   EXPECT_STREQ(e.what(), "budget exceeded");
                   ++threw;
                   throw;
                 }
               }),
               InvalidArgument);
  EXPECT_EQ(threw.load(), 3);
}

TEST(Communicator, DisagreementIsRefusedBeforeAnyWork) {
  EXPECT_THROW(run_local_ranks(2, [](Communicator& c) {
                 check_agreement(c, c.rank() == 0 ? "d=3" : "d=4", "the column count");
               }),
               InvalidArgument);
  run_local_ranks(2, [](Communicator& c) { check_agreement(c, "d=3", "the column count"); });
}

TEST(Communicator, AllToAllDeliversByRank) {
  run_local_ranks(3, [](Communicator& c) {
    std::vector<Bytes> send(3);
    for (int r = 0; r < 3; ++r) send[static_cast<std::size_t>(r)] = Bytes(static_cast<std::size_t>(r + 1), static_cast<std::uint8_t>(10 * c.rank() + r));
    const auto got = c.alltoall(send);
    for (int src = 0; src < 3; ++src) {
      ASSERT_EQ(got[static_cast<std::size_t>(src)].size(), static_cast<std::size_t>(c.rank() + 1));
      EXPECT_EQ(got[static_cast<std::size_t>(src)][0], 10 * src + c.rank());
    }
  });
}

TEST(Communicator, AFailedRankDoesNotHangTheOthers) {
  EXPECT_THROW(run_local_ranks(3, [](Communicator& c) {
                 if (c.rank() == 2) throw InvalidArgument("rank 2 died");
                 std::int64_t v = 1;
                 c.allreduce_sum(std::span<std::int64_t>(&v, 1));
               }),
               InvalidArgument);
}

}  // namespace
}  // namespace dpstats
