// SPDX-License-Identifier: Apache-2.0
// PostgresJobStore: page commits, complete, fail and cancel. Every write by a claim starts with
// lock_claim() in its transaction (the job row's lock; postgres_job_store_claims.cc).
#include <algorithm>
#include <map>
#include <utility>

#include "jobs/job_store_common.h"
#include "jobs/postgres_job_store.h"
#include "jobs/postgres_job_store_internal.h"

namespace synapse::jobs {

Result<CommitResult> PostgresJobStore::commit_page(const Lease& lease,
                                                   const std::vector<ItemOutcome>& outcomes) {
  SYN_ASSIGN_OR_RETURN(const std::vector<const ItemOutcome*> sorted, sorted_outcomes(outcomes));
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(PgTransaction txn, PgTransaction::begin(db_));
  // Under the job row's lock: commits of the job's claims take page numbers one after another,
  // so no two commits write the same page and a committed page never changes.
  SYN_ASSIGN_OR_RETURN(int64_t next_page, lock_claim(lease));

  // The items of this commit, locked, in one round trip: a claim taking them over waits for this
  // commit (and then finds them committed), or this commit waits for it (and finds them handed
  // to the other claim).
  std::vector<int64_t> indexes;
  indexes.reserve(sorted.size());
  for (const ItemOutcome* outcome : sorted) indexes.push_back(outcome->index);
  SYN_ASSIGN_OR_RETURN(
      PgResult rows,
      db_.query("SELECT i.idx, i.custom_id, i.state, i.attempts, i.claim_epoch IS NOT NULL AND "
                "i.claim_epoch <> $3 AND EXISTS (SELECT 1 FROM job_claims c WHERE "
                "c.job_id = i.job_id AND c.epoch = i.claim_epoch) FROM items i "
                "WHERE i.job_id = $1 AND i.idx = ANY($2::bigint[]) FOR UPDATE OF i",
                PgParams().add(lease.job_id).add(pg_bigint_array(indexes)).add(lease.epoch)));
  struct Stored {
    std::string custom_id;
    std::string state;
    int64_t attempts = 0;
    bool held_by_other_claim = false;
  };
  std::map<int64_t, Stored> stored;
  for (int row = 0; row < rows.rows(); ++row) {
    stored[rows.integer(row, 0)] = Stored{.custom_id = rows.text(row, 1),
                                          .state = rows.text(row, 2),
                                          .attempts = rows.integer(row, 3),
                                          .held_by_other_claim = rows.text(row, 4) == "t"};
  }

  CommitResult result;
  int64_t succeeded = 0;
  int64_t failed = 0;
  // Column arrays for the two item updates (retries, finals), each one statement.
  std::vector<int64_t> retry_index;
  std::vector<std::optional<std::string>> retry_not_before;
  std::vector<std::optional<std::string>> retry_code;
  std::vector<std::optional<std::string>> retry_message;
  std::vector<int64_t> final_index;
  std::vector<std::optional<std::string>> final_state;
  std::vector<std::optional<std::string>> final_page;
  std::vector<std::optional<std::string>> final_code;
  std::vector<std::optional<std::string>> final_message;
  // Final outcomes accumulate into the current page until the next would overflow it.
  std::string page_bytes;
  std::vector<const ItemOutcome*> page_items;
  auto flush_page = [&]() -> Status {
    if (page_items.empty()) return ok_status();
    SYN_RETURN_IF_ERROR(
        db_.query("INSERT INTO result_pages(job_id, page, first_item, last_item, item_count, "
                  "bytes) VALUES ($1, $2, $3, $4, $5, $6)",
                  PgParams()
                      .add(lease.job_id)
                      .add(next_page)
                      .add(page_items.front()->index)
                      .add(page_items.back()->index)
                      .add(static_cast<int64_t>(page_items.size()))
                      .add(pg_text(page_bytes)))
            .status());
    for (const ItemOutcome* outcome : page_items) {
      const bool ok = outcome->error == ErrorCode::kOk;
      final_index.push_back(outcome->index);
      final_state.emplace_back(ok ? "succeeded" : "failed");
      final_page.emplace_back(std::to_string(next_page));
      if (ok) {
        final_code.emplace_back(std::nullopt);
        final_message.emplace_back(std::nullopt);
      } else {
        final_code.emplace_back(std::string(error_code_name(outcome->error)));
        final_message.emplace_back(outcome->error_message);
      }
      (ok ? succeeded : failed) += 1;
    }
    result.pages.push_back(next_page++);
    page_bytes.clear();
    page_items.clear();
    return ok_status();
  };

  for (const ItemOutcome* outcome : sorted) {
    const auto item = stored.find(outcome->index);
    if (item == stored.end()) {
      return Status(ErrorCode::kInvalidArgument,
                    "job " + lease.job_id + " has no item " + std::to_string(outcome->index));
    }
    if (item->second.state != "pending") {
      return Status(ErrorCode::kInvalidArgument,
                    "item " + std::to_string(outcome->index) + " already has a committed result");
    }
    if (item->second.held_by_other_claim) {
      // Handed to another executor after this lease ran out: that one commits it.
      return Status(ErrorCode::kLeaseLost, "item " + std::to_string(outcome->index) + " of job " +
                                               lease.job_id +
                                               " was handed to another executor after the lease "
                                               "at epoch " +
                                               std::to_string(lease.epoch) + " ran out");
    }
    const int64_t attempts = item->second.attempts + 1;
    const bool transient = outcome->error != ErrorCode::kOk &&
                           error_code_info(outcome->error).retry == Retry::kTransient;
    if (transient && attempts < options_.max_item_attempts) {
      retry_index.push_back(outcome->index);
      retry_not_before.emplace_back(
          std::to_string(now + retry_backoff_ms(attempts, options_.retry_backoff_ms,
                                                options_.max_retry_backoff_ms)));
      retry_code.emplace_back(std::string(error_code_name(outcome->error)));
      retry_message.emplace_back(outcome->error_message);
      ++result.retried_items;
      continue;
    }
    const std::string line = result_line(item->second.custom_id, *outcome);
    if (!page_items.empty() &&
        static_cast<int64_t>(page_bytes.size() + line.size()) > options_.max_page_bytes) {
      SYN_RETURN_IF_ERROR(flush_page());
    }
    page_bytes += line;
    page_items.push_back(outcome);
  }
  SYN_RETURN_IF_ERROR(flush_page());
  if (!retry_index.empty()) {
    SYN_RETURN_IF_ERROR(
        db_.query("UPDATE items SET attempts = items.attempts + 1, not_before_ms = u.not_before, "
                  "last_error_code = u.code, last_error_message = u.message "
                  "FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[]) "
                  "AS u(idx, not_before, code, message) "
                  "WHERE items.job_id = $1 AND items.idx = u.idx",
                  PgParams()
                      .add(lease.job_id)
                      .add(pg_bigint_array(retry_index))
                      .add(pg_text_array(retry_not_before))
                      .add(pg_text_array(retry_code))
                      .add(pg_text_array(retry_message)))
            .status());
  }
  if (!final_index.empty()) {
    SYN_RETURN_IF_ERROR(
        db_.query("UPDATE items SET state = u.state, attempts = items.attempts + 1, "
                  "page = u.page, last_error_code = u.code, last_error_message = u.message "
                  "FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[]) "
                  "AS u(idx, state, page, code, message) "
                  "WHERE items.job_id = $1 AND items.idx = u.idx",
                  PgParams()
                      .add(lease.job_id)
                      .add(pg_bigint_array(final_index))
                      .add(pg_text_array(final_state))
                      .add(pg_text_array(final_page))
                      .add(pg_text_array(final_code))
                      .add(pg_text_array(final_message)))
            .status());
  }
  if (fault_hook_) SYN_RETURN_IF_ERROR(fault_hook_("items_updated"));
  result.committed_items = succeeded + failed;

  SYN_ASSIGN_OR_RETURN(
      PgResult updated,
      db_.query("UPDATE jobs SET succeeded_count = succeeded_count + $1, "
                "failed_count = failed_count + $2, page_count = $3, updated_ms = $4 "
                "WHERE id = $5 RETURNING item_count - succeeded_count - failed_count",
                PgParams().add(succeeded).add(failed).add(next_page).add(now).add(lease.job_id)));
  if (updated.rows() == 0) return job_not_found(lease.job_id);
  result.pending_items = updated.integer(0, 0);
  if (fault_hook_) SYN_RETURN_IF_ERROR(fault_hook_("job_updated"));
  if (!result.pages.empty()) {
    SYN_RETURN_IF_ERROR(add_event(lease.job_id, now, "page",
                                  "pages " + std::to_string(result.pages.front()) + ".." +
                                      std::to_string(result.pages.back()) + ", " +
                                      std::to_string(result.committed_items) + " items, epoch " +
                                      std::to_string(lease.epoch) + ", node " + node_id_));
  }
  if (result.retried_items > 0) {
    SYN_RETURN_IF_ERROR(add_event(lease.job_id, now, "retry",
                                  std::to_string(result.retried_items) + " items back off"));
  }
  SYN_RETURN_IF_ERROR(txn.commit());
  return result;
}

Status PostgresJobStore::finish_leased(const Lease& lease, JobState state, ErrorCode code,
                                       std::string_view message) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(PgTransaction txn, PgTransaction::begin(db_));
  SYN_RETURN_IF_ERROR(lock_claim(lease).status());
  if (state == JobState::kCompleted) {
    SYN_ASSIGN_OR_RETURN(PgResult pending,
                         db_.query("SELECT item_count - succeeded_count - failed_count "
                                   "FROM jobs WHERE id = $1",
                                   PgParams().add(lease.job_id)));
    if (pending.rows() > 0 && pending.integer(0, 0) > 0) {
      return Status(ErrorCode::kJobNotFinished, "job " + lease.job_id + " still has " +
                                                    std::to_string(pending.integer(0, 0)) +
                                                    " items without a result");
    }
  }
  PgParams params;
  params.add(job_state_name(state)).add(now);
  if (code == ErrorCode::kOk) {
    params.add_null().add_null();
  } else {
    params.add(error_code_name(code)).add(pg_text(message));
  }
  params.add(lease.job_id);
  SYN_RETURN_IF_ERROR(
      db_.query("UPDATE jobs SET state = $1, lease_owner = NULL, lease_node = NULL, "
                "lease_deadline_ms = NULL, finished_ms = $2, updated_ms = $2, error_code = $3, "
                "error_message = $4 WHERE id = $5",
                params)
          .status());
  // Every claim of the job ends: the others' next calls find the job finished (lease_lost).
  SYN_RETURN_IF_ERROR(
      db_.query("DELETE FROM job_claims WHERE job_id = $1", PgParams().add(lease.job_id)).status());
  SYN_RETURN_IF_ERROR(add_event(lease.job_id, now, job_state_name(state),
                                finish_event_detail(lease.epoch, code, message)));
  return txn.commit();
}

