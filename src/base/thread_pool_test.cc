// SPDX-License-Identifier: Apache-2.0
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <vector>

namespace synapse {
namespace {

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (size_t n : {0u, 1u, 2u, 7u, 1000u}) {
      std::vector<std::atomic<int>> runs(n);
      pool.parallel_for(n, [&](size_t task, int thread) {
        EXPECT_GE(thread, 0);
        EXPECT_LT(thread, threads);
        runs[task].fetch_add(1);
      });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(runs[i].load(), 1) << "task " << i;
    }
  }
}

TEST(ThreadPool, ManyShortJobsInARow) {
  // Decode issues hundreds of small jobs per token; the pool must not lose or repeat any.
  ThreadPool pool(4);
  std::vector<int64_t> partial(4);
  int64_t total = 0;
  for (int job = 0; job < 2000; ++job) {
    std::fill(partial.begin(), partial.end(), 0);
    pool.parallel_for(64, [&](size_t task, int thread) {
      partial[static_cast<size_t>(thread)] += static_cast<int64_t>(task);
    });
    total += std::accumulate(partial.begin(), partial.end(), int64_t{0});
  }
  EXPECT_EQ(total, int64_t{2000} * (63 * 64 / 2));
}

TEST(ThreadPool, UsesMoreThanOneThreadForLongTasks) {
  ThreadPool pool(2);
  std::atomic<int> seen_mask{0};
  // Not guaranteed by the contract (the caller runs tasks a late worker has not taken, so a busy
  // machine may leave a job to the caller alone), but over a few jobs of long tasks both take some.
  for (int job = 0; job < 50 && seen_mask.load() != 3; ++job) {
    pool.parallel_for(64, [&](size_t, int thread) {
      seen_mask.fetch_or(1 << thread);
      volatile double sink = 0;
      for (int i = 0; i < 20000; ++i) sink = sink + i;
    });
  }
  EXPECT_EQ(seen_mask.load(), 3);
}

}  // namespace
}  // namespace synapse
