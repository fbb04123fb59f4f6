// SPDX-License-Identifier: Apache-2.0
// The executor side of the job protocol as a small loop, so that the protocol is written once:
// lease a job, take its first items without a result, run them, commit their page, renew, repeat,
// complete. The server's scheduler will drive items through the engine instead of ItemRunner
// but keeps this order of calls (docs/jobs.md).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "jobs/job_store.h"

namespace synapse::jobs {

// Runs one item (the model call). Errors go in the outcome, classified by their code.
class ItemRunner {
 public:
  virtual ~ItemRunner() = default;
  virtual ItemOutcome run(const WorkItem& item) = 0;
};

struct ExecutorOptions {
  std::string owner;  // names this executor in leases and events (host:pid:thread)
  int64_t lease_duration_ms = 30'000;
  int64_t items_per_commit = 16;  // items run between two commits
};

enum class ExecutorResult : uint8_t {
  kNoJob,      // nothing runnable
  kCompleted,  // the job finished
  kReleased,   // every remaining item waits for a retry; the job went back to the queue
  kLeaseLost,  // another executor took the job over, or it expired
  kCancelled,  // the job was cancelled while it ran
};

// Leases the next runnable job and runs it until it completes or cannot go on. Storage errors are
// returned; the lease then runs out and another executor resumes from the first uncommitted item.
Result<ExecutorResult> run_one_job(JobStore& store, ItemRunner& runner,
                                   const ExecutorOptions& options);

}  // namespace synapse::jobs
