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
  stop_.store(true);
  epoch_.fetch_add(2);
  epoch_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::run_tasks(int thread) {
  const size_t total = job_tasks_;
  size_t done = 0;
  while (true) {
    const size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= total) break;
    job_invoke_(job_ctx_, task, thread);
    ++done;
  }
  if (done != 0 && tasks_done_.fetch_add(done, std::memory_order_acq_rel) + done == total) {
    tasks_done_.notify_one();
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
  // Close the previous job and wait for workers still inside it (they find no task left and
  // leave at once) before its description is overwritten. Sequentially consistent with the
  // workers' enter-then-recheck: either a worker sees the closed epoch or we see it active.
  // Only this thread (and the destructor) changes the epoch.
  if ((epoch_.load() & 1u) != 0) epoch_.fetch_add(1);
  while (active_.load() != 0) cpu_relax();
  job_ctx_ = ctx;
  job_invoke_ = invoke;
  job_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  tasks_done_.store(0, std::memory_order_relaxed);
  epoch_.fetch_add(1);  // opens the job
  epoch_.notify_all();
  run_tasks(0);
  for (int spin = 0;; ++spin) {
    const size_t done = tasks_done_.load(std::memory_order_acquire);
    if (done == n_tasks) break;
    if (spin < kSpinIterations) {
      cpu_relax();
    } else {
      tasks_done_.wait(done, std::memory_order_acquire);
    }
  }
  in_job_.store(false, std::memory_order_release);
}

void ThreadPool::worker_loop(int thread) {
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
    if (stop_.load()) return;
    if ((now & 1u) == 0) continue;  // closed: wait for the next job
    active_.fetch_add(1);
    if (epoch_.load() == now) run_tasks(thread);
    active_.fetch_sub(1);
  }
}

}  // namespace synapse
