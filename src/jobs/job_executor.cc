// SPDX-License-Identifier: Apache-2.0
#include "jobs/job_executor.h"

#include <optional>
#include <vector>

namespace synapse::jobs {
namespace {

// lease_lost and job_cancelled end this executor's work on the job; they are not failures.
std::optional<ExecutorResult> ending(const Status& status) {
  if (status.code() == ErrorCode::kLeaseLost) return ExecutorResult::kLeaseLost;
  if (status.code() == ErrorCode::kJobCancelled) return ExecutorResult::kCancelled;
  return std::nullopt;
}

}  // namespace

Result<ExecutorResult> run_one_job(JobStore& store, ItemRunner& runner,
                                   const ExecutorOptions& options) {
  SYN_ASSIGN_OR_RETURN(std::optional<Lease> lease,
                       store.acquire(options.owner, options.lease_duration_ms));
  if (!lease) return ExecutorResult::kNoJob;
  while (true) {
    Result<NextItems> next = store.next_items(*lease, options.items_per_commit);
    if (!next.ok()) {
      if (auto end = ending(next.status())) return *end;
      return std::move(next).take_status();
    }
    if (next->items.empty()) {
      const Status status = next->next_retry_ms ? store.release(*lease, *next->next_retry_ms)
                                                : store.complete(*lease);
      if (auto end = ending(status)) return *end;
      SYN_RETURN_IF_ERROR(status);
      return next->next_retry_ms ? ExecutorResult::kReleased : ExecutorResult::kCompleted;
    }
    std::vector<ItemOutcome> outcomes;
    outcomes.reserve(next->items.size());
    for (const WorkItem& item : next->items) outcomes.push_back(runner.run(item));
    Result<CommitResult> committed = store.commit_page(*lease, outcomes);
    if (!committed.ok()) {
      if (auto end = ending(committed.status())) return *end;
      return std::move(committed).take_status();
    }
    Result<int64_t> renewed = store.renew(*lease, options.lease_duration_ms);
    if (!renewed.ok()) {
      if (auto end = ending(renewed.status())) return *end;
      return std::move(renewed).take_status();
    }
  }
}

}  // namespace synapse::jobs
