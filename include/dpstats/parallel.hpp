// The one parallel helper of the library (every data pass uses it, so a worker's exception always
// reaches the caller).
//
// Runs independent tasks 0..count-1 on up to `threads` threads (the caller's among them). Tasks
// are handed out in order from a shared counter, so which thread runs a task never matters: a
// task must depend on its index alone (its own generator, its own output range). The first
// exception a task throws is rethrown on the caller's thread after every thread has stopped.
//
// The helper threads come from one process-wide pool (started on first use, grown to the largest
// `threads` asked for, never above kMaxThreads − 1 helpers), not from threads spawned per call.
// The caller always works too and can finish every task alone: a helper that is busy elsewhere
// (another caller's job) is simply not waited for. A call made from inside a task (nested
// parallelism) runs its tasks inline on that thread, so nesting never deadlocks and never
// oversubscribes.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstddef>
#include <exception>
#include <mutex>

namespace dpstats {

inline constexpr int kMaxThreads = 1024;

// The machine's hardware threads (std::thread::hardware_concurrency()), clamped to
// [1, kMaxThreads]: the default thread count of every capability.
int default_threads();

namespace detail {

// True on a thread that is running a task of parallel_tasks (a pool helper or a caller).
bool in_parallel_region();

// Runs work(ctx) on the calling thread and on up to `helpers` pool threads at once; returns once
// every started copy has returned (copies not started by then are withdrawn). `work` must return
// when there is nothing left to do, and must not throw.
void run_on_pool(int helpers, void (*work)(void*), void* ctx);

}  // namespace detail

template <class Task>
void parallel_tasks(std::size_t count, int threads, Task&& task) {
  const auto used = std::min<std::size_t>(count, static_cast<std::size_t>(std::max(threads, 1)));
  if (used <= 1 || detail::in_parallel_region()) {
    for (std::size_t i = 0; i < count; ++i) task(i);
    return;
  }
  struct Job {
    Job(Task& t, std::size_t c) : task(t), count(c) {}
    Task& task;
    std::size_t count;
    std::atomic<std::size_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
  } job(task, count);
  auto work = [](void* p) {
    auto& j = *static_cast<Job*>(p);
    for (std::size_t i; (i = j.next.fetch_add(1)) < j.count;) {
      try {
        j.task(i);
      } catch (...) {
        const std::lock_guard lock(j.error_mutex);
        if (!j.error) j.error = std::current_exception();
        j.next.store(j.count);  // no new tasks
      }
    }
  };
  detail::run_on_pool(static_cast<int>(std::min<std::size_t>(used - 1, kMaxThreads - 1)), work,
                      &job);
  if (job.error) std::rethrow_exception(job.error);
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
