// SPDX-License-Identifier: Apache-2.0
// SqliteJobStore: opening, migrations, submission and the execution protocol. Reading, listing
// and retention are in sqlite_job_store_read.cc.
#include "jobs/sqlite_job_store.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/echo.h"
#include "jobs/job_store_common.h"
#include "jobs/submission.h"

namespace synapse::jobs {
namespace {

// Version 1. Later versions append migrations; a file written by a newer build is refused.
constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE jobs(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- listing order and cursor
  id TEXT NOT NULL UNIQUE,
  idempotency_key TEXT UNIQUE,
  request_digest TEXT NOT NULL,           -- SHA-256 hex of the canonical submission
  class TEXT NOT NULL CHECK(class IN ('batch', 'background')),
  state TEXT NOT NULL CHECK(state IN ('queued', 'running', 'completed', 'failed', 'cancelled',
                                      'expired')),
  item_count INTEGER NOT NULL,
  succeeded_count INTEGER NOT NULL DEFAULT 0,
  failed_count INTEGER NOT NULL DEFAULT 0,
  invalid_line_count INTEGER NOT NULL DEFAULT 0,
  line_errors TEXT NOT NULL DEFAULT '[]', -- JSON: [{"line", "code", "message"}]
  attempts INTEGER NOT NULL DEFAULT 0,    -- leases granted
  page_count INTEGER NOT NULL DEFAULT 0,
  lease_owner TEXT,
  lease_epoch INTEGER NOT NULL DEFAULT 0,
  lease_deadline_ms INTEGER,
  not_before_ms INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  execution_ttl_ms INTEGER NOT NULL,
  execution_deadline_ms INTEGER NOT NULL,
  retention_ttl_ms INTEGER NOT NULL,      -- counted from finished_ms
  finished_ms INTEGER,
  error_code TEXT,
  error_message TEXT
);
CREATE INDEX jobs_by_state ON jobs(state, class, seq);
CREATE INDEX jobs_by_digest ON jobs(request_digest);

CREATE TABLE items(
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  custom_id TEXT NOT NULL,
  url TEXT NOT NULL,
  body TEXT NOT NULL,
  state TEXT NOT NULL CHECK(state IN ('pending', 'succeeded', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,    -- outcomes recorded
  not_before_ms INTEGER NOT NULL DEFAULT 0,
  last_error_code TEXT,
  last_error_message TEXT,
  executed_count INTEGER NOT NULL DEFAULT 0,  -- hand-outs to executors, crashes included
  page INTEGER,                           -- the result page holding its final result
  PRIMARY KEY(job_id, idx),
  UNIQUE(job_id, custom_id)
) WITHOUT ROWID;
CREATE INDEX items_pending ON items(job_id, idx) WHERE state = 'pending';

CREATE TABLE result_pages(
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  page INTEGER NOT NULL,
  first_item INTEGER NOT NULL,
  last_item INTEGER NOT NULL,
  item_count INTEGER NOT NULL,
  bytes TEXT NOT NULL,                    -- JSONL, items in index order
  PRIMARY KEY(job_id, page)
) WITHOUT ROWID;

CREATE TABLE events(
  seq INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  time_ms INTEGER NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL
);
CREATE INDEX events_by_job ON events(job_id, seq);
)sql";

// Version 2: OpenAI's /v1/files and /v1/batches. Output and error files are not stored: they are
// views of a batch's result pages (docs/jobs.md).
constexpr std::string_view kSchemaV2 = R"sql(
CREATE TABLE files(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- listing order and cursor
  id TEXT NOT NULL UNIQUE,                -- 'file-' + 24 hex
  filename TEXT NOT NULL,
  purpose TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  content BLOB NOT NULL,
  created_ms INTEGER NOT NULL
);
CREATE INDEX files_by_purpose ON files(purpose, seq);

CREATE TABLE openai_batches(
  job_id TEXT PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  input_file_id TEXT NOT NULL,            -- not a foreign key: deleting the file keeps the batch
  endpoint TEXT NOT NULL,
  completion_window TEXT NOT NULL,
  metadata TEXT NOT NULL DEFAULT 'null'   -- JSON object of strings, or null
) WITHOUT ROWID;
)sql";

}  // namespace

SqliteJobStore::SqliteJobStore(SqliteDb db, SqliteJobStoreOptions options)
    : db_(std::move(db)), options_(std::move(options)) {}

Result<std::unique_ptr<SqliteJobStore>> SqliteJobStore::open(const std::string& path,
                                                             SqliteJobStoreOptions options) {
  SYN_ASSIGN_OR_RETURN(SqliteDb db, SqliteDb::open(path, options.busy_timeout_ms));
  if (options.max_database_pages) {
    SYN_RETURN_IF_ERROR(db.set_max_page_count(*options.max_database_pages));
  }
  std::unique_ptr<SqliteJobStore> store(new SqliteJobStore(std::move(db), std::move(options)));
  store->read_only_ = store->db_.read_only();
  SYN_RETURN_IF_ERROR(store->migrate());
  return store;
}

Status SqliteJobStore::migrate() {
  // Read the version first without the write lock, so a read-only file that is current opens.
  auto read_version = [this]() -> Result<std::optional<int64_t>> {
    SYN_ASSIGN_OR_RETURN(SqliteStatement table,
                         db_.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                                     "name = 'schema_version'"));
    SYN_ASSIGN_OR_RETURN(const bool exists, table.step());
    if (!exists) return std::optional<int64_t>();
    SYN_ASSIGN_OR_RETURN(SqliteStatement select,
                         db_.prepare("SELECT MAX(version) FROM schema_version"));
    SYN_ASSIGN_OR_RETURN(const bool row, select.step());
    return row ? select.column_optional_int(0) : std::nullopt;
  };
  auto check_newer = [this](std::optional<int64_t> version) -> Status {
    if (version && *version > kSchemaVersion) {
      return Status(ErrorCode::kUnsupportedVersion,
                    "the job database's schema version " + std::to_string(*version) +
                        " is newer than this build's (" + std::to_string(kSchemaVersion) + ")",
                    ErrorWhere{.path = db_.path()});
    }
    return ok_status();
  };
  SYN_ASSIGN_OR_RETURN(std::optional<int64_t> version, read_version());
  SYN_RETURN_IF_ERROR(check_newer(version));
  if (version == kSchemaVersion) return ok_status();

  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  SYN_ASSIGN_OR_RETURN(version, read_version());  // another process may have migrated meanwhile
  SYN_RETURN_IF_ERROR(check_newer(version));
  if (!version) {
    SYN_RETURN_IF_ERROR(db_.exec("CREATE TABLE schema_version(version INTEGER NOT NULL)"));
    SYN_RETURN_IF_ERROR(db_.exec(kSchemaV1));
    SYN_RETURN_IF_ERROR(db_.exec("INSERT INTO schema_version(version) VALUES (1)"));
    version = 1;
  }
  // Each migration runs in this transaction with its version row: a crash leaves the old version.
  if (*version < 2) {
    SYN_RETURN_IF_ERROR(db_.exec(kSchemaV2));
    SYN_RETURN_IF_ERROR(db_.exec("INSERT INTO schema_version(version) VALUES (2)"));
  }
  return txn.commit();
}

