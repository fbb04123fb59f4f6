// SPDX-License-Identifier: Apache-2.0
// The JobStore contract (job_store.h), one suite run against both backends: SQLite (a file in a
// temporary directory) and PostgreSQL (a fresh database on a throwaway server; skipped when the
// server binaries are missing, a failure under CI=true).
#include "jobs/job_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <numeric>
#include <string>
#include <thread>

#include "jobs/job_executor.h"
#include "jobs/job_store_testing.h"
#include "jobs/submission.h"
#include "tests/support/test_support.h"

namespace synapse::jobs {
namespace {

Submission make_submission(int items, std::string_view tag = "p",
                           JobClass job_class = JobClass::kBatch) {
  Submission submission;
  submission.job_class = job_class;
  for (int i = 0; i < items; ++i) {
    submission.requests.push_back(
        JobRequest{.custom_id = "req-" + std::to_string(i),
                   .url = "/v1/completions",
                   .body = R"({"prompt":")" + std::string(tag) + std::to_string(i) + R"("})"});
  }
  return submission;
}

std::string response_for(const WorkItem& item) {
  return R"({"text":"echo )" + std::to_string(item.index) + R"("})";
}

std::vector<ItemOutcome> succeed_all(const NextItems& next) {
  std::vector<ItemOutcome> outcomes;
  for (const WorkItem& item : next.items) {
    outcomes.push_back(ItemOutcome::success(item.index, response_for(item)));
  }
  return outcomes;
}

class JobStoreTest : public ::testing::TestWithParam<StoreBackend> {
 protected:
  void SetUp() override {
    SYN_TEST_STORE(location, GetParam());
    location_ = std::move(location);
    store_ = open_store();
  }

