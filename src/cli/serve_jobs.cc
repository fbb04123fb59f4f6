// SPDX-License-Identifier: Apache-2.0
#include "cli/serve_jobs.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/paths.h"
#include "jobs/job_store_open.h"
#include "pg/pg_db.h"

namespace synapse::cli {
namespace {

// The store the HTTP routes use: the worker's, plus a word to the worker when a cancel succeeds,
// so the job's calls in flight stop at once (JobWorker::job_cancelled).
class CancelNotifyingStore final : public jobs::JobStore {
 public:
  CancelNotifyingStore(jobs::JobStore& store, request::JobWorker& worker)
      : store_(store), worker_(worker) {}

  Result<jobs::JobInfo> cancel(std::string_view job_id) override {
    Result<jobs::JobInfo> job = store_.cancel(job_id);
    if (job.ok() && job->state == jobs::JobState::kCancelled) worker_.job_cancelled(job->id);
    return job;
  }

  Result<jobs::SubmitResult> submit(const jobs::Submission& submission,
                                    std::optional<std::string_view> idempotency_key) override {
    return store_.submit(submission, idempotency_key);
  }
  Result<std::optional<jobs::Lease>> acquire(std::string_view owner,
                                             int64_t lease_duration_ms) override {
    return store_.acquire(owner, lease_duration_ms);
  }
  Result<jobs::NextItems> next_items(const jobs::Lease& lease, int64_t max_items) override {
    return store_.next_items(lease, max_items);
  }
  Result<jobs::CommitResult> commit_page(const jobs::Lease& lease,
                                         const std::vector<jobs::ItemOutcome>& outcomes) override {
    return store_.commit_page(lease, outcomes);
  }
  Result<int64_t> renew(jobs::Lease& lease, int64_t lease_duration_ms) override {
    return store_.renew(lease, lease_duration_ms);
  }
  Status release(const jobs::Lease& lease, int64_t not_before_ms) override {
    return store_.release(lease, not_before_ms);
  }
  Status complete(const jobs::Lease& lease) override { return store_.complete(lease); }
  Status fail(const jobs::Lease& lease, ErrorCode code, std::string_view message) override {
    return store_.fail(lease, code, message);
  }
  Result<int64_t> reclaim_leases(std::string_view owner_prefix) override {
    return store_.reclaim_leases(owner_prefix);
  }
  Result<jobs::JobInfo> get_job(std::string_view job_id) override { return store_.get_job(job_id); }
  Result<std::vector<jobs::JobInfo>> list_jobs(const jobs::JobFilter& filter) override {
    return store_.list_jobs(filter);
  }
  Result<jobs::ResultPage> result_page(std::string_view job_id, int64_t page) override {
    return store_.result_page(job_id, page);
  }
  Result<std::vector<jobs::JobEvent>> events(std::string_view job_id) override {
    return store_.events(job_id);
  }
  Result<std::vector<jobs::ItemInfo>> items(std::string_view job_id) override {
    return store_.items(job_id);
  }
  Result<jobs::ExpireResult> expire() override { return store_.expire(); }
  Result<jobs::StoredFile> create_file(std::string_view filename, std::string_view purpose,
                                       std::string_view content) override {
    return store_.create_file(filename, purpose, content);
  }
  Result<jobs::StoredFile> get_file(std::string_view file_id) override {
    return store_.get_file(file_id);
  }
  Result<std::string> file_content(std::string_view file_id) override {
    return store_.file_content(file_id);
  }
  Result<std::vector<jobs::StoredFile>> list_files(const jobs::FileFilter& filter) override {
    return store_.list_files(filter);
  }
  Status delete_file(std::string_view file_id) override { return store_.delete_file(file_id); }

 private:
  jobs::JobStore& store_;
  request::JobWorker& worker_;
};

}  // namespace

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
      // Any node notices a dead one (its database session gone) within this long.
      worker_options.reclaim_every = std::chrono::seconds(2);
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
    jobs->api_.render_metrics = [worker] { return worker->render_prometheus(); };
    jobs->api_store_ = std::make_unique<CancelNotifyingStore>(*jobs->store_, *worker);
    jobs->api_.store = jobs->api_store_.get();
  }
  return jobs;
}

ServeJobs::~ServeJobs() { stop(); }

void ServeJobs::stop() {
  if (worker_) worker_->stop();
}

}  // namespace synapse::cli
