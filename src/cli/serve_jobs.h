// SPDX-License-Identifier: Apache-2.0
// The durable-jobs part of `synapse serve`: opens the job database (shared with `synapse jobs`),
// hands the HTTP server its job routes and runs the JobWorker that executes the jobs through the
// served model. `--jobs-db PATH|postgresql://URL` (default: $SYNAPSE_JOBS_DB, else the state
// directory's jobs.db; a PostgreSQL URL shares the jobs with every node pointed at it),
// `--job-workers N` (jobs executed at the same time; 0: accept and show jobs but execute none),
// `--no-jobs`.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "base/status.h"
#include "jobs/job_store.h"
#include "request/job_worker.h"
#include "server/jobs_api.h"

namespace synapse::cli {

struct ServeJobsOptions {
  bool disabled = false;
  std::string database;  // empty: $SYNAPSE_JOBS_DB, else jobs_database_path()
  size_t workers = 2;
};

void add_serve_jobs_options(CLI::App* cmd, ServeJobsOptions& options);

class ServeJobs {
 public:
  // Opens (creating) the database and starts the worker; `call` runs one item's request.
  // nullptr when --no-jobs.
  static Result<std::unique_ptr<ServeJobs>> start(const ServeJobsOptions& options,
                                                  request::ItemCall call);
  ~ServeJobs();  // stop()

  const server::JobsApi* api() const { return &api_; }
  // The path, or the URL without its password.
  const std::string& database() const { return database_; }
  // Stops executing: items in flight are cancelled and run again after the next start.
  void stop();

 private:
  ServeJobs() = default;
  std::string database_;
  std::unique_ptr<jobs::JobStore> store_;
  std::unique_ptr<request::JobWorker> worker_;
  std::unique_ptr<jobs::JobStore> api_store_;  // store_ for the routes, telling worker_ of cancels
  server::JobsApi api_;
};

}  // namespace synapse::cli
