// SPDX-License-Identifier: Apache-2.0
// What only the shared PostgreSQL store promises (the common contract is job_store_test.cc):
// nodes racing to migrate, a version 1 database upgraded in place, leases of live nodes never
// reclaimed, a cut connection as a transient error with reconnect, a commit cut mid-transaction
// losing and duplicating nothing, several nodes sharing the work of many jobs, every item
// committed once, and per-page claims: several executors on one job with disjoint ranges, a
// stale claim fenced off while the others commit, a dead node's claim taken over, cancel seen by
// every claim, and one big job completed exactly once by executors on three nodes.
#include "jobs/postgres_job_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
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

  std::unique_ptr<PostgresJobStore> open(const std::string& node = "",
                                         PostgresJobStoreOptions options = {}) {
    options.node_name = node;
    Result<std::unique_ptr<PostgresJobStore>> store =
        PostgresJobStore::open(location_->location(), std::move(options));
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
  // Each migration ran once: one row per version, up to this build's.
  Result<PgResult> versions =
      db->query("SELECT version, count(*) FROM schema_version GROUP BY version ORDER BY version");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->rows(), PostgresJobStore::kSchemaVersion);
  for (int row = 0; row < versions->rows(); ++row) {
    EXPECT_EQ(versions->integer(row, 0), row + 1);
    EXPECT_EQ(versions->integer(row, 1), 1);
  }
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

// --- Per-page claims: several executors on one job ---

std::vector<ItemOutcome> succeed(const NextItems& next) {
  std::vector<ItemOutcome> outcomes;
  for (const WorkItem& item : next.items) {
    outcomes.push_back(
        ItemOutcome::success(item.index, R"({"i":)" + std::to_string(item.index) + "}"));
  }
  return outcomes;
}

std::vector<int64_t> indexes_of(const NextItems& next) {
  std::vector<int64_t> indexes;
  for (const WorkItem& item : next.items) indexes.push_back(item.index);
  return indexes;
}

std::vector<int64_t> range(int64_t first, int64_t last) {
  std::vector<int64_t> indexes;
  for (int64_t i = first; i <= last; ++i) indexes.push_back(i);
  return indexes;
}

// Stores on one database with one hand-moved clock (the nodes' clocks agree: PostgreSQL's).
class PostgresClaimsTest : public PostgresJobStoreTest {
 protected:
  std::unique_ptr<PostgresJobStore> node(const std::string& name) {
    return open(name, {.clock = [this] { return now_ms_.load(); }});
  }
  Lease acquire(PostgresJobStore& store, const std::string& owner, int64_t lease_ms = 1000) {
    Result<std::optional<Lease>> lease = store.acquire(owner, lease_ms);
    EXPECT_TRUE(lease.ok()) << lease.status().to_string();
    EXPECT_TRUE(lease.ok() && lease->has_value()) << owner << " got no job";
    return lease.ok() && lease->has_value() ? **lease : Lease{};
  }
  std::atomic<int64_t> now_ms_{5'000'000};
};

