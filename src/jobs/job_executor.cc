// SPDX-License-Identifier: Apache-2.0
#include "jobs/job_executor.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace synapse::jobs {
namespace {

// lease_lost and job_cancelled end this executor's work on the job; they are not failures.
std::optional<ExecutorResult> ending(const Status& status) {
  if (status.code() == ErrorCode::kLeaseLost) return ExecutorResult::kLeaseLost;
  if (status.code() == ErrorCode::kJobCancelled) return ExecutorResult::kCancelled;
  return std::nullopt;
}

// For a call that had nothing of this executor's in flight (next_items, the renew after a commit,
// complete): on a shared job, lease_lost because another executor completed the job first is the
// end of the job, not a lost lease.
std::optional<ExecutorResult> ending_between_pages(JobStore& store, const Lease& lease,
                                                   const Status& status) {
  if (status.code() == ErrorCode::kLeaseLost) {
    Result<JobInfo> job = store.get_job(lease.job_id);
    if (job.ok() && job->state == JobState::kCompleted) return ExecutorResult::kShared;
  }
  return ending(status);
}

// A storage error ends this executor's work on the job. A transient one (a cut connection, a
// failover) usually lets the next call through, the store reconnecting: the lease is given back
// at once, so that its items are free for the job's other executors (or the next acquire) instead
// of waiting for it to run out. Whatever the release says, the error is what is returned.
Status give_back(JobStore& store, const Lease& lease, Status error) {
  if (error.is_transient()) (void)store.release(lease, 0);
  return error;
}

}  // namespace

std::vector<ItemOutcome> ItemRunner::run_page(std::span<const WorkItem> items,
                                              const std::function<bool()>& keep_going) {
  std::vector<ItemOutcome> outcomes;
  outcomes.reserve(items.size());
  for (const WorkItem& item : items) {
    if (!keep_going()) break;
    outcomes.push_back(run(item));
  }
  return outcomes;
}

Result<ExecutorResult> run_one_job(JobStore& store, ItemRunner& runner,
                                   const ExecutorOptions& options, Lease* leased) {
  SYN_ASSIGN_OR_RETURN(std::optional<Lease> lease,
                       store.acquire(options.owner, options.lease_duration_ms));
  if (!lease) return ExecutorResult::kNoJob;
  if (leased != nullptr) *leased = *lease;
  const auto stopping = [&] { return options.should_stop && options.should_stop(); };
  while (true) {
    if (stopping()) {
      const Status status = store.release(*lease, 0);
      if (auto end = ending(status)) return *end;
      SYN_RETURN_IF_ERROR(status);
      return ExecutorResult::kReleased;
    }
    Result<NextItems> next = store.next_items(*lease, options.items_per_commit);
    if (!next.ok()) {
      if (auto end = ending_between_pages(store, *lease, next.status())) return *end;
      return give_back(store, *lease, std::move(next).take_status());
    }
    if (next->items.empty() && next->held_by_others > 0) {
      // Other executors hold what is left: they finish the job. Runnable at once if this turns
      // out to be the last lease (the next executor releases it until its retries are due).
      const Status status = store.release(*lease, 0);
      if (status.code() == ErrorCode::kLeaseLost) return ExecutorResult::kShared;
      if (auto end = ending(status)) return *end;
      SYN_RETURN_IF_ERROR(status);
      return ExecutorResult::kShared;
    }
    if (next->items.empty()) {
      const Status status = next->next_retry_ms ? store.release(*lease, *next->next_retry_ms)
                                                : store.complete(*lease);
      if (auto end = ending_between_pages(store, *lease, status)) return *end;
      SYN_RETURN_IF_ERROR(status);
      return next->next_retry_ms ? ExecutorResult::kReleased : ExecutorResult::kCompleted;
    }
    // While the page runs: notices a cancel (or a takeover) within a second, and renews the
    // lease when it is due. Remembers why the job cannot go on.
    Status stopped;
    auto renewed_at = std::chrono::steady_clock::now();
    auto checked_at = renewed_at;
    const auto keep_going = [&]() -> bool {
      if (!stopped.ok() || stopping()) return false;
      const auto now = std::chrono::steady_clock::now();
      if (now - checked_at >= std::chrono::milliseconds(options.check_after_ms)) {
        checked_at = now;
        Result<JobInfo> job = store.get_job(lease->job_id);
        // Not the epoch: on a shared job (PostgreSQL) it moves whenever another executor joins.
        // A lost lease shows at the next renew.
        if (job.ok() && job->state == JobState::kCancelled) {
          stopped = Status(ErrorCode::kJobCancelled, "job " + lease->job_id + " was cancelled");
        } else if (job.ok() && job->state != JobState::kRunning) {
          stopped = Status(ErrorCode::kLeaseLost, "job " + lease->job_id + " is " +
                                                      std::string(job_state_name(job->state)));
        }
      }
      if (stopped.ok() && now - renewed_at >= std::chrono::milliseconds(options.renew_after_ms)) {
        renewed_at = now;
        Result<int64_t> renewed = store.renew(*lease, options.lease_duration_ms);
        if (!renewed.ok()) stopped = renewed.status();
      }
      return stopped.ok();
    };
    for (WorkItem& item : next->items) item.job_class = lease->job_class;
    const std::vector<ItemOutcome> outcomes = runner.run_page(next->items, keep_going);
    if (!stopped.ok()) {
      // A storage error while renewing ends this executor's work too: the lease is given back
      // (or runs out) and the job resumes from its first uncommitted item (what ran here runs
      // again).
      if (auto end = ending(stopped)) return *end;
      return give_back(store, *lease, stopped);
    }
    Result<CommitResult> committed = store.commit_page(*lease, outcomes);
    if (!committed.ok()) {
      if (auto end = ending(committed.status())) return *end;
      return give_back(store, *lease, std::move(committed).take_status());
    }
    if (options.on_commit) options.on_commit(*committed);
    Result<int64_t> renewed = store.renew(*lease, options.lease_duration_ms);
    if (!renewed.ok()) {
      if (auto end = ending_between_pages(store, *lease, renewed.status())) return *end;
      return give_back(store, *lease, std::move(renewed).take_status());
    }
  }
}

}  // namespace synapse::jobs
