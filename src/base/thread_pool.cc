// SPDX-License-Identifier: Apache-2.0
#include "base/thread_pool.h"

#include "base/check.h"

namespace synapse {
namespace {

// About 10-50 microseconds of spinning depending on the CPU's pause latency.
constexpr int kSpinIterations = 1 << 13;

inline void cpu_relax() { __builtin_ia32_pause(); }

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  SYN_CHECK(n_threads >= 1, "a thread pool needs at least one thread");
  workers_.reserve(static_cast<size_t>(n_threads - 1));
  for (int t = 1; t < n_threads; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  epoch_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::run_tasks(int thread) {
  while (true) {
    const size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= job_tasks_) break;
    job_invoke_(job_ctx_, task, thread);
  }
}

void ThreadPool::run(size_t n_tasks, void* ctx, Invoke invoke) {
  if (n_tasks == 0) return;
  if (workers_.empty() || n_tasks == 1) {
    for (size_t task = 0; task < n_tasks; ++task) invoke(ctx, task, 0);
    return;
  }
  SYN_CHECK(!in_job_.exchange(true, std::memory_order_acquire),
            "ThreadPool::parallel_for is not reentrant");
  job_ctx_ = ctx;
  job_invoke_ = invoke;
  job_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  workers_busy_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_release);  // publishes the job
  epoch_.notify_all();

  run_tasks(0);

  for (int spin = 0; workers_busy_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kSpinIterations) {
      cpu_relax();
    } else {
      const int busy = workers_busy_.load(std::memory_order_acquire);
      if (busy != 0) workers_busy_.wait(busy, std::memory_order_acquire);
    }
  }
  in_job_.store(false, std::memory_order_release);
}

void ThreadPool::worker_loop(int thread) {
  // Jobs start only after the constructor returns, when the epoch is still 0. Reading the epoch
  // here instead could miss a job published before this thread got scheduled.
  uint32_t seen = 0;
  while (true) {
    int spin = 0;
    uint32_t now = epoch_.load(std::memory_order_acquire);
    while (now == seen) {
      if (spin++ < kSpinIterations) {
        cpu_relax();
      } else {
        epoch_.wait(seen, std::memory_order_acquire);
      }
      now = epoch_.load(std::memory_order_acquire);
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    run_tasks(thread);
    if (workers_busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) workers_busy_.notify_one();
  }
}

}  // namespace synapse
