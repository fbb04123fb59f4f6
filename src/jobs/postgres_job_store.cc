// SPDX-License-Identifier: Apache-2.0
// PostgresJobStore: connecting, migrations, submission and the start of the execution protocol
// (acquire, next_items). Commits and the rest of the lease protocol are in
// postgres_job_store_lease.cc; reading, listing, retention and files in postgres_job_store_read.cc.
#include "jobs/postgres_job_store.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <random>
#include <utility>

#include "base/echo.h"
#include "base/hash.h"
#include "base/utf8.h"
#include "jobs/job_store_common.h"
#include "jobs/postgres_job_store_internal.h"
#include "jobs/submission.h"

namespace synapse::jobs {
namespace {

// Advisory lock keys (the two-int4 form, a key space apart from the bigint node locks).
constexpr int kLockClassMigration = 0x53590001;
constexpr int kLockClassSubmit = 0x53590002;

// Version 1: the SQLite store's schema (its versions 1 and 2) with PostgreSQL types, plus the
// node that holds each lease. Later versions append migrations; a newer database is refused.
constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE jobs(
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- listing order and cursor
  id TEXT NOT NULL UNIQUE,
  idempotency_key TEXT UNIQUE,
  request_digest TEXT NOT NULL,
  class TEXT NOT NULL CHECK(class IN ('batch', 'background')),
  state TEXT NOT NULL CHECK(state IN ('queued', 'running', 'completed', 'failed', 'cancelled',
                                      'expired')),
  item_count BIGINT NOT NULL,
  succeeded_count BIGINT NOT NULL DEFAULT 0,
  failed_count BIGINT NOT NULL DEFAULT 0,
  invalid_line_count BIGINT NOT NULL DEFAULT 0,
  line_errors TEXT NOT NULL DEFAULT '[]',
  attempts BIGINT NOT NULL DEFAULT 0,
  page_count BIGINT NOT NULL DEFAULT 0,
  lease_owner TEXT,
  lease_node TEXT,                        -- the store (process) holding the lease
  lease_epoch BIGINT NOT NULL DEFAULT 0,
  lease_deadline_ms BIGINT,
  not_before_ms BIGINT NOT NULL DEFAULT 0,
  created_ms BIGINT NOT NULL,
  updated_ms BIGINT NOT NULL,
  execution_ttl_ms BIGINT NOT NULL,
  execution_deadline_ms BIGINT NOT NULL,
  retention_ttl_ms BIGINT NOT NULL,
  finished_ms BIGINT,
  error_code TEXT,
  error_message TEXT
);
CREATE INDEX jobs_by_state ON jobs(state, class, seq);
CREATE INDEX jobs_by_digest ON jobs(request_digest);

CREATE TABLE items(
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  idx BIGINT NOT NULL,
  custom_id TEXT NOT NULL,
  url TEXT NOT NULL,
  body TEXT NOT NULL,
  state TEXT NOT NULL CHECK(state IN ('pending', 'succeeded', 'failed')),
  attempts BIGINT NOT NULL DEFAULT 0,
  not_before_ms BIGINT NOT NULL DEFAULT 0,
  last_error_code TEXT,
  last_error_message TEXT,
  executed_count BIGINT NOT NULL DEFAULT 0,
  page BIGINT,
  PRIMARY KEY(job_id, idx),
  UNIQUE(job_id, custom_id)
);
CREATE INDEX items_pending ON items(job_id, idx) WHERE state = 'pending';

CREATE TABLE result_pages(
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  page BIGINT NOT NULL,
  first_item BIGINT NOT NULL,
  last_item BIGINT NOT NULL,
  item_count BIGINT NOT NULL,
  bytes TEXT NOT NULL,
  PRIMARY KEY(job_id, page)
);

CREATE TABLE events(
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  time_ms BIGINT NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL
);
CREATE INDEX events_by_job ON events(job_id, seq);

CREATE TABLE files(
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  filename TEXT NOT NULL,
  purpose TEXT NOT NULL,
  bytes BIGINT NOT NULL,
  content BYTEA NOT NULL,
  created_ms BIGINT NOT NULL
);
CREATE INDEX files_by_purpose ON files(purpose, seq);

CREATE TABLE openai_batches(
  job_id TEXT PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  input_file_id TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  completion_window TEXT NOT NULL,
  metadata TEXT NOT NULL DEFAULT 'null'
);
)sql";

// Items are inserted this many per statement: one round trip per chunk, statements of bounded
// size.
constexpr size_t kInsertChunk = 1000;

std::string default_node_name() {
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  return std::string(host.data()) + ":" + std::to_string(getpid());
}

std::string random_suffix() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  std::array<uint8_t, 6> bytes{};
  for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(generator());
  return to_hex(bytes);
}