int64_t SqliteJobStore::now_ms() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void SqliteJobStore::set_fault_hook_for_testing(std::function<Status(std::string_view)> hook) {
  const std::lock_guard lock(mutex_);
  fault_hook_ = std::move(hook);
}

Status SqliteJobStore::add_event(std::string_view job_id, int64_t time_ms, std::string_view kind,
                                 std::string_view detail) {
  SYN_ASSIGN_OR_RETURN(
      SqliteStatement insert,
      db_.prepare("INSERT INTO events(job_id, time_ms, kind, detail) VALUES (?, ?, ?, ?)"));
  return insert.bind(1, job_id).bind(2, time_ms).bind(3, kind).bind(4, detail).run();
}

Result<SubmitResult> SqliteJobStore::submit(const Submission& submission,
                                            std::optional<std::string_view> idempotency_key) {
  SYN_RETURN_IF_ERROR(check_submission(submission, idempotency_key));
  const std::string digest = submission_digest(submission);
  const std::lock_guard lock(mutex_);
  // BEGIN IMMEDIATE takes the write lock before the lookup: two submits of the same request
  // (threads or processes) serialize here, and the second sees the first's job.
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  std::optional<std::string> existing;
  if (idempotency_key) {
    SYN_ASSIGN_OR_RETURN(
        SqliteStatement select,
        db_.prepare("SELECT id, request_digest FROM jobs WHERE idempotency_key = ?"));
    select.bind(1, *idempotency_key);
    SYN_ASSIGN_OR_RETURN(const bool found, select.step());
    if (found && select.column_text(1) != digest) {
      return Status(ErrorCode::kIdempotencyConflict,
                    "idempotency key '" + clip_for_echo(*idempotency_key) + "' belongs to job " +
                        select.column_text(0) + ", submitted with a different request",
                    ErrorWhere{.field = "Idempotency-Key"});
    }
    if (found) existing = select.column_text(0);
  } else {
    SYN_ASSIGN_OR_RETURN(SqliteStatement select,
                         db_.prepare("SELECT id FROM jobs WHERE request_digest = ? "
                                     "ORDER BY seq DESC LIMIT 1"));
    select.bind(1, digest);
    SYN_ASSIGN_OR_RETURN(const bool found, select.step());
    if (found) existing = select.column_text(0);
  }
  if (existing) {
    SYN_ASSIGN_OR_RETURN(JobInfo job, load_job(*existing));
    return SubmitResult{.job = std::move(job), .created = false};
  }

  const int64_t now = now_ms();
  const std::string id = new_job_id();
  const int64_t invalid_lines = invalid_line_count(submission);
  const int64_t execution_ttl_ms =
      submission.execution_ttl_ms.value_or(options_.default_execution_ttl_ms);
  SYN_ASSIGN_OR_RETURN(
      SqliteStatement insert_job,
      db_.prepare("INSERT INTO jobs(id, idempotency_key, request_digest, class, state, "
                  "item_count, invalid_line_count, line_errors, created_ms, updated_ms, "
                  "execution_ttl_ms, execution_deadline_ms, retention_ttl_ms) "
                  "VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?)"));
  insert_job.bind(1, id);
  if (idempotency_key) {
    insert_job.bind(2, *idempotency_key);
  } else {
    insert_job.bind_null(2);
  }
  insert_job.bind(3, digest)
      .bind(4, job_class_name(submission.job_class))
      .bind(5, static_cast<int64_t>(submission.requests.size()))
      .bind(6, invalid_lines)
      .bind(7, line_errors_json(submission.line_errors))
      .bind(8, now)
      .bind(9, now)
      .bind(10, execution_ttl_ms)
      .bind(11, now + execution_ttl_ms)
      .bind(12, submission.retention_ttl_ms.value_or(options_.default_retention_ttl_ms));
  SYN_RETURN_IF_ERROR(insert_job.run());

  SYN_ASSIGN_OR_RETURN(SqliteStatement insert_item,
                       db_.prepare("INSERT INTO items(job_id, idx, custom_id, url, body, state) "
                                   "VALUES (?, ?, ?, ?, ?, 'pending')"));
  for (size_t i = 0; i < submission.requests.size(); ++i) {
    const JobRequest& request = submission.requests[i];
    insert_item.reset();
    insert_item.bind(1, id)
        .bind(2, static_cast<int64_t>(i))
        .bind(3, request.custom_id)
        .bind(4, request.url)
        .bind(5, request.body);
    SYN_RETURN_IF_ERROR(insert_item.run());
  }
  if (submission.openai_batch) {
    const OpenAiBatch& batch = *submission.openai_batch;
    SYN_ASSIGN_OR_RETURN(SqliteStatement insert_batch,
                         db_.prepare("INSERT INTO openai_batches(job_id, input_file_id, endpoint, "
                                     "completion_window, metadata) VALUES (?, ?, ?, ?, ?)"));
    insert_batch.bind(1, id)
        .bind(2, batch.input_file_id)
        .bind(3, batch.endpoint)
        .bind(4, batch.completion_window)
        .bind(5, batch.metadata_json.empty() ? std::string_view("null") : batch.metadata_json);
    SYN_RETURN_IF_ERROR(insert_batch.run());
  }
  SYN_RETURN_IF_ERROR(add_event(id, now, "submitted",
                                std::to_string(submission.requests.size()) + " items, " +
                                    std::to_string(invalid_lines) + " invalid lines"));
  SYN_ASSIGN_OR_RETURN(JobInfo job, load_job(id));
  SYN_RETURN_IF_ERROR(txn.commit());
  return SubmitResult{.job = std::move(job), .created = true};
}

