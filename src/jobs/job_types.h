// SPDX-License-Identifier: Apache-2.0
// Plain values exchanged with the job store: submissions, job and item records, leases, item
// outcomes and result pages. No behaviour lives here beyond name conversions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error_code.h"

namespace synapse::jobs {

// batch: bulk work with a completion window; background: best effort after batch work.
enum class JobClass : uint8_t { kBatch, kBackground };

// queued → running → completed | failed | cancelled | expired (docs/jobs.md has the diagram).
enum class JobState : uint8_t { kQueued, kRunning, kCompleted, kFailed, kCancelled, kExpired };

// pending: no final result yet (maybe waiting for a retry); succeeded / failed: its result is in
// a committed page.
enum class ItemState : uint8_t { kPending, kSucceeded, kFailed };

std::string_view job_class_name(JobClass job_class);
std::optional<JobClass> job_class_from_name(std::string_view name);
std::string_view job_state_name(JobState state);
std::optional<JobState> job_state_from_name(std::string_view name);
std::string_view item_state_name(ItemState state);
std::optional<ItemState> item_state_from_name(std::string_view name);
bool is_terminal(JobState state);

// One request of a submission, shaped like a line of OpenAI's batch JSONL.
struct JobRequest {
  std::string custom_id;
  std::string url;   // /v1/completions, /v1/chat/completions or /v1/embeddings
  std::string body;  // the request body as canonical JSON (sorted keys, no spaces)
  int64_t line = 0;  // where the parser found it (1-based line or array index); not stored
};

// A line (JSONL) or array element (JSON form) the parser rejected; the others still form the job.
struct LineError {
  int64_t line = 0;  // 1-based line number, or 1-based index in "requests" for the JSON form
  ErrorCode code = ErrorCode::kOk;
  std::string message;
};

// What OpenAI's /v1/batches keeps beside a job created through it (docs/jobs.md, OpenAI batches).
// The job's id is the batch's id; a job without these was not created as a batch.
struct OpenAiBatch {
  std::string input_file_id;
  std::string endpoint;           // every item's url
  std::string completion_window;  // "24h"
  std::string metadata_json;      // a JSON object of strings, or "null"
};

// A parsed submission, ready for JobStore::submit.
struct Submission {
  JobClass job_class = JobClass::kBatch;
  std::vector<JobRequest> requests;
  // Every rejected line is counted in invalid_lines; line_errors keeps the details of the first
  // SubmissionLimits::max_line_errors of them (a sample, so a hostile input cannot bloat the job
  // row). The store takes the larger of the two as the count.
  std::vector<LineError> line_errors;  // kept with the job, shown with its status
  int64_t invalid_lines = 0;
  std::optional<int64_t> execution_ttl_ms;  // store default when absent
  std::optional<int64_t> retention_ttl_ms;  // store default when absent
  // Set by the /v1/batches route: stored with the job in the same transaction.
  std::optional<OpenAiBatch> openai_batch;
};

struct JobCounts {
  int64_t total = 0;      // valid requests (items)
  int64_t succeeded = 0;  // items with a committed response
  int64_t failed = 0;     // items with a committed error
  int64_t invalid_lines = 0;
  int64_t pending() const { return total - succeeded - failed; }
};

struct JobInfo {
  std::string id;
  std::optional<std::string> idempotency_key;
  std::string request_digest;  // SHA-256 hex of the canonical submission
  JobClass job_class = JobClass::kBatch;
  JobState state = JobState::kQueued;
  JobCounts counts;
  int64_t attempts = 0;  // leases granted so far
  int64_t page_count = 0;
  std::optional<std::string> lease_owner;
  int64_t lease_epoch = 0;
  std::optional<int64_t> lease_deadline_ms;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
  int64_t execution_deadline_ms = 0;  // not finished by then → expired
  int64_t retention_ttl_ms = 0;       // kept this long after reaching a terminal state
  std::optional<int64_t> finished_ms;
  ErrorCode error_code = ErrorCode::kOk;  // why the job failed, if it did
  std::string error_message;
  std::vector<LineError> line_errors;       // filled by get_job, and by list_jobs for batches only
  std::optional<OpenAiBatch> openai_batch;  // present when created through /v1/batches
};

struct SubmitResult {
  JobInfo job;
  bool created = false;  // false: an earlier job with the same key or digest was returned
};

// The right to work on a job. On SQLite it is valid while `epoch` is the job's current epoch (one
// executor per job); on PostgreSQL each executor of a job holds its own claim, valid while the
// claim stands (several executors per job, each with its own epoch; postgres_job_store.h).
struct Lease {
  std::string job_id;
  std::string owner;
  int64_t epoch = 0;
  int64_t deadline_ms = 0;
  JobClass job_class = JobClass::kBatch;
};

// An item handed to an executor.
struct WorkItem {
  int64_t index = 0;  // 0-based position in the job
  std::string custom_id;
  std::string url;
  std::string body;
  int64_t attempts = 0;                   // outcomes recorded before (transient failures)
  int64_t executed_before = 0;            // hand-outs before this one (crashes included)
  JobClass job_class = JobClass::kBatch;  // the job's (the executor runs items in its class)
};

struct NextItems {
  std::vector<WorkItem> items;
  // When `items` is empty but items remain (waiting out a retry back-off): when the first is due.
  std::optional<int64_t> next_retry_ms;
  // When `items` is empty: pending items that other executors of the job hold now (PostgreSQL,
  // where several executors share a job; always 0 on SQLite). They finish the job, so this
  // executor gives its share back instead of completing.
  int64_t held_by_others = 0;
};

// What an executor reports for one item: a response object, or an error classified by its code.
struct ItemOutcome {
  int64_t index = 0;
  std::string response_json;  // a JSON object when `error` is kOk
  ErrorCode error = ErrorCode::kOk;
  std::string error_message;

