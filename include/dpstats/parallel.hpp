// The one parallel helper of the library (every data pass uses it, so a worker's exception always
// reaches the caller).
//
// Runs independent tasks 0..count-1 on up to `threads` threads (the caller's among them). Tasks
// are handed out in order from a shared counter, so which thread runs a task never matters: a
// task must depend on its index alone (its own generator, its own output range). The first
// exception a task throws is rethrown on the caller's thread after every thread has stopped.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace dpstats {

template <class Task>
void parallel_tasks(std::size_t count, int threads, Task&& task) {
  const auto used = std::min<std::size_t>(count, static_cast<std::size_t>(std::max(threads, 1)));
  if (used <= 1) {
    for (std::size_t i = 0; i < count; ++i) task(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < count;) {
      try {
        task(i);
      } catch (...) {
        const std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(count);  // no new tasks
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < used; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

// Runs f(part, begin, end) over [0, count) cut into contiguous ranges of at least `min_grain`
// items, one range per thread (at most `threads`): part p covers [count·p/P, count·(p+1)/P). The
// cut depends on (count, threads, min_grain) only, so per-part results merged in part order are
// deterministic. Exceptions propagate as in parallel_tasks.
template <class F>
void parallel_ranges(std::int64_t count, int threads, std::int64_t min_grain, F&& f) {
  const std::int64_t by_grain = std::max<std::int64_t>(1, count / std::max<std::int64_t>(min_grain, 1));
  const auto parts = static_cast<std::int64_t>(std::clamp<std::int64_t>(threads, 1, by_grain));
  parallel_tasks(static_cast<std::size_t>(parts), static_cast<int>(parts), [&](std::size_t p) {
    const auto q = static_cast<std::int64_t>(p);
    f(static_cast<int>(q), count * q / parts, count * (q + 1) / parts);
  });
}

}  // namespace dpstats
