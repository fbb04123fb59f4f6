// SPDX-License-Identifier: Apache-2.0
// JobWorker without a model: items run through a fake ItemCall, so the tests see exactly how the
// worker drives it (a page's items at the same time, queue_full retried, cancel and stop noticed
// while items run) and how it treats the executor lock (one executing worker per database, the
// next takes over; leases of a dead executor reclaimed at once).
#include "request/job_worker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "jobs/sqlite_job_store.h"
#include "tests/support/test_support.h"

namespace synapse::request {
namespace {

using namespace std::chrono_literals;

jobs::Submission submission(int items) {
  jobs::Submission s;
  for (int i = 0; i < items; ++i) {
    s.requests.push_back({.custom_id = "item-" + std::to_string(i),
                          .url = "/v1/completions",
                          .body = R"({"prompt":"p)" + std::to_string(i) + R"("})"});
  }
  return s;
}

// Waits up to `limit` for `done`.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

class JobWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = jobs::SqliteJobStore::open(dir_.file("jobs.db"));
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    store_ = std::move(*store);
  }

  std::unique_ptr<JobWorker> worker(ItemCall call, size_t workers = 1,
                                    std::chrono::milliseconds cancel_check = 250ms) {
    JobWorkerOptions options;
    options.cancel_check = cancel_check;
    options.lock_path = dir_.file("jobs.db.executor-lock");
    options.workers = workers;
    options.poll = 20ms;
    options.queue_full_backoff = 5ms;
    options.unavailable_backoff = 5ms;
    options.unavailable_patience = unavailable_patience_;
    return std::make_unique<JobWorker>(*store_, std::move(call), options);
  }

  std::string submit(int items) { return store_->submit(submission(items), std::nullopt)->job.id; }
  jobs::JobState state(const std::string& id) { return store_->get_job(id)->state; }

  // Five refusals with `code`, then success: one recorded outcome (the success) and one
  // hand-out, the refusals cost nothing.
  void expect_refusals_cost_no_attempt(ErrorCode code) {
    std::atomic<int> refusals{0};
    auto w = worker([&](std::string_view, std::string_view, serve::RequestClass,
                        const std::function<bool()>&) -> Result<std::string> {
      if (refusals.fetch_add(1) < 5) return Status(code, "not now");
      return std::string(R"({"ok":true})");
    });
    const std::string id = submit(1);
    ASSERT_TRUE(w->start().ok());
    ASSERT_TRUE(eventually([&] { return state(id) == jobs::JobState::kCompleted; }));
    EXPECT_EQ(store_->get_job(id)->counts.succeeded, 1);
    const jobs::ItemInfo item = store_->items(id)->at(0);
    EXPECT_EQ(item.attempts, 1);
    EXPECT_EQ(item.executed_count, 1);
  }

  testing::TempDir dir_;
  std::unique_ptr<jobs::SqliteJobStore> store_;
  std::chrono::milliseconds unavailable_patience_{10min};
};

// Echoes the body; counts the calls running at once. A call stays until `together` calls have
// been running at once (or 2 s pass), so the count does not hang on how fast threads start: a
// fixed sleep let the first item of a page finish before the last began under ThreadSanitizer.
// A worker that runs items one at a time still fails, only more slowly.
struct EchoCall {
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  int together = 1;
  ItemCall call() {
    return [this](std::string_view, std::string_view body, serve::RequestClass,
                  const std::function<bool()>&) -> Result<std::string> {
      const int now = ++running;
      for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
      }
      const auto deadline = std::chrono::steady_clock::now() + 2s;
      while (most.load() < together && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(1ms);
      }
      std::this_thread::sleep_for(30ms);
      --running;
      return R"({"echo":)" + std::string(body) + "}";
    };
  }
};

TEST_F(JobWorkerTest, RunsAPagesItemsTogetherAndCommitsEveryResult) {
  EchoCall echo;
  echo.together = 16;
  auto w = worker(echo.call());
  const std::string id = submit(20);
  ASSERT_TRUE(w->start().ok());
  ASSERT_TRUE(eventually([&] { return state(id) == jobs::JobState::kCompleted; }));
  EXPECT_EQ(store_->get_job(id)->counts.succeeded, 20);
  EXPECT_EQ(echo.most.load(), 16);  // a page of 16 at once
  const std::string first = store_->result_page(id, 0)->jsonl;
  EXPECT_NE(first.find(R"({"custom_id":"item-0","response":{"echo":{"prompt":"p0"}}})"),
            std::string::npos)
      << first;
}

