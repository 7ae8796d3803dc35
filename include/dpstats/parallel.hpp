// Runs independent tasks 0..count-1 on up to `threads` threads (the caller's among them). Tasks
// are handed out in order from a shared counter, so which thread runs a task never matters: a
// task must depend on its index alone (its own generator, its own output range). The first
// exception a task throws is rethrown on the caller's thread after every thread has stopped.
#pragma once
#include <algorithm>
#include <atomic>
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

}  // namespace dpstats