TEST_F(PostgresClaimsTest, TwoExecutorsClaimDisjointRangesOfOneJob) {
  std::unique_ptr<PostgresJobStore> a = node("node-a");
  std::unique_ptr<PostgresJobStore> b = node("node-b");
  ASSERT_TRUE(a && b);
  Result<SubmitResult> job = a->submit(make_submission(64, "big"), std::nullopt);
  ASSERT_TRUE(job.ok());
  const Lease lease_a = acquire(*a, "a/worker-0");
  // The job runs on a, and has 64 unclaimed items (at least min_items_to_share): b joins it.
  const Lease lease_b = acquire(*b, "b/worker-0");
  EXPECT_EQ(lease_b.job_id, job->job.id);
  EXPECT_NE(lease_b.epoch, lease_a.epoch);
  Result<NextItems> first_a = a->next_items(lease_a, 16);
  Result<NextItems> first_b = b->next_items(lease_b, 16);
  ASSERT_TRUE(first_a.ok() && first_b.ok());
  EXPECT_EQ(indexes_of(*first_a), range(0, 15));
  EXPECT_EQ(indexes_of(*first_b), range(16, 31));
  // Each commits its range, then both go on asking at the same time until nothing is left:
  // never an item in two hands, every item handed out and committed once.
  ASSERT_TRUE(a->commit_page(lease_a, succeed(*first_a)).ok());
  ASSERT_TRUE(b->commit_page(lease_b, succeed(*first_b)).ok());
  const auto drain = [](PostgresJobStore& store, const Lease& lease, std::vector<int64_t>& got) {
    for (;;) {
      Result<NextItems> next = store.next_items(lease, 2);
      ASSERT_TRUE(next.ok()) << next.status().to_string();
      if (next->items.empty()) return;
      for (int64_t i : indexes_of(*next)) got.push_back(i);
      ASSERT_TRUE(store.commit_page(lease, succeed(*next)).ok());
    }
  };
  std::vector<int64_t> got_a;
  std::vector<int64_t> got_b;
  std::thread ta([&] { drain(*a, lease_a, got_a); });
  std::thread tb([&] { drain(*b, lease_b, got_b); });
  ta.join();
  tb.join();
  std::set<int64_t> all(got_a.begin(), got_a.end());
  for (int64_t i : got_b) EXPECT_TRUE(all.insert(i).second) << "item " << i << " in two claims";
  const std::vector<int64_t> rest = range(32, 63);
  EXPECT_EQ(all, std::set<int64_t>(rest.begin(), rest.end()));
  EXPECT_EQ(got_a.size() + got_b.size(), 32u);
  Result<std::vector<ItemInfo>> items = a->items(job->job.id);
  ASSERT_TRUE(items.ok());
  for (const ItemInfo& item : *items) {
    EXPECT_EQ(item.state, ItemState::kSucceeded);
    EXPECT_EQ(item.executed_count, 1) << "item " << item.index;
  }
  ASSERT_TRUE(a->complete(lease_a).ok());
  Result<std::vector<JobEvent>> events = a->events(job->job.id);
  ASSERT_TRUE(events.ok());
  bool shared = false;
  for (const JobEvent& event : *events) {
    shared |= event.kind == "leased" && event.detail.find("shared with 1") != std::string::npos;
  }
  EXPECT_TRUE(shared);
}

TEST_F(PostgresClaimsTest, AStaleClaimCannotCommitWhileTheOtherClaimsCommitsLand) {
  std::unique_ptr<PostgresJobStore> a = node("node-a");
  std::unique_ptr<PostgresJobStore> b = node("node-b");
  std::unique_ptr<PostgresJobStore> c = node("node-c");
  ASSERT_TRUE(a && b && c);
  Result<SubmitResult> job = a->submit(make_submission(64, "stale"), std::nullopt);
  ASSERT_TRUE(job.ok());
  const std::string id = job->job.id;
  const Lease lease_a = acquire(*a, "a/worker-0");
  Lease lease_b = acquire(*b, "b/worker-0");
  Result<NextItems> items_a = a->next_items(lease_a, 16);
  Result<NextItems> items_b = b->next_items(lease_b, 16);
  ASSERT_TRUE(items_a.ok() && items_b.ok());
  // a hangs past its lease; b renews in time. c joins and takes a's items over.
  now_ms_ += 900;
  ASSERT_TRUE(b->renew(lease_b, 1000).ok());
  now_ms_ += 200;
  const Lease lease_c = acquire(*c, "c/worker-0");
  ASSERT_EQ(lease_c.job_id, id);
  Result<NextItems> items_c = c->next_items(lease_c, 16);
  ASSERT_TRUE(items_c.ok());
  EXPECT_EQ(indexes_of(*items_c), range(0, 15));
  EXPECT_EQ(items_c->items[0].executed_before, 1);

  // a wakes up: its commit is refused, as are its other calls; b's commit lands beside it.
  EXPECT_EQ(a->commit_page(lease_a, succeed(*items_a)).status().code(), ErrorCode::kLeaseLost);
  Result<CommitResult> committed_b = b->commit_page(lease_b, succeed(*items_b));
  ASSERT_TRUE(committed_b.ok()) << committed_b.status().to_string();
  EXPECT_EQ(committed_b->pages, std::vector<int64_t>{0});
  Lease renewed_a = lease_a;
  EXPECT_EQ(a->renew(renewed_a, 1000).status().code(), ErrorCode::kLeaseLost);
  EXPECT_EQ(a->next_items(lease_a, 16).status().code(), ErrorCode::kLeaseLost);
  EXPECT_EQ(a->complete(lease_a).code(), ErrorCode::kLeaseLost);
  Result<CommitResult> committed_c = c->commit_page(lease_c, succeed(*items_c));
  ASSERT_TRUE(committed_c.ok()) << committed_c.status().to_string();
  EXPECT_EQ(committed_c->pages, std::vector<int64_t>{1});
  // Pages are numbered in commit order and hold one claim's items each.
  EXPECT_EQ(c->result_page(id, 0)->first_item, 16);
  EXPECT_EQ(c->result_page(id, 1)->first_item, 0);
  EXPECT_EQ(c->result_page(id, 1)->last_item, 15);
  EXPECT_EQ(c->get_job(id)->counts.succeeded, 32);
}