// /metrics: the executors' work, labelled by node (the nodes of a shared store are told apart).
TEST_F(JobWorkerTest, MetricsCountTheWorkLabelledByNode) {
  EchoCall echo;
  JobWorkerOptions options;
  options.lock_path = dir_.file("jobs.db.executor-lock");
  options.workers = 1;
  options.poll = 20ms;
  options.node = "host-a:42";
  JobWorker w(*store_, echo.call(), options);
  EXPECT_EQ(w.node(), "host-a:42");
  const std::string id = submit(20);
  ASSERT_TRUE(w.start().ok());
  ASSERT_TRUE(eventually([&] { return state(id) == jobs::JobState::kCompleted; }));
  // The lease is counted once run_one_job returns, a moment after the job completed.
  ASSERT_TRUE(eventually([&] {
    return w.render_prometheus().find(
               R"(synapse_jobs_leases_total{node="host-a:42",result="completed"} 1)") !=
           std::string::npos;
  }));
  const std::string text = w.render_prometheus();
  EXPECT_NE(text.find(R"(synapse_jobs_items_committed_total{node="host-a:42"} 20)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(synapse_jobs_pages_committed_total{node="host-a:42"} 2)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(synapse_jobs_pages_running{node="host-a:42"} 0)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE synapse_jobs_leases_total counter"), std::string::npos) << text;
  // The executors are named after the node too.
  EXPECT_NE(store_->events(id)->at(1).detail.find("synapse-serve/host-a:42/worker-0"),
            std::string::npos);
}

TEST_F(JobWorkerTest, QueueFullIsRetriedWithoutSpendingAnAttempt) {
  expect_refusals_cost_no_attempt(ErrorCode::kQueueFull);
}

// A model that is unavailable for a while (its worker process restarting or cooling down after
// a crash loop) is waited for without spending attempts, as a full queue is ...
TEST_F(JobWorkerTest, UnavailableModelIsWaitedForWithoutSpendingAnAttempt) {
  expect_refusals_cost_no_attempt(ErrorCode::kUnavailable);
}

// ... up to its patience: then the refusal is a failed attempt like any transient error.
TEST_F(JobWorkerTest, UnavailablePastThePatienceSpendsAnAttempt) {
  unavailable_patience_ = 20ms;
  std::atomic<int> calls{0};
  auto w = worker([&](std::string_view, std::string_view, serve::RequestClass,
                      const std::function<bool()>&) -> Result<std::string> {
    ++calls;
    return Status(ErrorCode::kUnavailable, "cooling down");
  });
  const std::string id = submit(1);
  ASSERT_TRUE(w->start().ok());
  ASSERT_TRUE(eventually([&] {
    const std::vector<jobs::ItemInfo> items = *store_->items(id);
    return !items.empty() && items[0].attempts >= 1;
  }));
  const jobs::ItemInfo item = store_->items(id)->at(0);
  EXPECT_EQ(item.last_error, ErrorCode::kUnavailable);
  EXPECT_GE(calls.load(), 2);  // it waited before giving up
}

// Calls that run until they are told to stop, as a long generation does.
ItemCall until_cancelled(std::atomic<int>& started) {
  return [&started](std::string_view, std::string_view, serve::RequestClass,
                    const std::function<bool()>& cancelled) -> Result<std::string> {
    ++started;
    while (!cancelled()) std::this_thread::sleep_for(5ms);
    return Status(ErrorCode::kCancelled, "cancelled");
  };
}