  std::unique_ptr<JobStore> open_store(TestStoreOptions options = {}) {
    options.clock = [this] { return now_ms_.load(); };
    Result<std::unique_ptr<JobStore>> store = location_->open(std::move(options));
    EXPECT_TRUE(store.ok()) << store.status().to_string();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  std::string submit(int items, std::string_view tag = "p") {
    Result<SubmitResult> submitted = store_->submit(make_submission(items, tag), std::nullopt);
    EXPECT_TRUE(submitted.ok()) << submitted.status().to_string();
    return submitted.ok() ? submitted->job.id : "";
  }

  Lease acquire(std::string_view owner = "exec-a", int64_t lease_ms = 1000) {
    Result<std::optional<Lease>> lease = store_->acquire(owner, lease_ms);
    EXPECT_TRUE(lease.ok()) << lease.status().to_string();
    EXPECT_TRUE(lease.ok() && lease->has_value());
    return lease.ok() && lease->has_value() ? **lease : Lease{};
  }

  std::unique_ptr<TestStore> location_;
  std::atomic<int64_t> now_ms_{1'000'000};
  std::unique_ptr<JobStore> store_;
};

INSTANTIATE_TEST_SUITE_P(Backends, JobStoreTest,
                         ::testing::Values(StoreBackend::kSqlite, StoreBackend::kPostgres),
                         store_backend_name);

TEST_P(JobStoreTest, SameIdempotencyKeyReturnsTheSameJob) {
  Result<SubmitResult> first = store_->submit(make_submission(3), "key-1");
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_TRUE(first->created);
  EXPECT_EQ(first->job.state, JobState::kQueued);
  EXPECT_EQ(first->job.counts.total, 3);
  Result<SubmitResult> again = store_->submit(make_submission(3), "key-1");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->job.id, first->job.id);
  // The same key with another request is a conflict, never a second job.
  EXPECT_EQ(store_->submit(make_submission(4), "key-1").status().code(),
            ErrorCode::kIdempotencyConflict);
  // A different key is a different job, even for the same request.
  Result<SubmitResult> other = store_->submit(make_submission(3), "key-2");
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->created);
  EXPECT_NE(other->job.id, first->job.id);
}

TEST_P(JobStoreTest, SameDigestWithoutKeyReturnsTheSameJob) {
  Result<SubmitResult> first = store_->submit(make_submission(2, "a"), std::nullopt);
  Result<SubmitResult> again = store_->submit(make_submission(2, "a"), std::nullopt);
  Result<SubmitResult> different = store_->submit(make_submission(2, "b"), std::nullopt);
  ASSERT_TRUE(first.ok() && again.ok() && different.ok());
  EXPECT_EQ(again->job.id, first->job.id);
  EXPECT_FALSE(again->created);
  EXPECT_NE(different->job.id, first->job.id);
  EXPECT_TRUE(different->created);
  Result<std::vector<JobInfo>> all = store_->list_jobs({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
}

TEST_P(JobStoreTest, ConcurrentSubmitsMakeOneJob) {
  // Two connections (as two processes would have) race the same keyless submission.
  std::unique_ptr<JobStore> second = open_store();
  ASSERT_NE(second, nullptr);
  std::vector<std::string> ids(16);
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      JobStore& store = t % 2 == 0 ? *store_ : *second;
      Result<SubmitResult> result = store.submit(make_submission(20, "race"), std::nullopt);
      if (result.ok()) ids[static_cast<size_t>(t)] = result->job.id;
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& id : ids) EXPECT_EQ(id, ids[0]);
  EXPECT_EQ(store_->list_jobs({})->size(), 1u);
}

// 16 submitters, each with its own connection (as 16 processes or nodes would have), send the
// same request with the same Idempotency-Key at once: one job, and every submitter gets it.
TEST_P(JobStoreTest, SixteenSubmittersWithOneKeyMakeOneJob) {
  constexpr int kSubmitters = 16;
  std::vector<std::unique_ptr<JobStore>> stores;
  for (int t = 0; t < kSubmitters; ++t) {
    stores.push_back(open_store());
    ASSERT_NE(stores.back(), nullptr);
  }
  std::vector<std::string> ids(kSubmitters);
  std::vector<int> created(kSubmitters, 0);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kSubmitters; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kSubmitters) std::this_thread::yield();
      Result<SubmitResult> result =
          stores[static_cast<size_t>(t)]->submit(make_submission(50, "same"), "one-key");
      EXPECT_TRUE(result.ok()) << result.status().to_string();
      if (result.ok()) {
        ids[static_cast<size_t>(t)] = result->job.id;
        created[static_cast<size_t>(t)] = result->created ? 1 : 0;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& id : ids) EXPECT_EQ(id, ids[0]);
  EXPECT_EQ(std::accumulate(created.begin(), created.end(), 0), 1);
  Result<std::vector<JobInfo>> all = store_->list_jobs({});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].counts.total, 50);
  EXPECT_EQ(store_->items(ids[0])->size(), 50u);
}

