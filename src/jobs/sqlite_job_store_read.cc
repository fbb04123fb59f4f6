// SPDX-License-Identifier: Apache-2.0
// SqliteJobStore: reading jobs, pages, items and events, listing, and retention.
#include <utility>

#include "jobs/job_store_common.h"
#include "jobs/sqlite_job_store.h"

namespace synapse::jobs {
namespace {

JobInfo read_job(const SqliteStatement& row, bool with_line_errors) {
  JobInfo job;
  job.id = row.column_text(0);
  job.idempotency_key = row.column_optional_text(1);
  job.request_digest = row.column_text(2);
  job.job_class = job_class_from_name(row.column_text(3)).value_or(JobClass::kBatch);
  job.state = job_state_from_name(row.column_text(4)).value_or(JobState::kFailed);
  job.counts = JobCounts{.total = row.column_int(5),
                         .succeeded = row.column_int(6),
                         .failed = row.column_int(7),
                         .invalid_lines = row.column_int(8)};
  job.attempts = row.column_int(9);
  job.page_count = row.column_int(10);
  job.lease_owner = row.column_optional_text(11);
  job.lease_epoch = row.column_int(12);
  job.lease_deadline_ms = row.column_optional_int(13);
  job.created_ms = row.column_int(14);
  job.updated_ms = row.column_int(15);
  job.execution_deadline_ms = row.column_int(16);
  job.retention_ttl_ms = row.column_int(17);
  job.finished_ms = row.column_optional_int(18);
  job.error_code = error_code_from_name(row.column_text(19)).value_or(ErrorCode::kOk);
  job.error_message = row.column_text(20);
  if (const std::optional<std::string> input_file_id = row.column_optional_text(22)) {
    job.openai_batch = OpenAiBatch{.input_file_id = *input_file_id,
                                   .endpoint = row.column_text(23),
                                   .completion_window = row.column_text(24),
                                   .metadata_json = row.column_text(25)};
  }
  if (with_line_errors) job.line_errors = parse_line_errors(row.column_text(21));
  return job;
}

}  // namespace

Result<JobInfo> SqliteJobStore::load_job(std::string_view job_id) {
  SYN_ASSIGN_OR_RETURN(SqliteStatement select,
                       db_.prepare("SELECT " + std::string(kJobColumns) + std::string(kJobTables) +
                                   " WHERE id = ?"));
  select.bind(1, job_id);
  SYN_ASSIGN_OR_RETURN(const bool found, select.step());
  if (!found) return job_not_found(job_id);
  return read_job(select, /*with_line_errors=*/true);
}

Result<JobInfo> SqliteJobStore::get_job(std::string_view job_id) {
  const std::lock_guard lock(mutex_);
  return load_job(job_id);
}

Result<std::vector<JobInfo>> SqliteJobStore::list_jobs(const JobFilter& filter) {
  const std::lock_guard lock(mutex_);
  std::string sql = "SELECT " + std::string(kJobColumns) + std::string(kJobTables) + " WHERE 1";
  if (filter.openai_batches_only) sql += " AND b.job_id IS NOT NULL";
  if (filter.state) sql += " AND state = ?1";
  if (filter.job_class) sql += " AND class = ?2";
  if (filter.after) sql += " AND seq < (SELECT seq FROM jobs WHERE id = ?3)";
  sql += " ORDER BY seq DESC LIMIT ?4";
  SYN_ASSIGN_OR_RETURN(SqliteStatement select, db_.prepare(sql));
  if (filter.state) select.bind(1, job_state_name(*filter.state));
  if (filter.job_class) select.bind(2, job_class_name(*filter.job_class));
  if (filter.after) select.bind(3, *filter.after);
  select.bind(4, std::clamp<int64_t>(filter.limit, 0, 1000));
  std::vector<JobInfo> jobs;
  while (true) {
    SYN_ASSIGN_OR_RETURN(const bool row, select.step());
    if (!row) break;
    // A batch object lists its line errors (OpenAI's `errors`); plain job listings stay lean.
    jobs.push_back(read_job(select, /*with_line_errors=*/filter.openai_batches_only));
  }
  return jobs;
}

Result<ResultPage> SqliteJobStore::result_page(std::string_view job_id, int64_t page) {
  const std::lock_guard lock(mutex_);
  // One read transaction: the page and the page count come from the same snapshot.
  SYN_RETURN_IF_ERROR(db_.exec("BEGIN"));
  struct Rollback {
    SqliteDb& db;
    ~Rollback() { (void)db.exec("ROLLBACK"); }
  } rollback{db_};
  SYN_ASSIGN_OR_RETURN(SqliteStatement job,
                       db_.prepare("SELECT page_count FROM jobs WHERE id = ?"));
  job.bind(1, job_id);
  SYN_ASSIGN_OR_RETURN(const bool job_found, job.step());
  if (!job_found) return job_not_found(job_id);
  const int64_t page_count = job.column_int(0);
  SYN_ASSIGN_OR_RETURN(SqliteStatement select,
                       db_.prepare("SELECT first_item, last_item, item_count, bytes "
                                   "FROM result_pages WHERE job_id = ? AND page = ?"));
  select.bind(1, job_id).bind(2, page);
  SYN_ASSIGN_OR_RETURN(const bool found, select.step());
  if (!found) {
    return Status(ErrorCode::kNotFound,
                  "job " + std::string(job_id) + " has " + std::to_string(page_count) +
                      " committed result pages; page " + std::to_string(page) + " is not one",
                  ErrorWhere{.field = "page"});
  }
  ResultPage result{.job_id = std::string(job_id),
                    .page = page,
                    .first_item = select.column_int(0),
                    .last_item = select.column_int(1),
                    .item_count = select.column_int(2),
                    .jsonl = select.column_text(3)};
  if (page + 1 < page_count) result.next_page = page + 1;
  return result;
}

Result<std::vector<JobEvent>> SqliteJobStore::events(std::string_view job_id) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(load_job(job_id).status());
  SYN_ASSIGN_OR_RETURN(
      SqliteStatement select,
      db_.prepare("SELECT time_ms, kind, detail FROM events WHERE job_id = ? ORDER BY seq"));
  select.bind(1, job_id);
  std::vector<JobEvent> events;
  while (true) {
    SYN_ASSIGN_OR_RETURN(const bool row, select.step());
    if (!row) break;
    events.push_back(JobEvent{.time_ms = select.column_int(0),
                              .kind = select.column_text(1),
                              .detail = select.column_text(2)});
  }
  return events;
}

