// SPDX-License-Identifier: Apache-2.0
#include "cli/serve_jobs.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "base/paths.h"
#include "jobs/job_store_open.h"
#include "pg/pg_db.h"

namespace synapse::cli {

void add_serve_jobs_options(CLI::App* cmd, ServeJobsOptions& options) {
  cmd->add_option("--jobs-db", options.database,
                  "Job database: a path (SQLite) or a postgresql:// URL shared by several nodes "
                  "(default: $SYNAPSE_JOBS_DB, else jobs.db in the state directory)");
  cmd->add_option("--job-workers", options.workers,
                  "Durable jobs executed at the same time (0: accept jobs, execute none)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  cmd->add_flag("--no-jobs", options.disabled, "Serve without the durable job routes");
}

Result<std::unique_ptr<ServeJobs>> ServeJobs::start(const ServeJobsOptions& options,
                                                    request::ItemCall call) {
  if (options.disabled) return std::unique_ptr<ServeJobs>();
  std::unique_ptr<ServeJobs> jobs(new ServeJobs());
  std::string location = jobs::job_store_location(options.database);
  if (location.empty()) {
    SYN_ASSIGN_OR_RETURN(location, jobs_database_path());
  }
  if (!is_postgres_url(location)) {
    const std::filesystem::path parent = std::filesystem::path(location).parent_path();
    if (!parent.empty()) SYN_RETURN_IF_ERROR(create_directories(parent.string()));
  }
  Result<jobs::OpenedJobStore> store = jobs::open_job_store(location);
  jobs->database_ = is_postgres_url(location) ? redacted_conninfo(location) : location;
  if (!store.ok()) {
    const Status& s = store.status();
    return Status(s.code(),
                  "cannot open the job database: " + s.message() +
                      " (choose another with --jobs-db, or serve with --no-jobs)",
                  ErrorWhere{.path = jobs->database_});
  }
  jobs->store_ = std::move(store->store);
  jobs->api_.store = jobs->store_.get();
  // A database this process cannot write (a read-only state directory or file): serve anyway, as
  // docs/jobs.md promises. Job reads answer; submit and cancel answer storage_read_only (503); no
  // executor runs, as it could not record a result (nor create its lock file beside the database).
  if (store->read_only) {
    std::fprintf(stderr,
                 "synapse serve: the job database %s is read-only: jobs can be listed and read, "
                 "new jobs are refused (storage_read_only) and none are executed\n",
                 jobs->database_.c_str());
    return jobs;
  }
  if (options.workers > 0) {
    request::JobWorkerOptions worker_options;
    std::string unlink_after_start;
    if (store->shared) {
      // Every node executes from a shared database: no executor lock applies (a dead node's
      // leases run out, or are reclaimed once its session is gone). The worker still wants a
      // lock file, so it gets one of its own, unlinked once it is open.
      std::string path = (std::filesystem::temp_directory_path() / "synapse-jobs-XXXXXX").string();
      const int fd = mkstemp(path.data());
      if (fd < 0) {
        return Status(ErrorCode::kIoError, "cannot create the job worker's private lock file",
                      ErrorWhere{.path = path});
      }
      close(fd);
      worker_options.lock_path = path;
      unlink_after_start = path;
    } else {
      worker_options.lock_path = jobs->database_ + ".executor-lock";
    }
    worker_options.workers = options.workers;
    worker_options.log = [](const std::string& line) {
      std::fprintf(stderr, "synapse serve: %s\n", line.c_str());
    };
    jobs->worker_ = std::make_unique<request::JobWorker>(*jobs->store_, std::move(call),
                                                         std::move(worker_options));
    const Status started = jobs->worker_->start();
    std::error_code ignored;
    if (!unlink_after_start.empty()) std::filesystem::remove(unlink_after_start, ignored);
    SYN_RETURN_IF_ERROR(started);
    request::JobWorker* worker = jobs->worker_.get();
    jobs->api_.on_submitted = [worker] { worker->notify(); };
  }
  return jobs;
}

ServeJobs::~ServeJobs() { stop(); }

void ServeJobs::stop() {
  if (worker_) worker_->stop();
}

}  // namespace synapse::cli