TEST_P(JobStoreTest, RunsAJobThroughPagesAndCompletes) {
  const std::string id = submit(5);
  Lease lease = acquire();
  EXPECT_EQ(lease.job_id, id);
  EXPECT_EQ(lease.epoch, 1);
  Result<NextItems> next = store_->next_items(lease, 3);
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->items.size(), 3u);
  EXPECT_EQ(next->items[0].index, 0);
  EXPECT_EQ(next->items[0].custom_id, "req-0");
  Result<CommitResult> committed = store_->commit_page(lease, succeed_all(*next));
  ASSERT_TRUE(committed.ok()) << committed.status().to_string();
  EXPECT_EQ(committed->pages, std::vector<int64_t>{0});
  EXPECT_EQ(committed->pending_items, 2);
  // Readable while running, with no next page yet.
  Result<ResultPage> page = store_->result_page(id, 0);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->jsonl, R"({"custom_id":"req-0","response":{"text":"echo 0"}})"
                         "\n"
                         R"({"custom_id":"req-1","response":{"text":"echo 1"}})"
                         "\n"
                         R"({"custom_id":"req-2","response":{"text":"echo 2"}})"
                         "\n");
  EXPECT_FALSE(page->next_page.has_value());
  EXPECT_EQ(store_->complete(lease).code(), ErrorCode::kJobNotFinished);

  next = store_->next_items(lease, 10);
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->items.size(), 2u);
  EXPECT_EQ(next->items[0].index, 3);
  std::vector<ItemOutcome> outcomes = {
      ItemOutcome::success(3, R"({"text":"three"})"),
      ItemOutcome::failure(4, ErrorCode::kInvalidArgument, "prompt too long")};
  ASSERT_TRUE(store_->commit_page(lease, outcomes).ok());
  ASSERT_TRUE(store_->complete(lease).ok());

  Result<JobInfo> job = store_->get_job(id);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state, JobState::kCompleted);
  EXPECT_EQ(job->counts.succeeded, 4);
  EXPECT_EQ(job->counts.failed, 1);
  EXPECT_EQ(job->page_count, 2);
  page = store_->result_page(id, 0);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->next_page, 1);
  page = store_->result_page(id, 1);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->jsonl, R"({"custom_id":"req-3","response":{"text":"three"}})"
                         "\n"
                         R"({"custom_id":"req-4","error":{"code":"invalid_argument",)"
                         R"("message":"prompt too long"}})"
                         "\n");
  EXPECT_EQ(store_->result_page(id, 2).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(store_->get_job("job_nope").status().code(), ErrorCode::kJobNotFound);
  EXPECT_EQ(store_->result_page("job_nope", 0).status().code(), ErrorCode::kJobNotFound);
  EXPECT_FALSE(store_->acquire("exec-b", 1000)->has_value());
}

TEST_P(JobStoreTest, PagesAreBoundedByBytes) {
  store_.reset();
  store_ = open_store({.max_page_bytes = 120});
  const std::string id = submit(5);
  Lease lease = acquire();
  Result<NextItems> next = store_->next_items(lease, 5);
  ASSERT_TRUE(next.ok());
  Result<CommitResult> committed = store_->commit_page(lease, succeed_all(*next));
  ASSERT_TRUE(committed.ok());
  // Each line is ~55 bytes: two fit a page of 120.
  EXPECT_EQ(committed->pages, (std::vector<int64_t>{0, 1, 2}));
  int64_t next_item = 0;
  for (int64_t p : committed->pages) {
    Result<ResultPage> page = store_->result_page(id, p);
    ASSERT_TRUE(page.ok());
    EXPECT_LE(page->jsonl.size(), 120u);
    EXPECT_EQ(page->first_item, next_item);
    next_item = page->last_item + 1;
  }
  EXPECT_EQ(next_item, 5);
}

TEST_P(JobStoreTest, StaleEpochCannotWriteAfterTakeover) {
  submit(4);
  Lease first = acquire("exec-a", 1000);
  Result<NextItems> next = store_->next_items(first, 2);
  ASSERT_TRUE(next.ok());
  // exec-a hangs past its lease; exec-b recovers the job with a new epoch.
  EXPECT_FALSE(store_->acquire("exec-b", 1000)->has_value());  // lease still valid
  now_ms_ += 1001;
  Lease second = acquire("exec-b", 1000);
  EXPECT_EQ(second.job_id, first.job_id);
  EXPECT_EQ(second.epoch, first.epoch + 1);

  EXPECT_EQ(store_->commit_page(first, succeed_all(*next)).status().code(), ErrorCode::kLeaseLost);
  EXPECT_EQ(store_->renew(first, 1000).status().code(), ErrorCode::kLeaseLost);
  EXPECT_EQ(store_->complete(first).code(), ErrorCode::kLeaseLost);
  EXPECT_EQ(store_->next_items(first, 2).status().code(), ErrorCode::kLeaseLost);

  // The new owner resumes from the first uncommitted item; hand-outs were counted.
  Result<NextItems> resumed = store_->next_items(second, 10);
  ASSERT_TRUE(resumed.ok());
  ASSERT_EQ(resumed->items.size(), 4u);
  EXPECT_EQ(resumed->items[0].index, 0);
  EXPECT_EQ(resumed->items[0].executed_before, 1);
  EXPECT_EQ(resumed->items[3].executed_before, 0);
  ASSERT_TRUE(store_->commit_page(second, succeed_all(*resumed)).ok());
  ASSERT_TRUE(store_->complete(second).ok());
  Result<JobInfo> job = store_->get_job(second.job_id);
  EXPECT_EQ(job->attempts, 2);
  Result<std::vector<JobEvent>> events = store_->events(second.job_id);
  ASSERT_TRUE(events.ok());
  bool saw_takeover = false;
  for (const JobEvent& event : *events) {
    saw_takeover |= event.detail.find("taken over") != std::string::npos;
  }
  EXPECT_TRUE(saw_takeover);
}