int64_t system_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string pg_text(std::string_view text) {
  if (text.find('\0') == std::string_view::npos && is_valid_utf8(text)) return std::string(text);
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string clean;
  clean.reserve(text.size());
  while (!text.empty()) {
    const size_t bad = find_invalid_utf8(text).value_or(text.size());
    const std::string_view good = text.substr(0, bad);
    for (const char c : good) {
      if (c == '\0') {
        clean += kReplacement;
      } else {
        clean += c;
      }
    }
    if (bad == text.size()) break;
    clean += kReplacement;
    text.remove_prefix(bad + 1);
  }
  return clean;
}

std::string pg_bigint_array(const std::vector<int64_t>& values) {
  std::string array = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) array += ',';
    array += std::to_string(values[i]);
  }
  return array + "}";
}

std::string pg_text_array(const std::vector<std::optional<std::string>>& values) {
  std::string array = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) array += ',';
    if (!values[i]) {
      array += "NULL";
      continue;
    }
    array += '"';
    for (const char c : pg_text(*values[i])) {
      if (c == '"' || c == '\\') array += '\\';
      array += c;
    }
    array += '"';
  }
  return array + "}";
}

PostgresJobStore::PostgresJobStore(PgDb db, PostgresJobStoreOptions options)
    : db_(std::move(db)), options_(std::move(options)) {
  node_id_ = (options_.node_name.empty() ? default_node_name() : options_.node_name) + "/" +
             random_suffix();
}

Result<std::unique_ptr<PostgresJobStore>> PostgresJobStore::open(const std::string& conninfo,
                                                                 PostgresJobStoreOptions options) {
  SYN_ASSIGN_OR_RETURN(PgDb db, PgDb::connect(conninfo));
  std::unique_ptr<PostgresJobStore> store(new PostgresJobStore(std::move(db), std::move(options)));
  SYN_RETURN_IF_ERROR(store->migrate());
  SYN_RETURN_IF_ERROR(store->on_connect());
  return store;
}

Status PostgresJobStore::migrate() {
  // One transaction under a transaction-scoped advisory lock: nodes starting together migrate
  // once, the others wait and find the schema current; a failure leaves the old version whole
  // (PostgreSQL's DDL is transactional).
  SYN_ASSIGN_OR_RETURN(PgTransaction txn, PgTransaction::begin(db_));
  SYN_RETURN_IF_ERROR(
      db_.query("SELECT pg_advisory_xact_lock($1, 0)", PgParams().add(int64_t{kLockClassMigration}))
          .status());
  SYN_RETURN_IF_ERROR(
      db_.exec("CREATE TABLE IF NOT EXISTS schema_version(version BIGINT NOT NULL)"));
  SYN_ASSIGN_OR_RETURN(PgResult current, db_.query("SELECT MAX(version) FROM schema_version"));
  const int64_t version = current.integer(0, 0);
  if (version > kSchemaVersion) {
    return Status(ErrorCode::kUnsupportedVersion,
                  "the job database's schema version " + std::to_string(version) +
                      " is newer than this build's (" + std::to_string(kSchemaVersion) + ")",
                  ErrorWhere{.path = db_.name()});
  }
  if (version == kSchemaVersion) return ok_status();  // nothing written: roll back
  if (version < 1) {
    SYN_RETURN_IF_ERROR(db_.exec(kSchemaV1));
    SYN_RETURN_IF_ERROR(db_.exec("INSERT INTO schema_version(version) VALUES (1)"));
  }
  return txn.commit();
}