Status PostgresJobStore::complete(const Lease& lease) {
  return finish_leased(lease, JobState::kCompleted, ErrorCode::kOk, {});
}

Status PostgresJobStore::fail(const Lease& lease, ErrorCode code, std::string_view message) {
  return finish_leased(lease, JobState::kFailed, failure_code(code), message);
}

Result<JobInfo> PostgresJobStore::cancel(std::string_view job_id) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(PgTransaction txn, PgTransaction::begin(db_));
  // Every claim's next call finds the state and reports `job_cancelled` (the state is checked
  // before the claim). RETURNING the old state makes this one step.
  SYN_ASSIGN_OR_RETURN(
      PgResult cancelled,
      db_.query("UPDATE jobs SET state = 'cancelled', lease_deadline_ms = NULL, "
                "finished_ms = $1, updated_ms = $1 FROM (SELECT id, state AS was FROM jobs "
                "WHERE id = $2 AND state IN ('queued', 'running') FOR NO KEY UPDATE) old "
                "WHERE jobs.id = old.id RETURNING old.was",
                PgParams().add(now).add(pg_text(job_id))));
  if (cancelled.rows() > 0) {
    SYN_RETURN_IF_ERROR(
        db_.query("DELETE FROM job_claims WHERE job_id = $1", PgParams().add(pg_text(job_id)))
            .status());
    SYN_RETURN_IF_ERROR(add_event(job_id, now, "cancelled", "was " + cancelled.text(0, 0)));
  }
  SYN_ASSIGN_OR_RETURN(JobInfo job, load_job(job_id));
  SYN_RETURN_IF_ERROR(txn.commit());
  return job;
}

}  // namespace synapse::jobs