  static ItemOutcome success(int64_t index, std::string response_json) {
    return {.index = index, .response_json = std::move(response_json)};
  }
  static ItemOutcome failure(int64_t index, ErrorCode code, std::string message) {
    return {.index = index, .error = code, .error_message = std::move(message)};
  }
};

struct CommitResult {
  std::vector<int64_t> pages;  // page numbers written (none when every outcome was a retry)
  int64_t committed_items = 0;
  int64_t retried_items = 0;  // transient failures left pending with a back-off
  int64_t pending_items = 0;  // items of the job still without a final result
};

// Committed results: JSONL, one `{"custom_id", "response"}` or `{"custom_id", "error"}` per line,
// items in index order.
struct ResultPage {
  std::string job_id;
  int64_t page = 0;  // 0-based
  int64_t first_item = 0;
  int64_t last_item = 0;
  int64_t item_count = 0;
  std::string jsonl;
  std::optional<int64_t> next_page;  // absent: no later page committed yet
};

struct JobFilter {
  std::optional<JobState> state;
  std::optional<JobClass> job_class;
  int64_t limit = 100;
  std::optional<std::string> after;  // cursor: the last id of the previous page of the listing
  bool openai_batches_only = false;  // only jobs created through /v1/batches
};

struct JobEvent {
  int64_t time_ms = 0;
  std::string kind;  // submitted, leased, page, retry, completed, failed, cancelled, expired, ...
  std::string detail;
};

struct ExpireResult {
  int64_t expired = 0;  // jobs marked expired (execution deadline passed)
  int64_t deleted = 0;  // jobs removed with their results (retention ended)
};

// Per-item view for tests and diagnostics.
struct ItemInfo {
  int64_t index = 0;
  std::string custom_id;
  ItemState state = ItemState::kPending;
  int64_t attempts = 0;
  int64_t executed_count = 0;
  int64_t not_before_ms = 0;
  ErrorCode last_error = ErrorCode::kOk;
  std::string last_error_message;
  std::optional<int64_t> page;
};

// A file uploaded through OpenAI's /v1/files (a batch's input); its bytes are read separately.
struct StoredFile {
  std::string id;  // "file-" + 24 hex
  std::string filename;
  std::string purpose;  // "batch"
  int64_t bytes = 0;
  int64_t created_ms = 0;
};

struct FileFilter {
  std::optional<std::string> purpose;
  int64_t limit = 100;
  std::optional<std::string> after;  // cursor: the last id of the previous page
  bool oldest_first = false;         // newest first by default, as OpenAI lists
};

}  // namespace synapse::jobs