TEST_P(JobStoreTest, RenewKeepsTheLease) {
  submit(1);
  Lease lease = acquire("exec-a", 1000);
  now_ms_ += 900;
  ASSERT_TRUE(store_->renew(lease, 1000).ok());
  now_ms_ += 900;
  EXPECT_FALSE(store_->acquire("exec-b", 1000)->has_value());
  EXPECT_EQ(lease.deadline_ms, now_ms_ - 900 + 1000);
}

TEST_P(JobStoreTest, PageCommitIsAtomic) {
  const std::string id = submit(4);
  Lease lease = acquire();
  Result<NextItems> next = store_->next_items(lease, 4);
  ASSERT_TRUE(next.ok());
  for (const char* point : {"items_updated", "job_updated"}) {
    set_fault_hook(*store_, [point](std::string_view at) {
      return at == point ? Status(ErrorCode::kIoError, "injected failure") : ok_status();
    });
    EXPECT_EQ(store_->commit_page(lease, succeed_all(*next)).status().code(), ErrorCode::kIoError);
    // Nothing of the failed transaction is visible: no page, no item state, no progress.
    EXPECT_EQ(store_->result_page(id, 0).status().code(), ErrorCode::kNotFound) << point;
    Result<JobInfo> job = store_->get_job(id);
    EXPECT_EQ(job->counts.succeeded, 0);
    EXPECT_EQ(job->page_count, 0);
    const std::vector<ItemInfo> items = *store_->items(id);
    for (const ItemInfo& item : items) {
      EXPECT_EQ(item.state, ItemState::kPending);
      EXPECT_FALSE(item.page.has_value());
      EXPECT_EQ(item.attempts, 0);
    }
  }
  set_fault_hook(*store_, nullptr);
  ASSERT_TRUE(store_->commit_page(lease, succeed_all(*next)).ok());
  EXPECT_EQ(store_->get_job(id)->counts.succeeded, 4);
  EXPECT_TRUE(store_->result_page(id, 0).ok());
}