Result<std::optional<Lease>> SqliteJobStore::acquire(std::string_view owner,
                                                     int64_t lease_duration_ms) {
  if (lease_duration_ms <= 0) {
    return Status(ErrorCode::kInvalidArgument, "a lease lasts a positive time");
  }
  const std::lock_guard lock(mutex_);
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  // Batch before background, oldest first. A running job whose lease ran out belongs to a dead
  // (or hung) executor: taking it over with a new epoch fences that executor off.
  SYN_ASSIGN_OR_RETURN(SqliteStatement select,
                       db_.prepare("SELECT id, class, state, lease_owner FROM jobs "
                                   "WHERE ((state = 'queued' AND not_before_ms <= ?1) OR "
                                   "       (state = 'running' AND lease_deadline_ms <= ?1)) "
                                   "  AND execution_deadline_ms > ?1 "
                                   "ORDER BY class = 'background', seq LIMIT 1"));
  select.bind(1, now);
  SYN_ASSIGN_OR_RETURN(const bool found, select.step());
  if (!found) return std::optional<Lease>();
  Lease lease{.job_id = select.column_text(0),
              .owner = std::string(owner),
              .deadline_ms = now + lease_duration_ms,
              .job_class = job_class_from_name(select.column_text(1)).value_or(JobClass::kBatch)};
  const bool takeover = select.column_text(2) == "running";
  const std::string previous_owner = select.column_text(3);
  SYN_ASSIGN_OR_RETURN(
      SqliteStatement update,
      db_.prepare("UPDATE jobs SET state = 'running', lease_owner = ?, "
                  "lease_epoch = lease_epoch + 1, lease_deadline_ms = ?, attempts = attempts + 1, "
                  "updated_ms = ? WHERE id = ? RETURNING lease_epoch"));
  update.bind(1, owner).bind(2, lease.deadline_ms).bind(3, now).bind(4, lease.job_id);
  SYN_ASSIGN_OR_RETURN(const bool updated, update.step());
  if (!updated) return Status(ErrorCode::kInternal, "leased job vanished");
  lease.epoch = update.column_int(0);
  (void)update.step();
  std::string detail = "owner " + lease.owner + ", epoch " + std::to_string(lease.epoch);
  if (takeover) detail += ", taken over from expired lease of " + previous_owner;
  SYN_RETURN_IF_ERROR(add_event(lease.job_id, now, "leased", detail));
  SYN_RETURN_IF_ERROR(txn.commit());
  return std::optional<Lease>(std::move(lease));
}

