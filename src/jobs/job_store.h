// SPDX-License-Identifier: Apache-2.0
// JobStore: the durable state of batch jobs, behind one interface so that a PostgreSQL backend can
// replace the embedded SQLite one (sqlite_job_store.h) without touching callers.
//
// Design goals: a crash loses no committed result and never makes a result appear twice; a stale
// executor (one whose lease was taken over) cannot write; every write that moves a job forward is
// one transaction. Non-goals: running items (the scheduler does), HTTP shapes (the service does).
//
// Protocol (docs/jobs.md): acquire() leases a runnable job and bumps its epoch; next_items() hands
// out the first items without a final result; commit_page() writes their outcomes as result pages
// together with the items' states and the job's progress, refused with `lease_lost` once the
// lease is stale and `job_cancelled` after a cancel; complete() finishes the job. SQLite runs a
// job on one executor at a time; PostgreSQL lets several executors hold one big job at once, each
// lease a claim of its own with disjoint items (docs/jobs-postgres.md), behind the same calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jobs/job_types.h"

namespace synapse::jobs {

class JobStore {
 public:
  virtual ~JobStore() = default;

  // --- Submission (HTTP handler threads) ---
  // Creates a job, or returns the existing one when `idempotency_key` was seen before (with the
  // same request digest; a different one is `idempotency_conflict`) or, without a key, when a job
  // with the same request digest exists. Atomic: two concurrent submits never make two jobs. A
  // submission without valid requests is `invalid_argument`.
  virtual Result<SubmitResult> submit(const Submission& submission,
                                      std::optional<std::string_view> idempotency_key) = 0;

  // --- Execution (the scheduler) ---
  // Leases the next runnable job: queued (and past its not-before time), or running with an
  // expired lease (its executor died); on PostgreSQL also a running job with enough items no
  // lease holds (PostgresJobStoreOptions::min_items_to_share), joined beside its executors.
  // Bumps the epoch. nullopt when nothing is runnable.
  virtual Result<std::optional<Lease>> acquire(std::string_view owner,
                                               int64_t lease_duration_ms) = 0;
  // Up to `max_items` of the first items without a final result whose back-off has passed (and,
  // on PostgreSQL, that no other live lease of the job holds), in index order; records each
  // hand-out (items.executed_count) before returning. Empty with `held_by_others` > 0 when the
  // rest is held by the job's other executors: this one releases and leaves it to them.
  virtual Result<NextItems> next_items(const Lease& lease, int64_t max_items) = 0;
  // Records outcomes in one transaction: final ones (responses, permanent errors, transient
  // errors past the attempt limit) become result pages of at most the store's page size; other
  // transient errors leave their item pending with a back-off. Items must be pending.
  virtual Result<CommitResult> commit_page(const Lease& lease,
                                           const std::vector<ItemOutcome>& outcomes) = 0;
  // Extends the lease to now + lease_duration_ms; returns the new deadline.
  virtual Result<int64_t> renew(Lease& lease, int64_t lease_duration_ms) = 0;
  // Gives the job back to the queue (e.g. every remaining item waits for a retry, or the scheduler
  // preempts it); it becomes runnable again at `not_before_ms`. While other executors hold the
  // job (PostgreSQL) only this lease ends: its items are theirs to take, the job stays running.
  virtual Status release(const Lease& lease, int64_t not_before_ms) = 0;
  // Finishes a job whose items all have final results (`job_not_finished` otherwise); ends every
  // lease of the job (the others' next calls: `lease_lost`).
  virtual Status complete(const Lease& lease) = 0;
  // Ends the job as failed (e.g. its model cannot be loaded); committed pages stay readable.
  virtual Status fail(const Lease& lease, ErrorCode code, std::string_view message) = 0;
  // Ends now the leases of running jobs whose owner starts with `owner_prefix`, so acquire() can
  // take them over at once instead of waiting for the deadline. Only for a caller that knows
  // those executors are dead: `synapse serve` holds the database's executor lock, so leases of
  // its own owner prefix left in the database belong to a process that crashed. Returns how many.
  virtual Result<int64_t> reclaim_leases(std::string_view owner_prefix) = 0;

  // --- Control and reading (any thread) ---
  // Queued or running → cancelled (a running executor's next call reports `job_cancelled`).
  // Returns the job as it is afterwards; a job already terminal is returned unchanged.
  virtual Result<JobInfo> cancel(std::string_view job_id) = 0;
  virtual Result<JobInfo> get_job(std::string_view job_id) = 0;
  // Newest first; `after` continues from the last id of the previous page.
  virtual Result<std::vector<JobInfo>> list_jobs(const JobFilter& filter) = 0;
  // Page `page` of a job's results (readable while it runs); `not_found` past the last page.
  virtual Result<ResultPage> result_page(std::string_view job_id, int64_t page) = 0;
  virtual Result<std::vector<JobEvent>> events(std::string_view job_id) = 0;
  virtual Result<std::vector<ItemInfo>> items(std::string_view job_id) = 0;
  // Marks queued/running jobs past their execution deadline as expired and deletes terminal jobs
  // whose retention ended (results and events included).
  virtual Result<ExpireResult> expire() = 0;

  // --- Files (OpenAI's /v1/files: batch input files, kept until deleted) ---
  // Stores `content` under a new id. Over the store's size limit: `request_too_large`; an empty
  // purpose: `missing_parameter`; a filename over 255 bytes: `invalid_value`.
  virtual Result<StoredFile> create_file(std::string_view filename, std::string_view purpose,
                                         std::string_view content) = 0;
  // Unknown ids are `not_found` (field file_id).
  virtual Result<StoredFile> get_file(std::string_view file_id) = 0;
  virtual Result<std::string> file_content(std::string_view file_id) = 0;
  virtual Result<std::vector<StoredFile>> list_files(const FileFilter& filter) = 0;
  // Jobs made from the file keep their items; only the file goes.
  virtual Status delete_file(std::string_view file_id) = 0;
};

}  // namespace synapse::jobs