TEST_P(JobStoreTest, CommitRejectsBadOutcomes) {
  submit(2);
  Lease lease = acquire();
  EXPECT_EQ(store_->commit_page(lease, {ItemOutcome::success(7, "{}")}).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(store_->commit_page(lease, {ItemOutcome::success(0, "not json")}).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(
      store_->commit_page(lease, {ItemOutcome::success(0, "{}"), ItemOutcome::success(0, "{}")})
          .status()
          .code(),
      ErrorCode::kInvalidArgument);
  ASSERT_TRUE(store_->commit_page(lease, {ItemOutcome::success(0, "{}")}).ok());
  // A committed item never gets a second result.
  EXPECT_EQ(store_->commit_page(lease, {ItemOutcome::success(0, "{}")}).status().code(),
            ErrorCode::kInvalidArgument);
}

TEST_P(JobStoreTest, RetriesAreClassifiedAndBounded) {
  store_.reset();
  store_ = open_store({.max_item_attempts = 3, .retry_backoff_ms = 100});
  const std::string id = submit(3);
  Lease lease = acquire("exec-a", 10'000);
  ASSERT_TRUE(store_->next_items(lease, 3).ok());
  // Item 0: transient; item 1: permanent; item 2: succeeds.
  std::vector<ItemOutcome> outcomes = {
      ItemOutcome::failure(0, ErrorCode::kUnavailable, "engine busy"),
      ItemOutcome::failure(1, ErrorCode::kInvalidArgument, "bad prompt"),
      ItemOutcome::success(2, R"({"ok":true})")};
  Result<CommitResult> committed = store_->commit_page(lease, outcomes);
  ASSERT_TRUE(committed.ok());
  EXPECT_EQ(committed->retried_items, 1);
  EXPECT_EQ(committed->committed_items, 2);
  EXPECT_EQ(committed->pending_items, 1);
  std::vector<ItemInfo> items = *store_->items(id);
  EXPECT_EQ(items[0].state, ItemState::kPending);
  EXPECT_EQ(items[0].attempts, 1);
  EXPECT_EQ(items[0].last_error, ErrorCode::kUnavailable);
  EXPECT_EQ(items[0].not_before_ms, now_ms_ + 100);  // back-off recorded
  EXPECT_EQ(items[1].state, ItemState::kFailed);
  EXPECT_EQ(items[1].attempts, 1);  // permanent: no retry

  // During the back-off nothing is runnable; the job can go back to the queue until then.
  Result<NextItems> next = store_->next_items(lease, 10);
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->items.empty());
  EXPECT_EQ(next->next_retry_ms, now_ms_ + 100);
  ASSERT_TRUE(store_->release(lease, *next->next_retry_ms).ok());
  EXPECT_FALSE(store_->acquire("exec-b", 1000)->has_value());
  now_ms_ += 100;
  lease = acquire("exec-b", 10'000);

  // Second transient failure: back-off doubles. Third: attempts exhausted, the error sticks.
  ASSERT_EQ(store_->next_items(lease, 10)->items.size(), 1u);
  ASSERT_TRUE(store_->commit_page(lease, {outcomes[0]}).ok());
  EXPECT_EQ((*store_->items(id))[0].not_before_ms, now_ms_ + 200);
  now_ms_ += 200;
  ASSERT_EQ(store_->next_items(lease, 10)->items.size(), 1u);
  committed = store_->commit_page(lease, {outcomes[0]});
  ASSERT_TRUE(committed.ok());
  EXPECT_EQ(committed->committed_items, 1);
  EXPECT_EQ(committed->pending_items, 0);
  items = *store_->items(id);
  EXPECT_EQ(items[0].state, ItemState::kFailed);
  EXPECT_EQ(items[0].attempts, 3);
  ASSERT_TRUE(store_->complete(lease).ok());
  const JobInfo job = *store_->get_job(id);
  EXPECT_EQ(job.counts.failed, 2);
  EXPECT_EQ(job.counts.succeeded, 1);
  // Results, in index order within pages: item 0's final error is on the last page.
  EXPECT_NE(store_->result_page(id, 1)->jsonl.find(R"("code":"unavailable")"), std::string::npos);
}

TEST_P(JobStoreTest, CancelStopsARunningJob) {
  const std::string queued = submit(2, "q");
  Result<JobInfo> cancelled = store_->cancel(queued);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->state, JobState::kCancelled);
  EXPECT_FALSE(store_->acquire("exec-a", 1000)->has_value());

  const std::string running = submit(3, "r");
  Lease lease = acquire();
  Result<NextItems> next = store_->next_items(lease, 1);
  ASSERT_TRUE(store_->commit_page(lease, succeed_all(*next)).ok());
  ASSERT_TRUE(store_->cancel(running).ok());
  EXPECT_EQ(store_->renew(lease, 1000).status().code(), ErrorCode::kJobCancelled);
  EXPECT_EQ(store_->commit_page(lease, {ItemOutcome::success(1, "{}")}).status().code(),
            ErrorCode::kJobCancelled);
  EXPECT_EQ(store_->complete(lease).code(), ErrorCode::kJobCancelled);
  // Cancelling again is a no-op; committed results stay readable.
  EXPECT_EQ(store_->cancel(running)->state, JobState::kCancelled);
  EXPECT_TRUE(store_->result_page(running, 0).ok());
  EXPECT_EQ(store_->cancel("job_nope").status().code(), ErrorCode::kJobNotFound);
}

TEST_P(JobStoreTest, FailKeepsCommittedPages) {
  const std::string id = submit(2);
  Lease lease = acquire();
  ASSERT_TRUE(store_->commit_page(lease, {ItemOutcome::success(0, "{}")}).ok());
  ASSERT_TRUE(store_->fail(lease, ErrorCode::kNotFound, "model gone").ok());
  const JobInfo job = *store_->get_job(id);
  EXPECT_EQ(job.state, JobState::kFailed);
  EXPECT_EQ(job.error_code, ErrorCode::kNotFound);
  EXPECT_EQ(job.error_message, "model gone");
  EXPECT_TRUE(store_->result_page(id, 0).ok());
}

TEST_P(JobStoreTest, ListFiltersAndPages) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(submit(1, "list" + std::to_string(i)));
  Result<SubmitResult> background =
      store_->submit(make_submission(1, "bg", JobClass::kBackground), std::nullopt);
  ASSERT_TRUE(background.ok());
  ASSERT_TRUE(store_->cancel(ids[1]).ok());

  Result<std::vector<JobInfo>> page = store_->list_jobs({.limit = 3});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 3u);
  EXPECT_EQ((*page)[0].id, background->job.id);  // newest first
  EXPECT_EQ((*page)[2].id, ids[3]);
  page = store_->list_jobs({.limit = 3, .after = (*page)[2].id});
  ASSERT_EQ(page->size(), 3u);
  EXPECT_EQ((*page)[0].id, ids[2]);
  EXPECT_EQ((*page)[2].id, ids[0]);
  EXPECT_EQ(store_->list_jobs({.state = JobState::kCancelled})->size(), 1u);
  EXPECT_EQ(store_->list_jobs({.job_class = JobClass::kBackground})->size(), 1u);
  EXPECT_EQ(store_->list_jobs({.state = JobState::kQueued, .job_class = JobClass::kBatch})->size(),
            4u);
}