Status SqliteJobStore::check_lease(const Lease& lease) {
  SYN_ASSIGN_OR_RETURN(SqliteStatement select,
                       db_.prepare("SELECT state, lease_epoch FROM jobs WHERE id = ?"));
  select.bind(1, lease.job_id);
  SYN_ASSIGN_OR_RETURN(const bool found, select.step());
  if (!found) return job_not_found(lease.job_id);
  return check_lease_state(lease, select.column_text(0), select.column_int(1));
}

Result<NextItems> SqliteJobStore::next_items(const Lease& lease, int64_t max_items) {
  const std::lock_guard lock(mutex_);
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  SYN_RETURN_IF_ERROR(check_lease(lease));
  NextItems next;
  SYN_ASSIGN_OR_RETURN(
      SqliteStatement select,
      db_.prepare("SELECT idx, custom_id, url, body, attempts, executed_count FROM items "
                  "WHERE job_id = ? AND state = 'pending' AND not_before_ms <= ? "
                  "ORDER BY idx LIMIT ?"));
  select.bind(1, lease.job_id).bind(2, now).bind(3, std::max<int64_t>(max_items, 0));
  while (true) {
    SYN_ASSIGN_OR_RETURN(const bool row, select.step());
    if (!row) break;
    next.items.push_back(WorkItem{.index = select.column_int(0),
                                  .custom_id = select.column_text(1),
                                  .url = select.column_text(2),
                                  .body = select.column_text(3),
                                  .attempts = select.column_int(4),
                                  .executed_before = select.column_int(5)});
  }
  if (next.items.empty()) {
    SYN_ASSIGN_OR_RETURN(SqliteStatement earliest,
                         db_.prepare("SELECT MIN(not_before_ms) FROM items "
                                     "WHERE job_id = ? AND state = 'pending'"));
    earliest.bind(1, lease.job_id);
    SYN_ASSIGN_OR_RETURN(const bool row, earliest.step());
    if (row) next.next_retry_ms = earliest.column_optional_int(0);
    return next;  // nothing written: the transaction rolls back
  }
  // Count the hand-out before the executor runs anything: a crash after this point shows up as
  // an execution without a result, which is what at-least-once means.
  SYN_ASSIGN_OR_RETURN(SqliteStatement count,
                       db_.prepare("UPDATE items SET executed_count = executed_count + 1 "
                                   "WHERE job_id = ? AND idx = ?"));
  for (const WorkItem& item : next.items) {
    count.reset();
    count.bind(1, lease.job_id).bind(2, item.index);
    SYN_RETURN_IF_ERROR(count.run());
  }
  SYN_RETURN_IF_ERROR(txn.commit());
  return next;
}