Result<std::vector<ItemInfo>> SqliteJobStore::items(std::string_view job_id) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(load_job(job_id).status());
  SYN_ASSIGN_OR_RETURN(SqliteStatement select,
                       db_.prepare("SELECT idx, custom_id, state, attempts, executed_count, "
                                   "not_before_ms, last_error_code, last_error_message, page "
                                   "FROM items WHERE job_id = ? ORDER BY idx"));
  select.bind(1, job_id);
  std::vector<ItemInfo> items;
  while (true) {
    SYN_ASSIGN_OR_RETURN(const bool row, select.step());
    if (!row) break;
    items.push_back(
        ItemInfo{.index = select.column_int(0),
                 .custom_id = select.column_text(1),
                 .state = item_state_from_name(select.column_text(2)).value_or(ItemState::kPending),
                 .attempts = select.column_int(3),
                 .executed_count = select.column_int(4),
                 .not_before_ms = select.column_int(5),
                 .last_error = error_code_from_name(select.column_text(6)).value_or(ErrorCode::kOk),
                 .last_error_message = select.column_text(7),
                 .page = select.column_optional_int(8)});
  }
  return items;
}

Result<ExpireResult> SqliteJobStore::expire() {
  const std::lock_guard lock(mutex_);
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  ExpireResult result;
  // Past the execution deadline: expired. Committed pages stay readable until retention ends; a
  // running executor's next call reports `lease_lost`.
  SYN_ASSIGN_OR_RETURN(
      SqliteStatement overdue,
      db_.prepare("UPDATE jobs SET state = 'expired', lease_deadline_ms = NULL, finished_ms = ?1, "
                  "updated_ms = ?1 WHERE state IN ('queued', 'running') AND "
                  "execution_deadline_ms <= ?1 RETURNING id"));
  overdue.bind(1, now);
  std::vector<std::string> expired;
  while (true) {
    SYN_ASSIGN_OR_RETURN(const bool row, overdue.step());
    if (!row) break;
    expired.push_back(overdue.column_text(0));
  }
  for (const std::string& id : expired) {
    SYN_RETURN_IF_ERROR(add_event(id, now, "expired", "execution deadline passed"));
  }
  result.expired = static_cast<int64_t>(expired.size());
  // Retention counts from the end of the job; items, pages and events go with it (cascade).
  SYN_ASSIGN_OR_RETURN(SqliteStatement remove,
                       db_.prepare("DELETE FROM jobs WHERE finished_ms IS NOT NULL AND "
                                   "finished_ms + retention_ttl_ms <= ?"));
  SYN_RETURN_IF_ERROR(remove.bind(1, now).run());
  result.deleted = db_.changes();
  SYN_RETURN_IF_ERROR(txn.commit());
  return result;
}

}  // namespace synapse::jobs