Status PostgresJobStore::on_connect() {
  // The node lock says "this node is alive" to reclaim_leases() on other nodes; the server drops
  // it when this session ends, crash included.
  SYN_RETURN_IF_ERROR(
      db_.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", PgParams().add(node_id_))
          .status());
  const int64_t before = system_now_ms();
  SYN_ASSIGN_OR_RETURN(PgResult server,
                       db_.query("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint"));
  const int64_t after = system_now_ms();
  clock_offset_ms_ = server.integer(0, 0) - (before + after) / 2;
  return ok_status();
}

Status PostgresJobStore::ready() {
  if (!db_.broken()) return ok_status();
  SYN_RETURN_IF_ERROR(db_.reconnect());
  return on_connect();
}

int64_t PostgresJobStore::now_ms() const {
  if (options_.clock) return options_.clock();
  return system_now_ms() + clock_offset_ms_;
}

void PostgresJobStore::set_fault_hook_for_testing(std::function<Status(std::string_view)> hook) {
  const std::lock_guard lock(mutex_);
  fault_hook_ = std::move(hook);
}

int PostgresJobStore::backend_pid_for_testing() {
  const std::lock_guard lock(mutex_);
  return db_.backend_pid();
}

Status PostgresJobStore::add_event(std::string_view job_id, int64_t time_ms, std::string_view kind,
                                   std::string_view detail) {
  return db_
      .query("INSERT INTO events(job_id, time_ms, kind, detail) VALUES ($1, $2, $3, $4)",
             PgParams().add(job_id).add(time_ms).add(kind).add(pg_text(detail)))
      .status();
}