Result<CommitResult> SqliteJobStore::commit_page(const Lease& lease,
                                                 const std::vector<ItemOutcome>& outcomes) {
  SYN_ASSIGN_OR_RETURN(const std::vector<const ItemOutcome*> sorted, sorted_outcomes(outcomes));

  const std::lock_guard lock(mutex_);
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  SYN_RETURN_IF_ERROR(check_lease(lease));
  SYN_ASSIGN_OR_RETURN(SqliteStatement select_job,
                       db_.prepare("SELECT page_count FROM jobs WHERE id = ?"));
  select_job.bind(1, lease.job_id);
  SYN_ASSIGN_OR_RETURN(const bool job_found, select_job.step());
  if (!job_found) return job_not_found(lease.job_id);
  int64_t next_page = select_job.column_int(0);

  SYN_ASSIGN_OR_RETURN(
      SqliteStatement select_item,
      db_.prepare("SELECT custom_id, state, attempts FROM items WHERE job_id = ? AND idx = ?"));
  SYN_ASSIGN_OR_RETURN(
      SqliteStatement retry_item,
      db_.prepare("UPDATE items SET attempts = attempts + 1, not_before_ms = ?, "
                  "last_error_code = ?, last_error_message = ? WHERE job_id = ? AND idx = ?"));
  SYN_ASSIGN_OR_RETURN(
      SqliteStatement finish_item,
      db_.prepare("UPDATE items SET state = ?, attempts = attempts + 1, page = ?, "
                  "last_error_code = ?, last_error_message = ? WHERE job_id = ? AND idx = ?"));
  SYN_ASSIGN_OR_RETURN(
      SqliteStatement insert_page,
      db_.prepare("INSERT INTO result_pages(job_id, page, first_item, last_item, item_count, "
                  "bytes) VALUES (?, ?, ?, ?, ?, ?)"));

  CommitResult result;
  int64_t succeeded = 0;
  int64_t failed = 0;
  // Final outcomes accumulate into the current page until the next would overflow it.
  std::string page_bytes;
  std::vector<const ItemOutcome*> page_items;
  auto flush_page = [&]() -> Status {
    if (page_items.empty()) return ok_status();
    insert_page.reset();
    insert_page.bind(1, lease.job_id)
        .bind(2, next_page)
        .bind(3, page_items.front()->index)
        .bind(4, page_items.back()->index)
        .bind(5, static_cast<int64_t>(page_items.size()))
        .bind(6, page_bytes);
    SYN_RETURN_IF_ERROR(insert_page.run());
    for (const ItemOutcome* outcome : page_items) {
      const bool ok = outcome->error == ErrorCode::kOk;
      finish_item.reset();
      finish_item.bind(1, ok ? "succeeded" : "failed").bind(2, next_page);
      if (ok) {
        finish_item.bind_null(3).bind_null(4);
      } else {
        finish_item.bind(3, error_code_name(outcome->error)).bind(4, outcome->error_message);
      }
      finish_item.bind(5, lease.job_id).bind(6, outcome->index);
      SYN_RETURN_IF_ERROR(finish_item.run());
      (ok ? succeeded : failed) += 1;
    }
    result.pages.push_back(next_page++);
    page_bytes.clear();
    page_items.clear();
    return ok_status();
  };

  for (const ItemOutcome* outcome : sorted) {
    select_item.reset();
    select_item.bind(1, lease.job_id).bind(2, outcome->index);
    SYN_ASSIGN_OR_RETURN(const bool found, select_item.step());
    if (!found) {
      return Status(ErrorCode::kInvalidArgument,
                    "job " + lease.job_id + " has no item " + std::to_string(outcome->index));
    }
    if (select_item.column_text(1) != "pending") {
      return Status(ErrorCode::kInvalidArgument,
                    "item " + std::to_string(outcome->index) + " already has a committed result");
    }
    const std::string custom_id = select_item.column_text(0);
    const int64_t attempts = select_item.column_int(2) + 1;
    const bool transient = outcome->error != ErrorCode::kOk &&
                           error_code_info(outcome->error).retry == Retry::kTransient;
    if (transient && attempts < options_.max_item_attempts) {
      // Exponential back-off, recorded as the item's not-before time.
      const int64_t backoff_ms =
          retry_backoff_ms(attempts, options_.retry_backoff_ms, options_.max_retry_backoff_ms);
      retry_item.reset();
      retry_item.bind(1, now + backoff_ms)
          .bind(2, error_code_name(outcome->error))
          .bind(3, outcome->error_message)
          .bind(4, lease.job_id)
          .bind(5, outcome->index);
      SYN_RETURN_IF_ERROR(retry_item.run());
      ++result.retried_items;
      continue;
    }
    const std::string line = result_line(custom_id, *outcome);
    if (!page_items.empty() &&
        static_cast<int64_t>(page_bytes.size() + line.size()) > options_.max_page_bytes) {
      SYN_RETURN_IF_ERROR(flush_page());
    }
    page_bytes += line;
    page_items.push_back(outcome);
  }
  SYN_RETURN_IF_ERROR(flush_page());
  if (fault_hook_) SYN_RETURN_IF_ERROR(fault_hook_("items_updated"));
  result.committed_items = succeeded + failed;

  SYN_ASSIGN_OR_RETURN(
      SqliteStatement update_job,
      db_.prepare("UPDATE jobs SET succeeded_count = succeeded_count + ?, "
                  "failed_count = failed_count + ?, page_count = ?, updated_ms = ? WHERE id = ? "
                  "RETURNING item_count - succeeded_count - failed_count"));
  update_job.bind(1, succeeded)
      .bind(2, failed)
      .bind(3, next_page)
      .bind(4, now)
      .bind(5, lease.job_id);
  SYN_ASSIGN_OR_RETURN(const bool updated, update_job.step());
  if (!updated) return job_not_found(lease.job_id);
  result.pending_items = update_job.column_int(0);
  (void)update_job.step();
  if (fault_hook_) SYN_RETURN_IF_ERROR(fault_hook_("job_updated"));
  if (!result.pages.empty()) {
    SYN_RETURN_IF_ERROR(add_event(lease.job_id, now, "page",
                                  "pages " + std::to_string(result.pages.front()) + ".." +
                                      std::to_string(result.pages.back()) + ", " +
                                      std::to_string(result.committed_items) + " items, epoch " +
                                      std::to_string(lease.epoch)));
  }
  if (result.retried_items > 0) {
    SYN_RETURN_IF_ERROR(add_event(lease.job_id, now, "retry",
                                  std::to_string(result.retried_items) + " items back off"));
  }
  SYN_RETURN_IF_ERROR(txn.commit());
  return result;
}

