// SPDX-License-Identifier: Apache-2.0
// The executor side of the job protocol as a small loop, so that the protocol is written once:
// lease a job, take its first items without a result, run them, commit their page, renew, repeat,
// complete. The server runs it with an ItemRunner that submits a page's items to the engine
// loop together (request/job_worker.h); tests run it with counting runners (docs/jobs.md).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/job_store.h"

namespace synapse::jobs {

// Runs items (the model calls). Errors go in the outcome, classified by their code.
class ItemRunner {
 public:
  virtual ~ItemRunner() = default;
  virtual ItemOutcome run(const WorkItem& item) = 0;
  // Runs the items of one page, concurrently if the runner can, and returns the outcomes of
  // those that ran. `keep_going` renews the lease when it is due and says whether the job may go
  // on (false: it was cancelled or another executor took it over); a runner calls it at least
  // every few seconds while items run, and when it says false stops (cancelling what is in
  // flight) and returns what finished — the rest stays pending. The default runs the items one
  // after another, asking before each.
  virtual std::vector<ItemOutcome> run_page(std::span<const WorkItem> items,
                                            const std::function<bool()>& keep_going);
};

struct ExecutorOptions {
  std::string owner;  // names this executor in leases and events (host:pid:thread)
  int64_t lease_duration_ms = 30'000;
  int64_t items_per_commit = 16;  // items run between two commits
  // keep_going() renews the lease once this much of it has passed (items may run for minutes).
  int64_t renew_after_ms = 10'000;
  // keep_going() reads the job's state this often, so a cancel stops its items within it.
  int64_t check_after_ms = 1000;
  // Asked before each page and by keep_going(): when it says true (the server is stopping) the
  // executor gives the job back to the queue, runnable at once, and returns kReleased.
  std::function<bool()> should_stop;
  // Called after each page commit that succeeded (the server counts it in /metrics); may be empty.
  std::function<void(const CommitResult&)> on_commit;
};

enum class ExecutorResult : uint8_t {
  kNoJob,      // nothing runnable
  kCompleted,  // the job finished
  kReleased,   // the job went back to the queue: every remaining item waits for a retry, or
               // should_stop() said so
  kLeaseLost,  // another executor took the job over, or it expired
  kCancelled,  // the job was cancelled while it ran
  kShared,     // the job is left to its other executors (PostgreSQL, where several share a
               // job): they hold the items left, or one of them completed it first
};

// Leases the next runnable job and runs it until it completes or cannot go on. Storage errors are
// returned, a transient one (a cut connection) after giving the lease back so its items are free
// at once; otherwise the lease runs out. Another executor resumes from the first uncommitted item.
// While a page runs, keep_going() stops on a cancel or when the job left `running` (read every
// check_after_ms), and on a lost lease when it renews (every renew_after_ms): a takeover only
// happens to a lease that ran out, so an executor that stalled that long learns it then.
// `leased`, when given, receives the lease of the job it worked on (for logs).
Result<ExecutorResult> run_one_job(JobStore& store, ItemRunner& runner,
                                   const ExecutorOptions& options, Lease* leased = nullptr);

}  // namespace synapse::jobs
