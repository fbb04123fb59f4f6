// SPDX-License-Identifier: Apache-2.0
// PostgresJobStore: reading jobs, pages, items and events, listing, retention, and the files of
// OpenAI's /v1/files.
#include <algorithm>
#include <utility>

#include "jobs/job_store_common.h"
#include "jobs/postgres_job_store.h"
#include "jobs/postgres_job_store_internal.h"

namespace synapse::jobs {
namespace {

JobInfo read_job(const PgResult& rows, int row, bool with_line_errors) {
  JobInfo job;
  job.id = rows.text(row, 0);
  job.idempotency_key = rows.optional_text(row, 1);
  job.request_digest = rows.text(row, 2);
  job.job_class = job_class_from_name(rows.text(row, 3)).value_or(JobClass::kBatch);
  job.state = job_state_from_name(rows.text(row, 4)).value_or(JobState::kFailed);
  job.counts = JobCounts{.total = rows.integer(row, 5),
                         .succeeded = rows.integer(row, 6),
                         .failed = rows.integer(row, 7),
                         .invalid_lines = rows.integer(row, 8)};
  job.attempts = rows.integer(row, 9);
  job.page_count = rows.integer(row, 10);
  job.lease_owner = rows.optional_text(row, 11);
  job.lease_epoch = rows.integer(row, 12);
  job.lease_deadline_ms = rows.optional_integer(row, 13);
  job.created_ms = rows.integer(row, 14);
  job.updated_ms = rows.integer(row, 15);
  job.execution_deadline_ms = rows.integer(row, 16);
  job.retention_ttl_ms = rows.integer(row, 17);
  job.finished_ms = rows.optional_integer(row, 18);
  job.error_code = error_code_from_name(rows.text(row, 19)).value_or(ErrorCode::kOk);
  job.error_message = rows.text(row, 20);
  if (const std::optional<std::string> input_file_id = rows.optional_text(row, 22)) {
    job.openai_batch = OpenAiBatch{.input_file_id = *input_file_id,
                                   .endpoint = rows.text(row, 23),
                                   .completion_window = rows.text(row, 24),
                                   .metadata_json = rows.text(row, 25)};
  }
  if (with_line_errors) job.line_errors = parse_line_errors(rows.text(row, 21));
  return job;
}

// kJobColumns with the lease deadline read from the job's claims (the latest of them): since
// schema version 2 the jobs row does not hold it, as renewing a claim does not touch the job row.
const std::string& job_columns() {
  static const std::string columns = [] {
    std::string text(kJobColumns);
    constexpr std::string_view kDeadline = "lease_deadline_ms,";
    const size_t at = text.find(kDeadline);
    text.replace(at, kDeadline.size(),
                 "(SELECT MAX(c.deadline_ms) FROM job_claims c WHERE c.job_id = jobs.id),");
    return text;
  }();
  return columns;
}

constexpr std::string_view kFileColumns = "id, filename, purpose, bytes, created_ms";

StoredFile read_file(const PgResult& rows, int row) {
  return StoredFile{.id = rows.text(row, 0),
                    .filename = rows.text(row, 1),
                    .purpose = rows.text(row, 2),
                    .bytes = rows.integer(row, 3),
                    .created_ms = rows.integer(row, 4)};
}

}  // namespace

Result<JobInfo> PostgresJobStore::load_job(std::string_view job_id) {
  SYN_ASSIGN_OR_RETURN(PgResult rows, db_.query("SELECT " + job_columns() +
                                                    std::string(kJobTables) + " WHERE id = $1",
                                                PgParams().add(pg_text(job_id))));
  if (rows.rows() == 0) return job_not_found(job_id);
  return read_job(rows, 0, /*with_line_errors=*/true);
}

Result<JobInfo> PostgresJobStore::get_job(std::string_view job_id) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  return load_job(job_id);
}