Result<int64_t> SqliteJobStore::renew(Lease& lease, int64_t lease_duration_ms) {
  const std::lock_guard lock(mutex_);
  const int64_t deadline = now_ms() + lease_duration_ms;
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  SYN_RETURN_IF_ERROR(check_lease(lease));
  SYN_ASSIGN_OR_RETURN(SqliteStatement update,
                       db_.prepare("UPDATE jobs SET lease_deadline_ms = ? WHERE id = ?"));
  SYN_RETURN_IF_ERROR(update.bind(1, deadline).bind(2, lease.job_id).run());
  SYN_RETURN_IF_ERROR(txn.commit());
  lease.deadline_ms = deadline;
  return deadline;
}

Status SqliteJobStore::release(const Lease& lease, int64_t not_before_ms) {
  const std::lock_guard lock(mutex_);
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  SYN_RETURN_IF_ERROR(check_lease(lease));
  SYN_ASSIGN_OR_RETURN(SqliteStatement update,
                       db_.prepare("UPDATE jobs SET state = 'queued', lease_owner = NULL, "
                                   "lease_deadline_ms = NULL, not_before_ms = ?, updated_ms = ? "
                                   "WHERE id = ?"));
  SYN_RETURN_IF_ERROR(update.bind(1, not_before_ms).bind(2, now).bind(3, lease.job_id).run());
  SYN_RETURN_IF_ERROR(add_event(
      lease.job_id, now, "released",
      "until " + std::to_string(not_before_ms) + ", epoch " + std::to_string(lease.epoch)));
  return txn.commit();
}

