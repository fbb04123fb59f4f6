// SPDX-License-Identifier: Apache-2.0
// The executor of durable jobs inside `synapse serve`: it leases jobs from the JobStore and runs
// their items through the same Service (engine loop, scheduler) as HTTP requests, in the job's
// class (batch or background), so jobs never starve interactive traffic; each page's items are
// submitted together so the engine batches them. The protocol (lease, epoch, pages, retries) is
// jobs::run_one_job's; this class adds the threads, the wake-ups and crash recovery.
//
// Recovery: one server executes a database's jobs at a time. The worker takes an exclusive
// flock() on `<database>.executor-lock` before it runs anything (a second server on the same
// database serves HTTP and waits for the lock, taking over when the first one exits). Holding
// the lock proves every lease with our owner prefix belongs to a dead process, so the worker
// reclaims those leases at once (JobStore::reclaim_leases) instead of waiting for them to run out,
// and the jobs resume from their first uncommitted item. The kernel drops the lock when the
// process dies, SIGKILL included.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/status.h"
#include "jobs/job_executor.h"
#include "jobs/job_store.h"
#include "serve/request.h"

namespace synapse::request {

// Runs one item's request: url and body as submitted, in the job's class. Returns the JSON
// response or the error (queue_full is retried by the worker). Blocks; `cancelled` is to be
// polled, and when it says true the call should end soon with `cancelled`.
using ItemCall = std::function<Result<std::string>(std::string_view url, std::string_view body,
                                                   serve::RequestClass request_class,
                                                   const std::function<bool()>& cancelled)>;

struct JobWorkerOptions {
  std::string lock_path;  // usually the database path + ".executor-lock"
  size_t workers = 2;     // jobs run at the same time (each runs a page of items together)
  int64_t lease_duration_ms = 30'000;
  int64_t items_per_commit = 16;
  std::chrono::milliseconds poll{500};  // how often idle workers look for jobs without a notify
  // How often a running job's state is read, so a cancel made elsewhere (another node of a
  // shared database, `synapse jobs cancel`) stops its items within about this long.
  std::chrono::milliseconds cancel_check{250};
  std::chrono::milliseconds expire_every{60'000};  // retention / execution deadlines
  // Leases of dead executors are reclaimed at start; with a shared store (PostgreSQL, which
  // checks that each owner's node is gone) also this often, so a killed node's leases are taken
  // over within about this long without waiting for them to run out. 0: only at start (SQLite:
  // only the executor lock, held from the start, proves the owners dead, and later leases of our
  // prefix are our own).
  std::chrono::milliseconds reclaim_every{0};
  std::chrono::milliseconds queue_full_backoff{200};  // an item refused with queue_full waits
  // An item refused with `unavailable` (its model's worker process is restarting or cooling
  // down after repeated crashes) waits for the model, up to this long, without spending one of
  // its attempts; past it the refusal counts as a failed attempt.
  std::chrono::milliseconds unavailable_backoff{1000};
  std::chrono::milliseconds unavailable_patience{10 * 60 * 1000};
  std::function<void(const std::string&)> log;  // progress lines; empty: quiet
  // This node's label in /metrics and in the executors' owner names; empty: "HOST:PID".
  std::string node;
};

class JobWorker {
 public:
  JobWorker(jobs::JobStore& store, ItemCall call, JobWorkerOptions options);
  ~JobWorker();  // stop()
  JobWorker(const JobWorker&) = delete;
  JobWorker& operator=(const JobWorker&) = delete;

  // Starts the manager thread (lock, recovery, expiry) and the workers. An unusable lock file is
  // an error now; a lock held by another server is not (the worker waits for it).
  Status start();
  // A job was submitted: idle workers look at once instead of at their next poll.
  void notify();
  // The job was cancelled (JobStore::cancel succeeded): a worker running its items cancels the
  // calls in flight now, so their engine requests end within one step instead of at the
  // executor's next look at the job's state (JobWorkerOptions::cancel_check; that look still
  // catches cancels made elsewhere: another node, `synapse jobs cancel`). Any thread.
  void job_cancelled(std::string_view job_id);
  // Stops taking jobs: items in flight are cancelled (they run again after a restart), finished
  // ones are committed and each job goes back to the queue. Joins the threads and releases the
  // executor lock (a server waiting for it takes over). Idempotent.
  void stop();

  bool executing() const { return executing_.load(); }  // holds the lock (tests, logs)
  // The executors' work for GET /metrics (Prometheus text), every series labelled
  // node="HOST:PID", so the nodes sharing a PostgreSQL job store can be told apart:
  // synapse_jobs_items_committed_total, synapse_jobs_items_retried_total,
  // synapse_jobs_pages_committed_total, synapse_jobs_leases_total{result} and
  // synapse_jobs_pages_running. Any thread.
  std::string render_prometheus() const;
  const std::string& node() const { return node_; }
  // The owner recorded in leases: "synapse-serve/HOST:PID/worker-N".
  static std::string owner_prefix() { return "synapse-serve/"; }

 private:
  class PageRunner;
  // A page in flight: its job, and how to stop its calls.
  struct RunningPage {
    const std::string* job_id;
    std::atomic<bool>* abort;
    std::condition_variable* wake;
  };
  void manage();
  void work(size_t index);
  bool wait_for_work(std::chrono::milliseconds timeout);
  void say(const std::string& line) const;

  // How a lease ended, for synapse_jobs_leases_total: the ExecutorResults after kNoJob, then a
  // storage error.
  static constexpr size_t kLeaseResults = 6;
  void count_lease(size_t result);

  jobs::JobStore& store_;
  ItemCall call_;
  JobWorkerOptions options_;
  std::string node_;  // "HOST:PID" unless options_.node says otherwise
  std::atomic<uint64_t> items_committed_{0};
  std::atomic<uint64_t> items_retried_{0};
  std::atomic<uint64_t> pages_committed_{0};
  std::atomic<int64_t> pages_running_{0};
  std::array<std::atomic<uint64_t>, kLeaseResults> leases_{};
  int lock_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> executing_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t notifications_ = 0;  // guarded by mu_
  std::mutex running_mu_;
  std::vector<RunningPage> running_;  // guarded by running_mu_
  std::thread manager_;
  std::vector<std::thread> workers_;  // started by the manager once it holds the lock
};

}  // namespace synapse::request
