// The shared thread pool behind parallel_tasks / parallel_ranges (parallel.hpp): every task runs
// once, results do not depend on the thread count, exceptions reach the caller, nested calls run
// inline without deadlock, several callers share the pool, and no thread is spawned per call.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "dpstats/parallel.hpp"
#include "dpstats/run_control.hpp"

namespace dpstats {
namespace {

TEST(Parallel, EveryTaskRunsOnceAtAnyThreadCount) {
  for (int threads : {1, 2, 3, 8, 64}) {
    std::vector<std::atomic<int>> hits(1000);
    parallel_tasks(hits.size(), threads, [&](std::size_t i) { hits[i].fetch_add(1); });
    for (const auto& h : hits) ASSERT_EQ(h.load(), 1) << "threads " << threads;
  }
}

TEST(Parallel, RangesCoverTheCountAndDependOnThreadsOnly) {
  for (int threads : {1, 2, 5}) {
    std::vector<std::pair<std::int64_t, std::int64_t>> parts(static_cast<std::size_t>(threads));
    std::atomic<std::int64_t> total{0};
    parallel_ranges(1000, threads, 10, [&](int p, std::int64_t b, std::int64_t e) {
      parts[static_cast<std::size_t>(p)] = {b, e};
      total += e - b;
    });
    EXPECT_EQ(total.load(), 1000);
    for (int p = 0; p < threads; ++p)
      EXPECT_EQ(parts[static_cast<std::size_t>(p)],
                std::make_pair(std::int64_t{1000} * p / threads,
                               std::int64_t{1000} * (p + 1) / threads));
  }
}

TEST(Parallel, ATaskExceptionReachesTheCallerAndThePoolStaysUsable) {
  EXPECT_THROW(parallel_tasks(100, 4,
                              [](std::size_t i) {
                                if (i == 37) throw std::runtime_error("task 37");
                              }),
               std::runtime_error);
  std::atomic<int> n{0};
  parallel_tasks(100, 4, [&](std::size_t) { ++n; });
  EXPECT_EQ(n.load(), 100);
}

TEST(Parallel, NestedCallsRunInlineWithoutDeadlock) {
  std::atomic<int> n{0};
  parallel_tasks(8, 4, [&](std::size_t) {
    const auto outer = std::this_thread::get_id();
    parallel_tasks(16, 4, [&](std::size_t) {
      EXPECT_EQ(std::this_thread::get_id(), outer);  // inline on the outer task's thread
      ++n;
    });
  });
  EXPECT_EQ(n.load(), 8 * 16);
}

TEST(Parallel, ConcurrentCallersShareThePool) {
  std::atomic<std::int64_t> sum{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep)
        parallel_tasks(64, 3, [&](std::size_t i) { sum += static_cast<std::int64_t>(i); });
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(sum.load(), std::int64_t{4} * 50 * (63 * 64 / 2));
}

thread_local int t_calls_seen = 0;

TEST(Parallel, HelpersAreReusedAcrossCalls) {
  // A helper thread that works in several calls keeps its thread_local count; with a thread
  // spawned per call every helper would see exactly one call.
  std::atomic<int> most{0};
  const auto caller = std::this_thread::get_id();
  for (int rep = 0; rep < 300; ++rep) {
    std::atomic<int> calls_marked{0};
    parallel_tasks(4, 4, [&](std::size_t) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      if (std::this_thread::get_id() == caller) return;
      thread_local int last_rep = -1;
      if (last_rep != rep) {
        last_rep = rep;
        const int seen = ++t_calls_seen;
        int m = most.load();
        while (seen > m && !most.compare_exchange_weak(m, seen)) {
        }
      }
      ++calls_marked;
    });
  }
  EXPECT_GT(most.load(), 1);
}

TEST(Parallel, DefaultThreadsIsTheMachinesCores) {
  const unsigned hw = std::thread::hardware_concurrency();
  EXPECT_EQ(default_threads(), hw == 0 ? 1 : std::min<int>(static_cast<int>(hw), kMaxThreads));
  EXPECT_GE(default_threads(), 1);
}

}  // namespace
}  // namespace dpstats