Result<SubmitResult> PostgresJobStore::submit(const Submission& submission,
                                              std::optional<std::string_view> idempotency_key) {
  SYN_RETURN_IF_ERROR(check_submission(submission, idempotency_key));
  if (idempotency_key && pg_text(*idempotency_key) != *idempotency_key) {
    // A key is compared byte for byte; replacing bytes could make two keys one.
    return Status(ErrorCode::kInvalidValue, "an idempotency key is UTF-8 text without NUL bytes",
                  ErrorWhere{.field = "Idempotency-Key"});
  }
  const std::string digest = submission_digest(submission);
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  SYN_ASSIGN_OR_RETURN(PgTransaction txn, PgTransaction::begin(db_));
  // Submits of the same key (or, without one, the same request) serialize here, across nodes;
  // the lookup after the lock sees the job an earlier one committed.
  const std::string lock_name =
      idempotency_key ? "key:" + std::string(*idempotency_key) : "digest:" + digest;
  SYN_RETURN_IF_ERROR(db_.query("SELECT pg_advisory_xact_lock($1, hashtext($2))",
                                PgParams().add(int64_t{kLockClassSubmit}).add(lock_name))
                          .status());
  std::optional<std::string> existing;
  if (idempotency_key) {
    SYN_ASSIGN_OR_RETURN(PgResult found,
                         db_.query("SELECT id, request_digest FROM jobs WHERE idempotency_key = $1",
                                   PgParams().add(*idempotency_key)));
    if (found.rows() > 0 && found.text(0, 1) != digest) {
      return Status(ErrorCode::kIdempotencyConflict,
                    "idempotency key '" + clip_for_echo(*idempotency_key) + "' belongs to job " +
                        found.text(0, 0) + ", submitted with a different request",
                    ErrorWhere{.field = "Idempotency-Key"});
    }
    if (found.rows() > 0) existing = found.text(0, 0);
  } else {
    SYN_ASSIGN_OR_RETURN(PgResult found, db_.query("SELECT id FROM jobs WHERE request_digest = $1 "
                                                   "ORDER BY seq DESC LIMIT 1",
                                                   PgParams().add(digest)));
    if (found.rows() > 0) existing = found.text(0, 0);
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
  PgParams job_params;
  job_params.add(id);
  if (idempotency_key) {
    job_params.add(*idempotency_key);
  } else {
    job_params.add_null();
  }
  job_params.add(digest)
      .add(job_class_name(submission.job_class))
      .add(static_cast<int64_t>(submission.requests.size()))
      .add(invalid_lines)
      .add(pg_text(line_errors_json(submission.line_errors)))
      .add(now)
      .add(execution_ttl_ms)
      .add(now + execution_ttl_ms)
      .add(submission.retention_ttl_ms.value_or(options_.default_retention_ttl_ms));
  SYN_RETURN_IF_ERROR(
      db_.query("INSERT INTO jobs(id, idempotency_key, request_digest, class, state, item_count, "
                "invalid_line_count, line_errors, created_ms, updated_ms, execution_ttl_ms, "
                "execution_deadline_ms, retention_ttl_ms) "
                "VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, $8, $8, $9, $10, $11)",
                job_params)
          .status());

  for (size_t first = 0; first < submission.requests.size(); first += kInsertChunk) {
    const size_t last = std::min(submission.requests.size(), first + kInsertChunk);
    std::vector<int64_t> indexes;
    std::vector<std::optional<std::string>> custom_ids;
    std::vector<std::optional<std::string>> urls;
    std::vector<std::optional<std::string>> bodies;
    for (size_t i = first; i < last; ++i) {
      indexes.push_back(static_cast<int64_t>(i));
      custom_ids.emplace_back(submission.requests[i].custom_id);
      urls.emplace_back(submission.requests[i].url);
      bodies.emplace_back(submission.requests[i].body);
    }
    const Status inserted =
        db_.query(
               "INSERT INTO items(job_id, idx, custom_id, url, body, state) "
               "SELECT $1::text, u.*, 'pending' FROM unnest($2::bigint[], $3::text[], $4::text[], "
               "$5::text[]) AS u",
               PgParams()
                   .add(id)
                   .add(pg_bigint_array(indexes))
                   .add(pg_text_array(custom_ids))
                   .add(pg_text_array(urls))
                   .add(pg_text_array(bodies)))
            .status();
    if (inserted.code() == ErrorCode::kAlreadyExists) {
      // Only a hand-built submission repeats a custom_id (the parsers refuse it per line).
      return Status(ErrorCode::kDuplicateCustomId, "a custom_id appears twice in the submission",
                    ErrorWhere{.field = "custom_id"});
    }
    SYN_RETURN_IF_ERROR(inserted);
  }
  if (submission.openai_batch) {
    const OpenAiBatch& batch = *submission.openai_batch;
    SYN_RETURN_IF_ERROR(
        db_.query("INSERT INTO openai_batches(job_id, input_file_id, endpoint, "
                  "completion_window, metadata) VALUES ($1, $2, $3, $4, $5)",
                  PgParams()
                      .add(id)
                      .add(pg_text(batch.input_file_id))
                      .add(pg_text(batch.endpoint))
                      .add(pg_text(batch.completion_window))
                      .add(batch.metadata_json.empty() ? std::string("null")
                                                       : pg_text(batch.metadata_json)))
            .status());
  }
  SYN_RETURN_IF_ERROR(add_event(id, now, "submitted",
                                std::to_string(submission.requests.size()) + " items, " +
                                    std::to_string(invalid_lines) + " invalid lines"));
  SYN_ASSIGN_OR_RETURN(JobInfo job, load_job(id));
  SYN_RETURN_IF_ERROR(txn.commit());
  return SubmitResult{.job = std::move(job), .created = true};
}

Result<std::optional<Lease>> PostgresJobStore::acquire(std::string_view owner,
                                                       int64_t lease_duration_ms) {
  if (lease_duration_ms <= 0) {
    return Status(ErrorCode::kInvalidArgument, "a lease lasts a positive time");
  }
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(PgTransaction txn, PgTransaction::begin(db_));
  // Batch before background, oldest first. SKIP LOCKED: a job another node is claiming or
  // committing to right now is passed over, never waited for.
  SYN_ASSIGN_OR_RETURN(
      PgResult found, db_.query("SELECT id, class, state, lease_owner FROM jobs "
                                "WHERE ((state = 'queued' AND not_before_ms <= $1) OR "
                                "       (state = 'running' AND lease_deadline_ms <= $1)) "
                                "  AND execution_deadline_ms > $1 "
                                "ORDER BY class = 'background', seq LIMIT 1 FOR UPDATE SKIP LOCKED",
                                PgParams().add(now)));
  if (found.rows() == 0) return std::optional<Lease>();
  Lease lease{.job_id = found.text(0, 0),
              .owner = std::string(owner),
              .deadline_ms = now + lease_duration_ms,
              .job_class = job_class_from_name(found.text(0, 1)).value_or(JobClass::kBatch)};
  const bool takeover = found.text(0, 2) == "running";
  const std::string previous_owner = found.text(0, 3);
  SYN_ASSIGN_OR_RETURN(
      PgResult updated,
      db_.query("UPDATE jobs SET state = 'running', lease_owner = $1, lease_node = $2, "
                "lease_epoch = lease_epoch + 1, lease_deadline_ms = $3, attempts = attempts + 1, "
                "updated_ms = $4 WHERE id = $5 RETURNING lease_epoch",
                PgParams()
                    .add(pg_text(owner))
                    .add(node_id_)
                    .add(lease.deadline_ms)
                    .add(now)
                    .add(lease.job_id)));
  if (updated.rows() == 0) return Status(ErrorCode::kInternal, "leased job vanished");
  lease.epoch = updated.integer(0, 0);
  std::string detail =
      "owner " + lease.owner + ", node " + node_id_ + ", epoch " + std::to_string(lease.epoch);
  if (takeover) detail += ", taken over from expired lease of " + previous_owner;
  SYN_RETURN_IF_ERROR(add_event(lease.job_id, now, "leased", detail));
  SYN_RETURN_IF_ERROR(txn.commit());
  return std::optional<Lease>(std::move(lease));
}

Status PostgresJobStore::lock_lease(const Lease& lease) {
  // FOR UPDATE: a takeover or a cancel waits until this transaction ends, so the epoch checked
  // here is the epoch at commit.
  SYN_ASSIGN_OR_RETURN(PgResult job,
                       db_.query("SELECT state, lease_epoch FROM jobs WHERE id = $1 FOR UPDATE",
                                 PgParams().add(lease.job_id)));
  if (job.rows() == 0) return job_not_found(lease.job_id);
  return check_lease_state(lease, job.text(0, 0), job.integer(0, 1));
}

Result<NextItems> PostgresJobStore::next_items(const Lease& lease, int64_t max_items) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(PgTransaction txn, PgTransaction::begin(db_));
  SYN_RETURN_IF_ERROR(lock_lease(lease));
  // Counts each hand-out before the executor runs anything (a crash after this point shows up as
  // an execution without a result) and returns the items, in one statement.
  SYN_ASSIGN_OR_RETURN(
      PgResult rows,
      db_.query("UPDATE items SET executed_count = executed_count + 1 "
                "WHERE job_id = $1 AND idx IN (SELECT idx FROM items WHERE job_id = $1 AND "
                "state = 'pending' AND not_before_ms <= $2 ORDER BY idx LIMIT $3) "
                "RETURNING idx, custom_id, url, body, attempts, executed_count - 1",
                PgParams().add(lease.job_id).add(now).add(std::max<int64_t>(max_items, 0))));
  NextItems next;
  for (int row = 0; row < rows.rows(); ++row) {
    next.items.push_back(WorkItem{.index = rows.integer(row, 0),
                                  .custom_id = rows.text(row, 1),
                                  .url = rows.text(row, 2),
                                  .body = rows.text(row, 3),
                                  .attempts = rows.integer(row, 4),
                                  .executed_before = rows.integer(row, 5)});
  }
  // RETURNING gives no order: index order is part of the contract.
  std::sort(next.items.begin(), next.items.end(),
            [](const WorkItem& a, const WorkItem& b) { return a.index < b.index; });
  if (next.items.empty()) {
    SYN_ASSIGN_OR_RETURN(PgResult earliest, db_.query("SELECT MIN(not_before_ms) FROM items "
                                                      "WHERE job_id = $1 AND state = 'pending'",
                                                      PgParams().add(lease.job_id)));
    next.next_retry_ms = earliest.optional_integer(0, 0);
    return next;  // nothing written: the transaction rolls back
  }
  SYN_RETURN_IF_ERROR(txn.commit());
  return next;
}

}  // namespace synapse::jobs