// A cancel made elsewhere (another node, `synapse jobs cancel`: straight on the store) is seen at
// the executor's next look at the job, every cancel_check (250 ms).
TEST_F(JobWorkerTest, ACancelMadeElsewhereStopsTheRunningItemsWithinHalfASecond) {
  std::atomic<int> started{0};
  auto w = worker(until_cancelled(started));
  const std::string id = submit(4);
  ASSERT_TRUE(w->start().ok());
  ASSERT_TRUE(eventually([&] { return started.load() == 4; }));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(store_->cancel(id).ok());
  EXPECT_EQ(state(id), jobs::JobState::kCancelled);
  // The only worker notices, cancels its calls and returns to the queue: a new job starts.
  const std::string next = submit(1);
  EXPECT_TRUE(eventually([&] { return started.load() == 5; }, 5s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 600ms);
  EXPECT_EQ(store_->get_job(id)->page_count, 0);
  w->stop();
  EXPECT_EQ(state(next), jobs::JobState::kQueued);  // given back, not left leased
}

// A cancel made through this server (the HTTP routes' store tells the worker) ends the calls in
// flight at once, not at the executor's next look at the job (every second): the engine
// requests of a cancelled job do not go on running.
TEST_F(JobWorkerTest, ACancelThroughTheServerStopsTheCallsInFlightAtOnce) {
  std::atomic<int> started{0};
  std::atomic<int> mine_started{0};
  std::atomic<int> running{0};
  auto w = worker(
      [&](std::string_view, std::string_view body, serve::RequestClass,
          const std::function<bool()>& cancelled) -> Result<std::string> {
        ++started;
        const bool mine = body.find("other") == std::string_view::npos;  // the cancelled job's
        if (mine) {
          ++running;
          ++mine_started;
        }
        while (!cancelled()) std::this_thread::sleep_for(1ms);
        if (mine) --running;
        return Status(ErrorCode::kCancelled, "cancelled");
      },
      1, 60s);  // the executor would not look at the job's state for a minute
  const std::string id = submit(16);
  // Queued behind it: a cancel of another job stops nothing.
  jobs::Submission queued;
  queued.requests.push_back(
      {.custom_id = "other", .url = "/v1/completions", .body = R"({"prompt":"other"})"});
  const std::string other = store_->submit(queued, std::nullopt)->job.id;
  ASSERT_TRUE(w->start().ok());
  ASSERT_TRUE(eventually([&] { return running.load() == 16; }));
  w->job_cancelled(other);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(running.load(), 16);
  ASSERT_TRUE(store_->cancel(id).ok());
  const auto t0 = std::chrono::steady_clock::now();
  w->job_cancelled(id);
  ASSERT_TRUE(eventually([&] { return running.load() == 0; }));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 300ms);
  EXPECT_EQ(mine_started.load(), 16);                             // none of its items started again
  EXPECT_TRUE(eventually([&] { return started.load() == 17; }));  // the worker went on
  w->stop();
  EXPECT_EQ(store_->get_job(id)->page_count, 0);
}

TEST_F(JobWorkerTest, StopGivesTheJobBackWithNothingCommitted) {
  std::atomic<int> started{0};
  auto w = worker(until_cancelled(started));
  const std::string id = submit(3);
  ASSERT_TRUE(w->start().ok());
  ASSERT_TRUE(eventually([&] { return started.load() == 3; }));
  w->stop();
  const jobs::JobInfo job = *store_->get_job(id);
  EXPECT_EQ(job.state, jobs::JobState::kQueued);
  EXPECT_EQ(job.page_count, 0);
  EXPECT_FALSE(job.lease_owner.has_value());
}

TEST_F(JobWorkerTest, OneExecutingWorkerPerDatabaseTheNextTakesOver) {
  EchoCall echo;
  auto first = worker(echo.call());
  auto second = worker(echo.call());
  ASSERT_TRUE(first->start().ok());
  ASSERT_TRUE(eventually([&] { return first->executing(); }));
  ASSERT_TRUE(second->start().ok());
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(second->executing());
  first->stop();
  EXPECT_TRUE(eventually([&] { return second->executing(); }));
  const std::string id = submit(2);
  EXPECT_TRUE(eventually([&] { return state(id) == jobs::JobState::kCompleted; }));
}

TEST_F(JobWorkerTest, LeasesOfADeadServerAreReclaimedAtOnce) {
  const std::string id = submit(2);
  // A server that died holding a lease for another minute.
  auto lease = store_->acquire(JobWorker::owner_prefix() + "host:1/worker-0", 60'000);
  ASSERT_TRUE(lease.ok() && lease->has_value());
  EchoCall echo;
  auto w = worker(echo.call());
  ASSERT_TRUE(w->start().ok());
  EXPECT_TRUE(eventually([&] { return state(id) == jobs::JobState::kCompleted; }, 5s));
  EXPECT_EQ(store_->get_job(id)->lease_epoch, (*lease)->epoch + 1);
}

}  // namespace
}  // namespace synapse::request