TEST_F(PostgresClaimsTest, ADeadNodesClaimIsTakenOverAndTheJobCompletesOnce) {
  std::unique_ptr<PostgresJobStore> a = node("node-a");
  std::unique_ptr<PostgresJobStore> b = node("node-b");
  ASSERT_TRUE(a && b);
  Result<SubmitResult> job = a->submit(make_submission(40, "dead"), std::nullopt);
  ASSERT_TRUE(job.ok());
  const std::string id = job->job.id;
  const Lease lease_a = acquire(*a, "synapse-serve/a:1/worker-0", 60'000);
  const Lease lease_b = acquire(*b, "synapse-serve/b:2/worker-0", 60'000);
  ASSERT_TRUE(a->next_items(lease_a, 16).ok());
  Result<NextItems> items_b = b->next_items(lease_b, 24);
  ASSERT_TRUE(items_b.ok());
  EXPECT_EQ(indexes_of(*items_b), range(16, 39));
  // b holds nothing of a's: what is left is a's, held by a live claim.
  ASSERT_TRUE(b->commit_page(lease_b, succeed(*items_b)).ok());
  Result<NextItems> none = b->next_items(lease_b, 16);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->items.empty());
  EXPECT_EQ(none->held_by_others, 16);
  EXPECT_EQ(b->complete(lease_b).code(), ErrorCode::kJobNotFinished);

  // Node a dies. Its claim is reclaimed at once (its session is gone), b's is untouched.
  a.reset();
  int64_t reclaimed = 0;
  for (int look = 0; look < 100 && reclaimed == 0; ++look) {
    reclaimed = *b->reclaim_leases("synapse-serve/");
    if (reclaimed == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(reclaimed, 1);
  Result<NextItems> taken = b->next_items(lease_b, 16);
  ASSERT_TRUE(taken.ok()) << taken.status().to_string();
  EXPECT_EQ(indexes_of(*taken), range(0, 15));
  EXPECT_EQ(taken->items[0].executed_before, 1);
  ASSERT_TRUE(b->commit_page(lease_b, succeed(*taken)).ok());
  ASSERT_TRUE(b->complete(lease_b).ok());
  EXPECT_EQ(b->complete(lease_b).code(), ErrorCode::kLeaseLost);  // once
  Result<std::vector<JobEvent>> events = b->events(id);
  ASSERT_TRUE(events.ok());
  int completed = 0;
  bool reclaim_event = false;
  for (const JobEvent& event : *events) {
    completed += event.kind == "completed" ? 1 : 0;
    reclaim_event |= event.kind == "lease reclaimed";
  }
  EXPECT_EQ(completed, 1);
  EXPECT_TRUE(reclaim_event);
  EXPECT_EQ(b->get_job(id)->counts.succeeded, 40);
}

TEST_F(PostgresClaimsTest, CancelIsSeenByEveryClaim) {
  std::unique_ptr<PostgresJobStore> a = node("node-a");
  std::unique_ptr<PostgresJobStore> b = node("node-b");
  ASSERT_TRUE(a && b);
  Result<SubmitResult> job = a->submit(make_submission(64, "cancel"), std::nullopt);
  ASSERT_TRUE(job.ok());
  const Lease lease_a = acquire(*a, "a/worker-0");
  Lease lease_b = acquire(*b, "b/worker-0");
  Result<NextItems> items_a = a->next_items(lease_a, 16);
  Result<NextItems> items_b = b->next_items(lease_b, 16);
  ASSERT_TRUE(items_a.ok() && items_b.ok());
  ASSERT_TRUE(a->commit_page(lease_a, succeed(*items_a)).ok());
  ASSERT_TRUE(a->cancel(job->job.id).ok());
  EXPECT_EQ(b->commit_page(lease_b, succeed(*items_b)).status().code(), ErrorCode::kJobCancelled);
  EXPECT_EQ(b->renew(lease_b, 1000).status().code(), ErrorCode::kJobCancelled);
  EXPECT_EQ(a->next_items(lease_a, 16).status().code(), ErrorCode::kJobCancelled);
  EXPECT_EQ(b->complete(lease_b).code(), ErrorCode::kJobCancelled);
  EXPECT_EQ(a->get_job(job->job.id)->counts.succeeded, 16);
  EXPECT_FALSE(b->acquire("b/worker-1", 1000)->has_value());
}

// A small job stays with its executor: sharing it would cost more round trips than it saves.
TEST_F(PostgresClaimsTest, ASmallJobIsNotShared) {
  std::unique_ptr<PostgresJobStore> a = node("node-a");
  std::unique_ptr<PostgresJobStore> b = node("node-b");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->submit(make_submission(31, "small"), std::nullopt).ok());
  acquire(*a, "a/worker-0");
  EXPECT_FALSE(b->acquire("b/worker-0", 1000)->has_value());
}

// Executors on three nodes (two each) run one big job: every item is executed and committed once,
// pages hold disjoint ranges covering the job, the job completes exactly once, and the items
// were spread over the nodes.
TEST_F(PostgresJobStoreTest, ExecutorsOnThreeNodesShareOneBigJob) {
  constexpr int kNodes = 3;
  constexpr int kItems = 600;
  std::unique_ptr<PostgresJobStore> submitter = open("submitter");
  ASSERT_TRUE(submitter);
  Result<SubmitResult> job = submitter->submit(make_submission(kItems, "one"), std::nullopt);
  ASSERT_TRUE(job.ok());
  const std::string id = job->job.id;
  class SlowEcho final : public ItemRunner {
   public:
    ItemOutcome run(const WorkItem& item) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return ItemOutcome::success(item.index, R"({"i":)" + std::to_string(item.index) + "}");
    }
  };
  std::vector<std::unique_ptr<PostgresJobStore>> nodes;
  for (int n = 0; n < kNodes; ++n) {
    nodes.push_back(open("node-" + std::to_string(n)));
    ASSERT_TRUE(nodes.back());
  }
  std::mutex mutex;
  std::map<ExecutorResult, int> results;
  std::atomic<int> executors_started{0};
  std::vector<std::thread> threads;
  for (int n = 0; n < kNodes; ++n) {
    for (int w = 0; w < 2; ++w) {
      threads.emplace_back([&, n, w] {
        SlowEcho runner;
        const ExecutorOptions options{
            .owner = "node-" + std::to_string(n) + "/w" + std::to_string(w),
            .lease_duration_ms = 30'000,
            .items_per_commit = 8};
        executors_started.fetch_add(1);
        while (executors_started.load() < 2 * kNodes) std::this_thread::yield();
        for (int idle = 0; idle < 20;) {
          Result<ExecutorResult> result =
              run_one_job(*nodes[static_cast<size_t>(n)], runner, options);
          ASSERT_TRUE(result.ok()) << result.status().to_string();
          if (*result == ExecutorResult::kNoJob) {
            // Nothing to join right now (the job row was busy, or too little is left): look
            // again a few times, as a worker polls, until the job is done.
            Result<JobInfo> info = nodes[static_cast<size_t>(n)]->get_job(id);
            if (info.ok() && is_terminal(info->state)) break;
            ++idle;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            continue;
          }
          const std::lock_guard lock(mutex);
          ++results[*result];
        }
      });
    }
  }
  for (std::thread& thread : threads) thread.join();
  Result<JobInfo> done = submitter->get_job(id);
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->state, JobState::kCompleted);
  EXPECT_EQ(done->counts.succeeded, kItems);
  EXPECT_EQ(results[ExecutorResult::kCompleted], 1);
  EXPECT_EQ(results[ExecutorResult::kLeaseLost], 0);
  Result<std::vector<ItemInfo>> items = submitter->items(id);
  ASSERT_TRUE(items.ok());
  for (const ItemInfo& item : *items) EXPECT_EQ(item.executed_count, 1) << "item " << item.index;
  // Pages: together every item once. (Their index bounds may interleave: a claim's items need
  // not be contiguous when another claim took some in between at the same moment.)
  std::map<std::string, int> seen;
  for (int64_t p = 0; p < done->page_count; ++p) {
    Result<ResultPage> page = submitter->result_page(id, p);
    ASSERT_TRUE(page.ok());
    std::istringstream lines(page->jsonl);
    for (std::string line; std::getline(lines, line);) {
      ++seen[nlohmann::json::parse(line)["custom_id"].get<std::string>()];
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kItems));
  for (const auto& [custom_id, times] : seen) EXPECT_EQ(times, 1) << custom_id;
  // Who committed which page: the page events name the node.
  Result<std::vector<JobEvent>> events = submitter->events(id);
  ASSERT_TRUE(events.ok());
  std::set<std::string> committing_nodes;
  int completed = 0;
  for (const JobEvent& event : *events) {
    if (event.kind == "completed") ++completed;
    if (event.kind != "page") continue;
    const size_t at = event.detail.find("node node-");
    if (at != std::string::npos) committing_nodes.insert(event.detail.substr(at + 5, 6));
  }
  EXPECT_EQ(completed, 1);
  EXPECT_GT(committing_nodes.size(), 1u) << "one job's items ran on one node only";
}

