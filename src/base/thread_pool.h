// SPDX-License-Identifier: Apache-2.0
// A fork-join pool for intra-op parallelism (one matrix product split over output rows). It is
// passed explicitly to whatever needs it; there is no global pool. Workers spin briefly between
// jobs, because a decode step issues hundreds of short jobs and a futex wake costs more than the
// job; after the spin they sleep, so an idle pool costs nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace synapse {

class ThreadPool {
 public:
  // `n_threads` counts the calling thread: a pool of 1 runs everything inline.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(task, thread) for every task in [0, n_tasks) on all threads, the caller included, and
  // returns when all have finished. thread is in [0, size()). One job at a time: calling it from
  // inside a task, or from two threads at once, is a programmer error.
  template <typename Fn>
  void parallel_for(size_t n_tasks, Fn&& fn) {
    run(n_tasks, &fn, [](void* ctx, size_t task, int thread) {
      (*static_cast<std::remove_reference_t<Fn>*>(ctx))(task, thread);
    });
  }

 private:
  using Invoke = void (*)(void* ctx, size_t task, int thread);
  void run(size_t n_tasks, void* ctx, Invoke invoke);
  void worker_loop(int thread);
  void run_tasks(int thread);

  std::vector<std::thread> workers_;
  // Job description, written by the caller before `epoch_` is bumped.
  void* job_ctx_ = nullptr;
  Invoke job_invoke_ = nullptr;
  size_t job_tasks_ = 0;
  std::atomic<size_t> next_task_{0};
  std::atomic<size_t> tasks_done_{0};
  // Odd while a job is open to workers, even while it is closed (between jobs). A job completes
  // when its tasks are done, not when every worker has seen it: a worker the OS has not
  // scheduled yet (a busy machine) must not hold up the caller, which then runs the tasks itself.
  std::atomic<uint32_t> epoch_{0};
  std::atomic<int> active_{0};  // workers inside the open job (reading its description)
  std::atomic<bool> in_job_{false};
  std::atomic<bool> stop_{false};
};

}  // namespace synapse