TEST_P(JobStoreTest, BatchRunsBeforeBackground) {
  ASSERT_TRUE(store_->submit(make_submission(1, "bg", JobClass::kBackground), std::nullopt).ok());
  const std::string batch = submit(1, "batch");
  EXPECT_EQ(acquire().job_id, batch);
}

TEST_P(JobStoreTest, RetentionAndExecutionDeadlines) {
  Submission short_lived = make_submission(2, "short");
  short_lived.execution_ttl_ms = 1000;
  short_lived.retention_ttl_ms = 5000;
  Result<SubmitResult> overdue = store_->submit(short_lived, std::nullopt);
  ASSERT_TRUE(overdue.ok());
  Submission done = make_submission(1, "done");
  done.retention_ttl_ms = 2000;
  Result<SubmitResult> finished = store_->submit(done, std::nullopt);
  ASSERT_TRUE(finished.ok());
  const std::string kept = submit(1, "kept");  // default TTLs: a day to run, a week to keep

  // Run `done` to completion and commit one page of `short` before its deadline.
  Lease lease = acquire();
  ASSERT_EQ(lease.job_id, overdue->job.id);
  ASSERT_TRUE(store_->commit_page(lease, {ItemOutcome::success(0, "{}")}).ok());
  Result<std::optional<Lease>> other = store_->acquire("exec-b", 60'000);
  ASSERT_TRUE(other.ok() && other->has_value());
  ASSERT_EQ((*other)->job_id, finished->job.id);
  ASSERT_TRUE(store_->commit_page(**other, {ItemOutcome::success(0, "{}")}).ok());
  ASSERT_TRUE(store_->complete(**other).ok());

  now_ms_ += 1000;
  Result<ExpireResult> result = store_->expire();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->expired, 1);
  EXPECT_EQ(result->deleted, 0);
  EXPECT_EQ(store_->get_job(overdue->job.id)->state, JobState::kExpired);
  EXPECT_TRUE(store_->result_page(overdue->job.id, 0).ok());  // results stay until retention
  EXPECT_EQ(store_->commit_page(lease, {ItemOutcome::success(1, "{}")}).status().code(),
            ErrorCode::kLeaseLost);

  now_ms_ += 1000;  // `done` finished 2 s ago: its retention ended
  result = store_->expire();
  EXPECT_EQ(result->deleted, 1);
  EXPECT_EQ(store_->get_job(finished->job.id).status().code(), ErrorCode::kJobNotFound);
  EXPECT_EQ(store_->result_page(finished->job.id, 0).status().code(), ErrorCode::kJobNotFound);

  now_ms_ += 4000;  // `short` expired 5 s ago
  result = store_->expire();
  EXPECT_EQ(result->deleted, 1);
  EXPECT_EQ(store_->get_job(overdue->job.id).status().code(), ErrorCode::kJobNotFound);
  EXPECT_EQ(store_->get_job(kept)->state, JobState::kQueued);
  // A resubmission after deletion makes a new job.
  Result<SubmitResult> again = store_->submit(done, std::nullopt);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->created);
}

