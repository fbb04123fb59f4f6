// SPDX-License-Identifier: Apache-2.0
#include "cli/serve_jobs.h"

#include <cstdio>
#include <filesystem>

#include "base/paths.h"

namespace synapse::cli {

void add_serve_jobs_options(CLI::App* cmd, ServeJobsOptions& options) {
  cmd->add_option("--jobs-db", options.database,
                  "Job database (default: jobs.db in the state directory, $SYNAPSE_HOME)");
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
  if (options.database.empty()) {
    SYN_ASSIGN_OR_RETURN(jobs->database_, jobs_database_path());
  } else {
    jobs->database_ = options.database;
  }
  const std::filesystem::path parent = std::filesystem::path(jobs->database_).parent_path();
  if (!parent.empty()) SYN_RETURN_IF_ERROR(create_directories(parent.string()));
  Result<std::unique_ptr<jobs::SqliteJobStore>> store = jobs::SqliteJobStore::open(jobs->database_);
  if (!store.ok()) {
    const Status& s = store.status();
    return Status(s.code(),
                  "cannot open the job database: " + s.message() +
                      " (choose another with --jobs-db, or serve with --no-jobs)",
                  ErrorWhere{.path = jobs->database_});
  }
  jobs->store_ = std::move(*store);
  jobs->api_.store = jobs->store_.get();
  // A database this process cannot write (a read-only state directory or file): serve anyway, as
  // docs/jobs.md promises. Job reads answer; submit and cancel answer storage_read_only (503); no
  // executor runs, as it could not record a result (nor create its lock file beside the database).
  if (jobs->store_->read_only()) {
    std::fprintf(stderr,
                 "synapse serve: the job database %s is read-only: jobs can be listed and read, "
                 "new jobs are refused (storage_read_only) and none are executed\n",
                 jobs->database_.c_str());
    return jobs;
  }
  if (options.workers > 0) {
    request::JobWorkerOptions worker_options;
    worker_options.lock_path = jobs->database_ + ".executor-lock";
    worker_options.workers = options.workers;
    worker_options.log = [](const std::string& line) {
      std::fprintf(stderr, "synapse serve: %s\n", line.c_str());
    };
    jobs->worker_ = std::make_unique<request::JobWorker>(*jobs->store_, std::move(call),
                                                         std::move(worker_options));
    SYN_RETURN_IF_ERROR(jobs->worker_->start());
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