Result<std::vector<JobInfo>> PostgresJobStore::list_jobs(const JobFilter& filter) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  // Unused filters compare against NULL, so one statement serves every combination.
  std::string sql = "SELECT " + job_columns() + std::string(kJobTables) +
                    " WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR "
                    "class = $2) AND ($3::text IS NULL OR seq < (SELECT seq FROM jobs "
                    "WHERE id = $3))";
  if (filter.openai_batches_only) sql += " AND b.job_id IS NOT NULL";
  sql += " ORDER BY seq DESC LIMIT $4";
  PgParams params;
  if (filter.state) {
    params.add(job_state_name(*filter.state));
  } else {
    params.add_null();
  }
  if (filter.job_class) {
    params.add(job_class_name(*filter.job_class));
  } else {
    params.add_null();
  }
  if (filter.after) {
    params.add(pg_text(*filter.after));
  } else {
    params.add_null();
  }
  params.add(std::clamp<int64_t>(filter.limit, 0, 1000));
  SYN_ASSIGN_OR_RETURN(PgResult rows, db_.query(sql, params));
  std::vector<JobInfo> jobs;
  jobs.reserve(static_cast<size_t>(rows.rows()));
  for (int row = 0; row < rows.rows(); ++row) {
    // A batch object lists its line errors (OpenAI's `errors`); plain job listings stay lean.
    jobs.push_back(read_job(rows, row, /*with_line_errors=*/filter.openai_batches_only));
  }
  return jobs;
}

Result<ResultPage> PostgresJobStore::result_page(std::string_view job_id, int64_t page) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  // One statement: the page and the page count come from the same snapshot.
  SYN_ASSIGN_OR_RETURN(
      PgResult rows,
      db_.query("SELECT j.page_count, p.first_item, p.last_item, p.item_count, p.bytes "
                "FROM jobs j LEFT JOIN result_pages p ON p.job_id = j.id AND p.page = $2 "
                "WHERE j.id = $1",
                PgParams().add(pg_text(job_id)).add(page)));
  if (rows.rows() == 0) return job_not_found(job_id);
  const int64_t page_count = rows.integer(0, 0);
  if (rows.is_null(0, 1)) {
    return Status(ErrorCode::kNotFound,
                  "job " + std::string(job_id) + " has " + std::to_string(page_count) +
                      " committed result pages; page " + std::to_string(page) + " is not one",
                  ErrorWhere{.field = "page"});
  }
  ResultPage result{.job_id = std::string(job_id),
                    .page = page,
                    .first_item = rows.integer(0, 1),
                    .last_item = rows.integer(0, 2),
                    .item_count = rows.integer(0, 3),
                    .jsonl = rows.text(0, 4)};
  if (page + 1 < page_count) result.next_page = page + 1;
  return result;
}

Result<std::vector<JobEvent>> PostgresJobStore::events(std::string_view job_id) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  SYN_RETURN_IF_ERROR(load_job(job_id).status());
  SYN_ASSIGN_OR_RETURN(
      PgResult rows,
      db_.query("SELECT time_ms, kind, detail FROM events WHERE job_id = $1 ORDER BY seq",
                PgParams().add(pg_text(job_id))));
  std::vector<JobEvent> events;
  for (int row = 0; row < rows.rows(); ++row) {
    events.push_back(JobEvent{
        .time_ms = rows.integer(row, 0), .kind = rows.text(row, 1), .detail = rows.text(row, 2)});
  }
  return events;
}

Result<std::vector<ItemInfo>> PostgresJobStore::items(std::string_view job_id) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  SYN_RETURN_IF_ERROR(load_job(job_id).status());
  SYN_ASSIGN_OR_RETURN(PgResult rows,
                       db_.query("SELECT idx, custom_id, state, attempts, executed_count, "
                                 "not_before_ms, last_error_code, last_error_message, page "
                                 "FROM items WHERE job_id = $1 ORDER BY idx",
                                 PgParams().add(pg_text(job_id))));
  std::vector<ItemInfo> items;
  items.reserve(static_cast<size_t>(rows.rows()));
  for (int row = 0; row < rows.rows(); ++row) {
    items.push_back(
        ItemInfo{.index = rows.integer(row, 0),
                 .custom_id = rows.text(row, 1),
                 .state = item_state_from_name(rows.text(row, 2)).value_or(ItemState::kPending),
                 .attempts = rows.integer(row, 3),
                 .executed_count = rows.integer(row, 4),
                 .not_before_ms = rows.integer(row, 5),
                 .last_error = error_code_from_name(rows.text(row, 6)).value_or(ErrorCode::kOk),
                 .last_error_message = rows.text(row, 7),
                 .page = rows.optional_integer(row, 8)});
  }
  return items;
}

