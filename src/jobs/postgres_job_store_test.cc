// SPDX-License-Identifier: Apache-2.0
// What only the shared PostgreSQL store promises (the common contract is job_store_test.cc):
// nodes racing to migrate, leases of live nodes never reclaimed, a cut connection as a transient
// error with reconnect, a commit cut mid-transaction losing and duplicating nothing, and several
// nodes sharing the work of many jobs, every item committed once.
#include "jobs/postgres_job_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "jobs/job_executor.h"
#include "jobs/job_store_testing.h"
#include "pg/pg_db.h"

namespace synapse::jobs {
namespace {

Submission make_submission(int items, const std::string& tag) {
  Submission submission;
  for (int i = 0; i < items; ++i) {
    submission.requests.push_back(JobRequest{.custom_id = tag + "-" + std::to_string(i),
                                             .url = "/v1/completions",
                                             .body = R"({"prompt":")" + tag + "\"}"});
  }
  return submission;
}

class PostgresJobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SYN_TEST_STORE(location, StoreBackend::kPostgres);
    location_ = std::move(location);
  }

  std::unique_ptr<PostgresJobStore> open(const std::string& node = "") {
    Result<std::unique_ptr<PostgresJobStore>> store =
        PostgresJobStore::open(location_->location(), {.node_name = node});
    EXPECT_TRUE(store.ok()) << store.status().to_string();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  // Ends the store's connection from the server side, as a network cut or failover would.
  void cut(PostgresJobStore& store) {
    Result<PgDb> admin = PgDb::connect(location_->location());
    ASSERT_TRUE(admin.ok());
    ASSERT_TRUE(admin
                    ->query("SELECT pg_terminate_backend($1)",
                            PgParams().add(int64_t{store.backend_pid_for_testing()}))
                    .ok());
  }

  std::unique_ptr<TestStore> location_;
};

TEST_F(PostgresJobStoreTest, NodesStartingTogetherMigrateOnce) {
  std::vector<std::thread> threads;
  std::atomic<int> opened{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      if (open() != nullptr) opened.fetch_add(1);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(opened.load(), 8);
  Result<PgDb> db = PgDb::connect(location_->location());
  ASSERT_TRUE(db.ok());
  Result<PgResult> versions = db->query("SELECT version FROM schema_version");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->rows(), 1);
  EXPECT_EQ(versions->integer(0, 0), PostgresJobStore::kSchemaVersion);
}

