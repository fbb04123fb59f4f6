// SPDX-License-Identifier: Apache-2.0
// The embedded JobStore: one SQLite file in WAL mode (readers never block the writer, a crash
// leaves the last committed transaction), migrated through a schema version table; a file written
// by a newer schema is refused.
//
// Threads: every method is thread-safe. The object holds one connection (one writer) behind a
// mutex, so calls from the engine thread and HTTP handler threads are serialized; a thread that
// must not wait behind a long commit may open its own SqliteJobStore on the same file (WAL lets
// its reads run beside the writer; writers queue on the busy timeout). Processes may share the
// file the same way.
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
#include "sqlite/sqlite_db.h"

namespace synapse::jobs {

struct SqliteJobStoreOptions {
  int busy_timeout_ms = 5000;
  int64_t max_page_bytes = 1 << 20;  // a result page holds at most this many bytes (or one item)
  int64_t max_item_attempts = 3;     // recorded outcomes per item before a transient error sticks
  int64_t retry_backoff_ms = 1000;   // first back-off; doubles per attempt
  int64_t max_retry_backoff_ms = 60'000;
  int64_t default_execution_ttl_ms = int64_t{24} * 3600 * 1000;
  int64_t default_retention_ttl_ms = int64_t{7} * 24 * 3600 * 1000;
  // A quota on the database size in SQLite pages (PRAGMA max_page_count); past it writes fail
  // with `storage_full`. Tests use it to emulate a full disk.
  std::optional<int64_t> max_database_pages;
  // Milliseconds since the Unix epoch; the system clock when empty. Tests move time by hand.
  std::function<int64_t()> clock;
};

class SqliteJobStore final : public JobStore {
 public:
  static constexpr int64_t kSchemaVersion = 1;

  // Opens or creates the database. A file SQLite can only read is opened read-only: reads work,
  // writes fail with `storage_read_only`.
  static Result<std::unique_ptr<SqliteJobStore>> open(const std::string& path,
                                                      SqliteJobStoreOptions options = {});

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

  bool read_only() const { return read_only_; }

  // Test hook: called at named points inside commit_page's transaction ("items_updated" after
  // the pages and item states are written, "job_updated" after the job's progress); an error it
  // returns aborts the commit as a storage failure there would.
  void set_fault_hook_for_testing(std::function<Status(std::string_view point)> hook);

 private:
  SqliteJobStore(SqliteDb db, SqliteJobStoreOptions options);
  Status migrate();
  int64_t now_ms() const;
  Result<JobInfo> load_job(std::string_view job_id);
  // Inside a transaction: the job's state allows this lease to write.
  Status check_lease(const Lease& lease);
  Status add_event(std::string_view job_id, int64_t time_ms, std::string_view kind,
                   std::string_view detail);
  // Moves a leased job to a terminal state.
  Status finish_leased(const Lease& lease, JobState state, ErrorCode code,
                       std::string_view message);

  std::mutex mutex_;
  SqliteDb db_;
  SqliteJobStoreOptions options_;
  std::function<Status(std::string_view)> fault_hook_;
  bool read_only_ = false;  // fixed at open
};

}  // namespace synapse::jobs