Result<ExpireResult> PostgresJobStore::expire() {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(PgTransaction txn, PgTransaction::begin(db_));
  ExpireResult result;
  // Past the execution deadline: expired. Committed pages stay readable until retention ends; a
  // running executor's next call reports `lease_lost`. Jobs another node is committing to are
  // skipped this time, not waited for.
  SYN_ASSIGN_OR_RETURN(
      PgResult expired,
      db_.query("UPDATE jobs SET state = 'expired', lease_deadline_ms = NULL, finished_ms = $1, "
                "updated_ms = $1 WHERE id IN (SELECT id FROM jobs WHERE state IN ('queued', "
                "'running') AND execution_deadline_ms <= $1 FOR NO KEY UPDATE SKIP LOCKED) "
                "RETURNING id",
                PgParams().add(now)));
  for (int row = 0; row < expired.rows(); ++row) {
    SYN_RETURN_IF_ERROR(
        add_event(expired.text(row, 0), now, "expired", "execution deadline passed"));
  }
  result.expired = expired.rows();
  // Their claims end (the executors' next calls report lease_lost).
  if (result.expired > 0) SYN_RETURN_IF_ERROR(delete_finished_claims());
  // Retention counts from the end of the job; items, pages and events go with it (cascade).
  SYN_ASSIGN_OR_RETURN(PgResult deleted,
                       db_.query("DELETE FROM jobs WHERE finished_ms IS NOT NULL AND "
                                 "finished_ms + retention_ttl_ms <= $1",
                                 PgParams().add(now)));
  result.deleted = deleted.affected();
  SYN_RETURN_IF_ERROR(txn.commit());
  return result;
}

Result<StoredFile> PostgresJobStore::create_file(std::string_view filename,
                                                 std::string_view purpose,
                                                 std::string_view content) {
  SYN_RETURN_IF_ERROR(check_new_file(filename, purpose, content.size(), options_.max_file_bytes));
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  StoredFile file{.id = new_file_id(),
                  .filename = pg_text(filename),
                  .purpose = pg_text(purpose),
                  .bytes = static_cast<int64_t>(content.size()),
                  .created_ms = now_ms()};
  SYN_RETURN_IF_ERROR(
      db_.query("INSERT INTO files(id, filename, purpose, bytes, content, created_ms) "
                "VALUES ($1, $2, $3, $4, $5, $6)",
                PgParams()
                    .add(file.id)
                    .add(file.filename)
                    .add(file.purpose)
                    .add(file.bytes)
                    .add_bytes(content)
                    .add(file.created_ms))
          .status());
  return file;
}

Result<StoredFile> PostgresJobStore::get_file(std::string_view file_id) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  SYN_ASSIGN_OR_RETURN(
      PgResult rows, db_.query("SELECT " + std::string(kFileColumns) + " FROM files WHERE id = $1",
                               PgParams().add(pg_text(file_id))));
  if (rows.rows() == 0) return file_not_found(file_id);
  return read_file(rows, 0);
}

Result<std::string> PostgresJobStore::file_content(std::string_view file_id) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  SYN_ASSIGN_OR_RETURN(PgResult rows, db_.query("SELECT content FROM files WHERE id = $1",
                                                PgParams().add(pg_text(file_id))));
  if (rows.rows() == 0) return file_not_found(file_id);
  return rows.bytes(0, 0);
}

Result<std::vector<StoredFile>> PostgresJobStore::list_files(const FileFilter& filter) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  std::string sql = "SELECT " + std::string(kFileColumns) +
                    " FROM files WHERE ($1::text IS NULL OR purpose = $1)";
  sql += filter.oldest_first
             ? " AND ($2::text IS NULL OR seq > (SELECT seq FROM files WHERE id = $2))"
               " ORDER BY seq LIMIT $3"
             : " AND ($2::text IS NULL OR seq < (SELECT seq FROM files WHERE id = $2))"
               " ORDER BY seq DESC LIMIT $3";
  PgParams params;
  if (filter.purpose) {
    params.add(pg_text(*filter.purpose));
  } else {
    params.add_null();
  }
  if (filter.after) {
    params.add(pg_text(*filter.after));
  } else {
    params.add_null();
  }
  params.add(std::clamp<int64_t>(filter.limit, 0, 100'000));
  SYN_ASSIGN_OR_RETURN(PgResult rows, db_.query(sql, params));
  std::vector<StoredFile> files;
  for (int row = 0; row < rows.rows(); ++row) files.push_back(read_file(rows, row));
  return files;
}

Status PostgresJobStore::delete_file(std::string_view file_id) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  SYN_ASSIGN_OR_RETURN(PgResult deleted, db_.query("DELETE FROM files WHERE id = $1",
                                                   PgParams().add(pg_text(file_id))));
  if (deleted.affected() == 0) return file_not_found(file_id);
  return ok_status();
}

}  // namespace synapse::jobs
