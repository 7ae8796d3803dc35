// The process-wide thread pool behind parallel_tasks (parallel.hpp).
//
// A caller posts `helpers` tickets for its job, runs the job itself, then withdraws the tickets no
// helper has taken and waits only for the helpers that took one. So a caller never waits for a
// helper that is busy with another caller's job (several callers, e.g. ranks run as threads, share
// the pool without deadlock), and a process forked while helpers existed (where they are gone)
// still finishes every job on the caller's thread; the child starts a fresh pool on next use.
#include "dpstats/parallel.hpp"

#include <pthread.h>

#include <condition_variable>
#include <deque>
#include <thread>

namespace dpstats {

int default_threads() {
  const unsigned hw = std::thread::hardware_concurrency();  // 0 when unknown
  return static_cast<int>(std::clamp<unsigned>(hw, 1, static_cast<unsigned>(kMaxThreads)));
}

namespace detail {
namespace {

thread_local bool t_in_region = false;

// Marks the thread as inside a parallel region while it runs a job (restored afterwards).
void run_marked(void (*work)(void*), void* ctx) {
  const bool was = t_in_region;
  t_in_region = true;
  work(ctx);
  t_in_region = was;
}

class Pool {
 public:
  void run(int helpers, void (*work)(void*), void* ctx) {
    Group group;
    {
      const std::lock_guard lock(mutex_);
      grow(helpers);
      for (int k = 0; k < helpers; ++k) queue_.push_back({work, ctx, &group});
    }
    if (helpers == 1) {
      wake_.notify_one();
    } else {
      wake_.notify_all();
    }
    run_marked(work, ctx);
    std::unique_lock lock(mutex_);
    std::erase_if(queue_, [&](const Ticket& t) { return t.group == &group; });
    done_.wait(lock, [&] { return group.running == 0; });
  }

 private:
  struct Group {
    int running = 0;  // helpers inside this job (guarded by mutex_)
  };
  struct Ticket {
    void (*work)(void*);
    void* ctx;
    Group* group;
  };

  void grow(int helpers) {
    for (; started_ < helpers; ++started_) std::thread([this] { loop(); }).detach();
  }

  void loop() {
    t_in_region = true;
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return !queue_.empty(); });
      const Ticket t = queue_.front();
      queue_.pop_front();
      ++t.group->running;
      lock.unlock();
      t.work(t.ctx);
      lock.lock();
      if (--t.group->running == 0) done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<Ticket> queue_;
  int started_ = 0;  // helper threads (they live until the process ends)
};

std::atomic<Pool*> g_pool{nullptr};

// After fork() the child has none of the parent's helpers: it starts a new pool (the old one,
// whose state may be mid-update, is abandoned).
void forget_pool_in_child() { g_pool.store(nullptr); }

Pool& pool() {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p != nullptr) return *p;
  static const int registered = pthread_atfork(nullptr, nullptr, forget_pool_in_child);
  (void)registered;
  auto* fresh = new Pool;  // never deleted: helpers may still wait on it at exit
  if (g_pool.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;
  return *p;
}

}  // namespace

bool in_parallel_region() { return t_in_region; }

void run_on_pool(int helpers, void (*work)(void*), void* ctx) {
  if (helpers <= 0) return run_marked(work, ctx);
  pool().run(helpers, work, ctx);
}

}  // namespace detail
}  // namespace dpstats