TEST_P(JobStoreTest, NewerSchemaIsRefused) {
  store_.reset();
  ASSERT_TRUE(location_->write_newer_schema_version().ok());
  Result<std::unique_ptr<JobStore>> store = location_->open();
  EXPECT_EQ(store.status().code(), ErrorCode::kUnsupportedVersion);
}

TEST_P(JobStoreTest, ReopenKeepsEverything) {
  const std::string id = submit(3);
  Lease lease = acquire();
  ASSERT_TRUE(store_->commit_page(lease, {ItemOutcome::success(0, "{}")}).ok());
  store_.reset();
  store_ = open_store();
  ASSERT_NE(store_, nullptr);
  const JobInfo job = *store_->get_job(id);
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.counts.succeeded, 1);
  EXPECT_TRUE(store_->result_page(id, 0).ok());
}

TEST_P(JobStoreTest, SubmissionLineErrorsAreKept) {
  Result<Submission> parsed = parse_jsonl_submission(
      R"({"custom_id":"a","method":"POST","url":"/v1/completions","body":{}})"
      "\nbroken\n",
      JobClass::kBatch);
  ASSERT_TRUE(parsed.ok());
  Result<SubmitResult> submitted = store_->submit(*parsed, std::nullopt);
  ASSERT_TRUE(submitted.ok());
  EXPECT_EQ(submitted->job.counts.total, 1);
  EXPECT_EQ(submitted->job.counts.invalid_lines, 1);
  ASSERT_EQ(submitted->job.line_errors.size(), 1u);
  EXPECT_EQ(submitted->job.line_errors[0].line, 2);
  EXPECT_EQ(submitted->job.line_errors[0].code, ErrorCode::kInvalidJson);
}

