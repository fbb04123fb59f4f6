// SPDX-License-Identifier: Apache-2.0
// The shared JobStore: one PostgreSQL database that many `synapse serve` nodes (and `synapse jobs`
// commands) use at once, with the SQLite store's schema and semantics (job_store.h). Selected by a
// postgresql:// URL (open_job_store in job_store_open.h).
//
// Across machines: submissions serialize per idempotency key (or per request digest) on a
// transaction-scoped advisory lock, with the unique key as the backstop, so concurrent submits
// from many nodes make one job. Several executors (on any nodes) may hold one job at once, each
// with its own claim (a row of job_claims with its own epoch and deadline): acquire() takes a
// queued job, a running job whose claims all ran out (a takeover), or joins a running job that
// still has at least `min_items_to_share` unclaimed items; next_items() hands each claim a
// disjoint range of items (FOR UPDATE SKIP LOCKED, the items stamped with the claim's epoch), so
// nodes never wait on each other. A commit locks the job row (pages are numbered under it, so two
// claims' pages never share a number and never change after commit) and is refused with
// `lease_lost` once its claim was ended or its items were handed to another claim: a node whose
// claim was taken over cannot commit. complete() succeeds only when no item is pending; an
// executor that finds the rest held by live claims of others leaves the job to them
// (NextItems::held_by_others). Claim deadlines come from the database server's clock (its offset
// to ours is measured at connect), so the nodes' clock skew cannot cut a lease short.
//
// Liveness: each store holds a session advisory lock named by its node id (unique per process)
// while connected, and records that id with its claims. reclaim_leases() ends only claims whose
// node no longer holds its lock: a crashed node's claims are taken over at once, a live node's
// never, whatever the owner prefix says.
//
// Connections: a lost connection (a restart, a failover, a network cut) is `unavailable` for the
// call that saw it; the next call reconnects. A COMMIT whose answer was lost may have committed:
// every write is keyed (pages by number, items by state) so a retry finds what is already there
// instead of writing it twice. Passwords and TLS come from the URL or the usual libpq settings
// (PGPASSWORD, PGPASSFILE, PGSSLMODE); messages name the server without its password.
//
// Threads: every method is thread-safe; one connection behind a mutex, as SqliteJobStore.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jobs/job_store.h"
#include "pg/pg_db.h"

namespace synapse::jobs {

struct PostgresJobStoreOptions {
  int64_t max_page_bytes = 1 << 20;  // a result page holds at most this many bytes (or one item)
  int64_t max_item_attempts = 3;     // recorded outcomes per item before a transient error sticks
  int64_t retry_backoff_ms = 1000;   // first back-off; doubles per attempt
  int64_t max_retry_backoff_ms = 60'000;
  int64_t default_execution_ttl_ms = int64_t{24} * 3600 * 1000;
  int64_t default_retention_ttl_ms = int64_t{7} * 24 * 3600 * 1000;
  int64_t max_file_bytes = 64ll << 20;
  // A running job is joined by another executor only while at least this many of its items are
  // pending, due and unclaimed: a small job stays with the executor that holds it (sharing it
  // would cost more round trips than it saves); a big one spreads over every idle executor.
  int64_t min_items_to_share = 32;
  // This process's name among the nodes (shown in events); empty: "HOST:PID". A random suffix is
  // always added, so two stores in one process are two nodes.
  std::string node_name;
  // Milliseconds since the Unix epoch; the database server's clock when empty. Tests move time
  // by hand.
  std::function<int64_t()> clock;
};

class PostgresJobStore final : public JobStore {
 public:
  // 2: job_claims and items.claim_epoch (several executors per job).
  static constexpr int64_t kSchemaVersion = 2;

  // Connects and brings the schema up to date: migrations run once, under an advisory lock, each
  // in its own transaction with its version row; a database written by a newer schema is refused
  // (`unsupported_version`).
  static Result<std::unique_ptr<PostgresJobStore>> open(const std::string& conninfo,
                                                        PostgresJobStoreOptions options = {});

  Result<SubmitResult> submit(const Submission& submission,
                              std::optional<std::string_view> idempotency_key) override;
  Result<std::optional<Lease>> acquire(std::string_view owner, int64_t lease_duration_ms) override;
  Result<NextItems> next_items(const Lease& lease, int64_t max_items) override;
  Result<CommitResult> commit_page(const Lease& lease,
                                   const std::vector<ItemOutcome>& outcomes) override;
  Result<int64_t> renew(Lease& lease, int64_t lease_duration_ms) override;
  Status release(const Lease& lease, int64_t not_before_ms) override;
  Result<int64_t> reclaim_leases(std::string_view owner_prefix) override;
  Status complete(const Lease& lease) override;
  Status fail(const Lease& lease, ErrorCode code, std::string_view message) override;
  Result<JobInfo> cancel(std::string_view job_id) override;
  Result<JobInfo> get_job(std::string_view job_id) override;
  Result<std::vector<JobInfo>> list_jobs(const JobFilter& filter) override;
  Result<ResultPage> result_page(std::string_view job_id, int64_t page) override;
  Result<std::vector<JobEvent>> events(std::string_view job_id) override;
  Result<std::vector<ItemInfo>> items(std::string_view job_id) override;
  Result<ExpireResult> expire() override;
  Result<StoredFile> create_file(std::string_view filename, std::string_view purpose,
                                 std::string_view content) override;
  Result<StoredFile> get_file(std::string_view file_id) override;
  Result<std::string> file_content(std::string_view file_id) override;
  Result<std::vector<StoredFile>> list_files(const FileFilter& filter) override;
  Status delete_file(std::string_view file_id) override;

  // This store's node id ("NAME/RANDOM"), recorded with its leases.
  const std::string& node_id() const { return node_id_; }
  // The server without its password, for messages.
  const std::string& name() const { return db_.name(); }

  // Test hooks. The fault hook is called at named points inside commit_page's transaction
  // ("items_updated", "job_updated"); an error it returns aborts the commit there. The connection
  // hook runs a statement on this store's connection (e.g. to learn its backend pid).
  void set_fault_hook_for_testing(std::function<Status(std::string_view point)> hook);
  int backend_pid_for_testing();

 private:
  PostgresJobStore(PgDb db, PostgresJobStoreOptions options);
  Status migrate();
  // Called with the mutex held before each operation: reconnects a broken connection (taking the
  // node lock and measuring the clock again).
  Status ready();
  Status on_connect();
  int64_t now_ms() const;
  Result<JobInfo> load_job(std::string_view job_id);
  // Inside a transaction: locks the job row (FOR NO KEY UPDATE: writes to one job serialize
  // here) and checks that the lease's claim may write: the job running, the claim not ended.
  // Returns the job's page_count.
  Result<int64_t> lock_claim(const Lease& lease);
  // Inside a transaction: deletes the claims of jobs that left `running`.
  Status delete_finished_claims();
  Status add_event(std::string_view job_id, int64_t time_ms, std::string_view kind,
                   std::string_view detail);
  Status finish_leased(const Lease& lease, JobState state, ErrorCode code,
                       std::string_view message);

  std::mutex mutex_;
  PgDb db_;
  PostgresJobStoreOptions options_;
  std::string node_id_;
  int64_t clock_offset_ms_ = 0;  // server clock minus ours, measured at connect
  std::function<Status(std::string_view)> fault_hook_;
};

}  // namespace synapse::jobs