// A database written by schema version 1 (one lease per job in the jobs row) is upgraded in place
// when a newer node opens it: the running job's lease becomes a claim its executor keeps, and
// its pages and items are untouched. Version 1 is made here by undoing version 2.
TEST_F(PostgresJobStoreTest, AVersionOneDatabaseIsUpgradedInPlace) {
  std::unique_ptr<PostgresJobStore> store = open("old");
  ASSERT_TRUE(store);
  Result<SubmitResult> job = store->submit(make_submission(4, "v1"), std::nullopt);
  ASSERT_TRUE(job.ok());
  const std::string id = job->job.id;
  Result<std::optional<Lease>> lease = store->acquire("old/worker-0", 60'000);
  ASSERT_TRUE(lease.ok() && lease->has_value());
  Result<NextItems> first = store->next_items(**lease, 1);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(store->commit_page(**lease, succeed(*first)).ok());
  store.reset();
  {
    Result<PgDb> db = PgDb::connect(location_->location());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->exec("BEGIN; "
                         "UPDATE jobs j SET lease_deadline_ms = c.deadline_ms FROM job_claims c "
                         "WHERE c.job_id = j.id; "
                         "DROP TABLE job_claims; ALTER TABLE items DROP COLUMN claim_epoch; "
                         "DELETE FROM schema_version WHERE version = 2; COMMIT")
                    .ok());
  }
  store = open("new");
  ASSERT_TRUE(store);
  Result<PgDb> db = PgDb::connect(location_->location());
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(db->query("SELECT MAX(version) FROM schema_version")->integer(0, 0), 2);
  Result<JobInfo> upgraded = store->get_job(id);
  ASSERT_TRUE(upgraded.ok()) << upgraded.status().to_string();
  EXPECT_EQ(upgraded->state, JobState::kRunning);
  EXPECT_EQ(upgraded->page_count, 1);
  EXPECT_EQ(upgraded->counts.succeeded, 1);
  EXPECT_EQ(upgraded->lease_deadline_ms, (*lease)->deadline_ms);
  // The lease still holds: nobody else takes the job; its executor finishes it.
  EXPECT_FALSE(store->acquire("new/worker-0", 60'000)->has_value());
  Result<NextItems> rest = store->next_items(**lease, 16);
  ASSERT_TRUE(rest.ok()) << rest.status().to_string();
  EXPECT_EQ(indexes_of(*rest), range(1, 3));
  ASSERT_TRUE(store->commit_page(**lease, succeed(*rest)).ok());
  ASSERT_TRUE(store->complete(**lease).ok());
  EXPECT_EQ(store->result_page(id, 0)->item_count, 1);
  EXPECT_EQ(store->result_page(id, 1)->item_count, 3);
}

}  // namespace
}  // namespace synapse::jobs