// The stored count is every rejected line, not the length of the detailed sample.
TEST_P(JobStoreTest, InvalidLineCountIsNotCappedBySampleSize) {
  Submission submission = make_submission(2);
  submission.line_errors = {LineError{.line = 3, .code = ErrorCode::kInvalidJson, .message = "x"}};
  submission.invalid_lines = 50'000;
  Result<SubmitResult> submitted = store_->submit(submission, std::nullopt);
  ASSERT_TRUE(submitted.ok()) << submitted.status().to_string();
  EXPECT_EQ(submitted->job.counts.invalid_lines, 50'000);
  EXPECT_EQ(submitted->job.line_errors.size(), 1u);
  EXPECT_EQ(store_->get_job(submitted->job.id)->counts.invalid_lines, 50'000);
}

class EchoRunner final : public ItemRunner {
 public:
  ItemOutcome run(const WorkItem& item) override {
    ++runs;
    return ItemOutcome::success(item.index, response_for(item));
  }
  int runs = 0;
};

TEST_P(JobStoreTest, ExecutorLoopRunsJobsToTheEnd) {
  const std::string a = submit(7, "a");
  const std::string b = submit(3, "b");
  EchoRunner runner;
  const ExecutorOptions options{.owner = "loop", .lease_duration_ms = 1000, .items_per_commit = 2};
  EXPECT_EQ(*run_one_job(*store_, runner, options), ExecutorResult::kCompleted);
  EXPECT_EQ(*run_one_job(*store_, runner, options), ExecutorResult::kCompleted);
  EXPECT_EQ(*run_one_job(*store_, runner, options), ExecutorResult::kNoJob);
  EXPECT_EQ(runner.runs, 10);
  EXPECT_EQ(store_->get_job(a)->page_count, 4);
  EXPECT_EQ(store_->get_job(b)->state, JobState::kCompleted);
}

// A runner that cancels its own job while running the second item: the executor notices at its
// next keep_going() check, stops, and commits nothing more.
class CancellingRunner final : public ItemRunner {
 public:
  CancellingRunner(JobStore& store, std::string job_id)
      : store_(store), job_id_(std::move(job_id)) {}
  ItemOutcome run(const WorkItem& item) override {
    ++runs;
    if (item.index == 1) {
      EXPECT_TRUE(store_.cancel(job_id_).ok());
    }
    return ItemOutcome::success(item.index, response_for(item));
  }
  int runs = 0;

 private:
  JobStore& store_;
  std::string job_id_;
};

TEST_P(JobStoreTest, ExecutorStopsWhenItsJobIsCancelled) {
  const std::string id = submit(6);
  CancellingRunner runner(*store_, id);
  const ExecutorOptions options{
      .owner = "loop", .lease_duration_ms = 1000, .items_per_commit = 6, .check_after_ms = 0};
  EXPECT_EQ(*run_one_job(*store_, runner, options), ExecutorResult::kCancelled);
  EXPECT_EQ(runner.runs, 2);  // item 2's check saw the cancel
  EXPECT_EQ(store_->get_job(id)->state, JobState::kCancelled);
  EXPECT_EQ(store_->get_job(id)->page_count, 0);
}

TEST_P(JobStoreTest, ReclaimEndsOnlyTheLeasesOfTheGivenOwner) {
  const std::string a = submit(2, "a");
  const std::string b = submit(2, "b");
  // The executor whose leases are reclaimed ran in another process that died (its store is
  // closed): PostgreSQL checks that, SQLite takes the caller's word.
  std::unique_ptr<JobStore> dead = open_store();
  ASSERT_NE(dead, nullptr);
  Result<std::optional<Lease>> dead_lease = dead->acquire("serve@host/worker-0", 60'000);
  ASSERT_TRUE(dead_lease.ok() && dead_lease->has_value());
  const Lease lease_a = **dead_lease;
  dead.reset();
  const Lease lease_b = acquire("other-executor", 60'000);
  // Both leases are valid for a minute: nothing to acquire.
  EXPECT_FALSE(store_->acquire("serve@host/worker-1", 60'000)->has_value());
  EXPECT_EQ(*store_->reclaim_leases("serve@host/"), 1);
  Result<std::optional<Lease>> again = store_->acquire("serve@host/worker-1", 60'000);
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->job_id, lease_a.job_id);
  EXPECT_EQ((*again)->epoch, lease_a.epoch + 1);
  // The dead executor's epoch is fenced off; the other owner's lease is untouched.
  EXPECT_EQ(store_->next_items(lease_a, 1).status().code(), ErrorCode::kLeaseLost);
  EXPECT_TRUE(store_->next_items(lease_b, 1).ok());
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace synapse::jobs
