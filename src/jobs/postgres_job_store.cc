// SPDX-License-Identifier: Apache-2.0
// PostgresJobStore: connecting, migrations and submission. Claims (acquire, next_items, renew,
// release, reclaim) are in postgres_job_store_claims.cc; commits, complete, fail and cancel in
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

// Version 2: several executors per job. A claim is one executor's lease on a job: its epoch (from
// the job's lease_epoch counter, bumped by each acquire), owner, node and deadline, and the range
// next_items last handed it; items.claim_epoch names the claim an item was handed to. A running
// job's v1 lease becomes a claim, so its executor keeps it. jobs.lease_deadline_ms is no longer
// written (a job's deadline is its claims' latest).
constexpr std::string_view kSchemaV2 = R"sql(
CREATE TABLE job_claims(
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  epoch BIGINT NOT NULL,
  owner TEXT NOT NULL,
  node TEXT,
  deadline_ms BIGINT NOT NULL,
  first_idx BIGINT,
  last_idx BIGINT,
  PRIMARY KEY(job_id, epoch)
);
ALTER TABLE items ADD COLUMN claim_epoch BIGINT;
INSERT INTO job_claims(job_id, epoch, owner, node, deadline_ms)
  SELECT id, lease_epoch, lease_owner, lease_node, lease_deadline_ms FROM jobs
  WHERE state = 'running' AND lease_owner IS NOT NULL AND lease_deadline_ms IS NOT NULL;
UPDATE jobs SET lease_deadline_ms = NULL;
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
  if (version < 2) {
    SYN_RETURN_IF_ERROR(db_.exec(kSchemaV2));
    SYN_RETURN_IF_ERROR(db_.exec("INSERT INTO schema_version(version) VALUES (2)"));
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

}  // namespace synapse::jobs