Result<int64_t> SqliteJobStore::reclaim_leases(std::string_view owner_prefix) {
  const std::lock_guard lock(mutex_);
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  SYN_ASSIGN_OR_RETURN(SqliteStatement select,
                       db_.prepare("SELECT id, lease_owner FROM jobs WHERE state = 'running' AND "
                                   "substr(lease_owner, 1, length(?1)) = ?1"));
  select.bind(1, owner_prefix);
  std::vector<std::pair<std::string, std::string>> reclaimed;
  while (true) {
    SYN_ASSIGN_OR_RETURN(const bool row, select.step());
    if (!row) break;
    reclaimed.emplace_back(select.column_text(0), select.column_text(1));
  }
  for (const auto& [job_id, owner] : reclaimed) {
    SYN_ASSIGN_OR_RETURN(SqliteStatement update,
                         db_.prepare("UPDATE jobs SET lease_deadline_ms = ?, updated_ms = ? "
                                     "WHERE id = ?"));
    SYN_RETURN_IF_ERROR(update.bind(1, now).bind(2, now).bind(3, job_id).run());
    SYN_RETURN_IF_ERROR(add_event(job_id, now, "lease reclaimed", "from dead executor " + owner));
  }
  SYN_RETURN_IF_ERROR(txn.commit());
  return static_cast<int64_t>(reclaimed.size());
}

Status SqliteJobStore::finish_leased(const Lease& lease, JobState state, ErrorCode code,
                                     std::string_view message) {
  const std::lock_guard lock(mutex_);
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  SYN_RETURN_IF_ERROR(check_lease(lease));
  if (state == JobState::kCompleted) {
    SYN_ASSIGN_OR_RETURN(SqliteStatement pending,
                         db_.prepare("SELECT item_count - succeeded_count - failed_count "
                                     "FROM jobs WHERE id = ?"));
    pending.bind(1, lease.job_id);
    SYN_ASSIGN_OR_RETURN(const bool row, pending.step());
    if (row && pending.column_int(0) > 0) {
      return Status(ErrorCode::kJobNotFinished, "job " + lease.job_id + " still has " +
                                                    std::to_string(pending.column_int(0)) +
                                                    " items without a result");
    }
  }
  SYN_ASSIGN_OR_RETURN(
      SqliteStatement update,
      db_.prepare("UPDATE jobs SET state = ?, lease_owner = NULL, lease_deadline_ms = NULL, "
                  "finished_ms = ?, updated_ms = ?, error_code = ?, error_message = ? "
                  "WHERE id = ?"));
  update.bind(1, job_state_name(state)).bind(2, now).bind(3, now);
  if (code == ErrorCode::kOk) {
    update.bind_null(4).bind_null(5);
  } else {
    update.bind(4, error_code_name(code)).bind(5, message);
  }
  SYN_RETURN_IF_ERROR(update.bind(6, lease.job_id).run());
  SYN_RETURN_IF_ERROR(add_event(lease.job_id, now, job_state_name(state),
                                finish_event_detail(lease.epoch, code, message)));
  return txn.commit();
}

Status SqliteJobStore::complete(const Lease& lease) {
  return finish_leased(lease, JobState::kCompleted, ErrorCode::kOk, {});
}

Status SqliteJobStore::fail(const Lease& lease, ErrorCode code, std::string_view message) {
  return finish_leased(lease, JobState::kFailed, failure_code(code), message);
}

Result<JobInfo> SqliteJobStore::cancel(std::string_view job_id) {
  const std::lock_guard lock(mutex_);
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  SYN_ASSIGN_OR_RETURN(JobInfo job, load_job(job_id));
  if (is_terminal(job.state)) return job;
  // The epoch stays: the running executor's next call finds the state and reports
  // `job_cancelled` rather than `lease_lost`.
  SYN_ASSIGN_OR_RETURN(SqliteStatement update,
                       db_.prepare("UPDATE jobs SET state = 'cancelled', lease_deadline_ms = NULL, "
                                   "finished_ms = ?, updated_ms = ? WHERE id = ?"));
  SYN_RETURN_IF_ERROR(update.bind(1, now).bind(2, now).bind(3, job_id).run());
  SYN_RETURN_IF_ERROR(
      add_event(job_id, now, "cancelled", "was " + std::string(job_state_name(job.state))));
  SYN_ASSIGN_OR_RETURN(job, load_job(job_id));
  SYN_RETURN_IF_ERROR(txn.commit());
  return job;
}

}  // namespace synapse::jobs