TEST_F(PostgresJobStoreTest, LeasesOfLiveNodesAreNeverReclaimed) {
  std::unique_ptr<PostgresJobStore> a = open("node-a");
  std::unique_ptr<PostgresJobStore> b = open("node-b");
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->node_id(), b->node_id());
  ASSERT_TRUE(a->submit(make_submission(2, "x"), std::nullopt).ok());
  Result<std::optional<Lease>> lease = a->acquire("synapse-serve/a:1/worker-0", 60'000);
  ASSERT_TRUE(lease.ok() && lease->has_value());
  // Node b restarting with the same owner prefix must not take a live node's job.
  EXPECT_EQ(*b->reclaim_leases("synapse-serve/"), 0);
  EXPECT_FALSE(b->acquire("synapse-serve/b:2/worker-0", 60'000)->has_value());
  ASSERT_TRUE(a->next_items(**lease, 2).ok());
  // Node a dies: once the server has ended its session (a moment after the socket closes), its
  // lease is reclaimed and taken over without waiting for the deadline.
  a.reset();
  int64_t reclaimed = 0;
  for (int look = 0; look < 100 && reclaimed == 0; ++look) {
    reclaimed = *b->reclaim_leases("synapse-serve/");
    if (reclaimed == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(reclaimed, 1);
  Result<std::optional<Lease>> taken = b->acquire("synapse-serve/b:2/worker-0", 60'000);
  ASSERT_TRUE(taken.ok() && taken->has_value());
  EXPECT_EQ((*taken)->epoch, (*lease)->epoch + 1);
}

TEST_F(PostgresJobStoreTest, ACutConnectionIsTransientAndTheNextCallReconnects) {
  std::unique_ptr<PostgresJobStore> store = open();
  ASSERT_TRUE(store);
  Result<SubmitResult> submitted = store->submit(make_submission(1, "c"), std::nullopt);
  ASSERT_TRUE(submitted.ok());
  cut(*store);
  const Status lost = store->get_job(submitted->job.id).status();
  EXPECT_EQ(lost.code(), ErrorCode::kUnavailable) << lost.to_string();
  EXPECT_TRUE(lost.is_transient());
  Result<JobInfo> job = store->get_job(submitted->job.id);
  ASSERT_TRUE(job.ok()) << job.status().to_string();
  EXPECT_EQ(job->state, JobState::kQueued);
}

TEST_F(PostgresJobStoreTest, ACommitCutMidTransactionLosesAndDuplicatesNothing) {
  std::unique_ptr<PostgresJobStore> store = open();
  ASSERT_TRUE(store);
  Result<SubmitResult> submitted = store->submit(make_submission(4, "m"), std::nullopt);
  ASSERT_TRUE(submitted.ok());
  const std::string id = submitted->job.id;
  Result<std::optional<Lease>> lease = store->acquire("exec", 60'000);
  ASSERT_TRUE(lease.ok() && lease->has_value());
  Result<NextItems> next = store->next_items(**lease, 4);
  ASSERT_TRUE(next.ok());
  std::vector<ItemOutcome> outcomes;
  for (const WorkItem& item : next->items) {
    outcomes.push_back(
        ItemOutcome::success(item.index, R"({"i":)" + std::to_string(item.index) + "}"));
  }
  // The connection dies after the pages and the job row are written, before COMMIT.
  const int pid = store->backend_pid_for_testing();
  const std::string conninfo = location_->location();
  store->set_fault_hook_for_testing([&](std::string_view point) {
    if (point != "job_updated") return ok_status();
    SYN_ASSIGN_OR_RETURN(PgDb admin, PgDb::connect(conninfo));
    return admin.query("SELECT pg_terminate_backend($1)", PgParams().add(int64_t{pid})).status();
  });
  const Status cut_commit = store->commit_page(**lease, outcomes).status();
  EXPECT_EQ(cut_commit.code(), ErrorCode::kUnavailable) << cut_commit.to_string();
  store->set_fault_hook_for_testing(nullptr);

  // Nothing of it was committed; the lease still holds, so the same executor commits again.
  Result<JobInfo> job = store->get_job(id);
  ASSERT_TRUE(job.ok()) << job.status().to_string();
  EXPECT_EQ(job->page_count, 0);
  EXPECT_EQ(job->counts.succeeded, 0);
  Result<CommitResult> committed = store->commit_page(**lease, outcomes);
  ASSERT_TRUE(committed.ok()) << committed.status().to_string();
  EXPECT_EQ(committed->pages, std::vector<int64_t>{0});
  // A repeat of a commit that did land is refused, never a second page.
  EXPECT_EQ(store->commit_page(**lease, outcomes).status().code(), ErrorCode::kInvalidArgument);
  ASSERT_TRUE(store->complete(**lease).ok());
  EXPECT_EQ(store->get_job(id)->page_count, 1);
  EXPECT_EQ(store->result_page(id, 0)->item_count, 4);
}

// Three nodes (stores with their own connections), two executors each, drain 30 jobs: every
// item is committed exactly once and every node ran some of the jobs.
TEST_F(PostgresJobStoreTest, NodesShareTheWorkAndCommitEachItemOnce) {
  constexpr int kNodes = 3;
  constexpr int kJobs = 30;
  std::unique_ptr<PostgresJobStore> submitter = open("submitter");
  ASSERT_TRUE(submitter);
  std::vector<std::string> ids;
  for (int j = 0; j < kJobs; ++j) {
    Result<SubmitResult> submitted =
        submitter->submit(make_submission(5, "job" + std::to_string(j)), std::nullopt);
    ASSERT_TRUE(submitted.ok());
    ids.push_back(submitted->job.id);
  }
  class SlowEcho final : public ItemRunner {
   public:
    ItemOutcome run(const WorkItem& item) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      return ItemOutcome::success(item.index, "{}");
    }
  };
  std::vector<std::unique_ptr<PostgresJobStore>> nodes;
  for (int n = 0; n < kNodes; ++n) {
    nodes.push_back(open("node-" + std::to_string(n)));
    ASSERT_TRUE(nodes.back());
  }
  std::mutex mutex;
  std::map<std::string, std::set<std::string>> jobs_by_owner;
  std::vector<std::thread> threads;
  for (int n = 0; n < kNodes; ++n) {
    for (int w = 0; w < 2; ++w) {
      threads.emplace_back([&, n, w] {
        SlowEcho runner;
        const ExecutorOptions options{
            .owner = "node-" + std::to_string(n) + "/w" + std::to_string(w),
            .lease_duration_ms = 30'000,
            .items_per_commit = 2};
        while (true) {
          Lease lease;
          Result<ExecutorResult> result =
              run_one_job(*nodes[static_cast<size_t>(n)], runner, options, &lease);
          ASSERT_TRUE(result.ok()) << result.status().to_string();
          if (*result == ExecutorResult::kNoJob) break;
          const std::lock_guard lock(mutex);
          jobs_by_owner["node-" + std::to_string(n)].insert(lease.job_id);
        }
      });
    }
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& id : ids) {
    Result<JobInfo> job = submitter->get_job(id);
    ASSERT_TRUE(job.ok());
    EXPECT_EQ(job->state, JobState::kCompleted);
    EXPECT_EQ(job->counts.succeeded, 5);
    Result<std::vector<ItemInfo>> items = submitter->items(id);
    ASSERT_TRUE(items.ok()) << items.status().to_string();
    for (const ItemInfo& item : *items) EXPECT_EQ(item.executed_count, 1) << id;
  }
  EXPECT_EQ(jobs_by_owner.size(), static_cast<size_t>(kNodes));
}

}  // namespace
}  // namespace synapse::jobs
