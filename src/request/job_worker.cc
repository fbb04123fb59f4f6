// SPDX-License-Identifier: Apache-2.0
#include "request/job_worker.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

namespace synapse::request {
namespace {

using namespace std::chrono_literals;

// How often a running page asks the executor whether to go on (it renews the lease and reads the
// job's state when they are due).
constexpr auto kPagePoll = 50ms;

serve::RequestClass request_class_of(jobs::JobClass c) {
  return c == jobs::JobClass::kBackground ? serve::RequestClass::kBackground
                                          : serve::RequestClass::kBatch;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// A Prometheus label value: backslash, quote and newline escaped.
std::string label_value(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// synapse_jobs_leases_total's result label, indexed as JobWorker counts them.
constexpr std::array<std::string_view, 6> kLeaseResultNames = {
    "completed", "released", "lease_lost", "cancelled", "shared", "error"};

size_t lease_result_index(jobs::ExecutorResult result) {
  switch (result) {
    case jobs::ExecutorResult::kCompleted:
      return 0;
    case jobs::ExecutorResult::kReleased:
      return 1;
    case jobs::ExecutorResult::kLeaseLost:
      return 2;
    case jobs::ExecutorResult::kCancelled:
      return 3;
    case jobs::ExecutorResult::kShared:
    case jobs::ExecutorResult::kNoJob:  // not counted (the caller skips it)
      return 4;
  }
  return 4;
}

}  // namespace

// Runs a page's items at the same time, one thread each, so the engine loop batches them (the
// Service decodes every admitted sequence in one step). Threads, not a pool: a page is at most
// items_per_commit items and each thread only waits on its request's events.
class JobWorker::PageRunner final : public jobs::ItemRunner {
 public:
  // `job_id` is the job being run (the worker thread's lease, set before any page runs).
  PageRunner(JobWorker& worker, const std::string& job_id) : worker_(worker), job_id_(job_id) {}

  jobs::ItemOutcome run(const jobs::WorkItem& item) override {
    const std::atomic<bool> never{false};
    std::optional<jobs::ItemOutcome> outcome = run_item(item, never);
    if (outcome) return std::move(*outcome);
    // Abandoned because the server is stopping: a transient error, so the item runs again.
    return jobs::ItemOutcome::failure(item.index, ErrorCode::kUnavailable,
                                      "the server is stopping");
  }

  std::vector<jobs::ItemOutcome> run_page(std::span<const jobs::WorkItem> items,
                                          const std::function<bool()>& keep_going) override {
    std::vector<std::optional<jobs::ItemOutcome>> outcomes(items.size());
    std::atomic<bool> abort{false};
    std::mutex mu;
    std::condition_variable done_cv;
    size_t done = 0;
    // Registered so that job_cancelled() can stop the calls at once.
    const RunningPage self{.job_id = &job_id_, .abort = &abort, .wake = &done_cv};
    worker_.pages_running_.fetch_add(1);
    {
      const std::lock_guard lock(worker_.running_mu_);
      worker_.running_.push_back(self);
    }
    std::vector<std::thread> threads;
    threads.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      threads.emplace_back([&, i] {
        std::optional<jobs::ItemOutcome> outcome = run_item(items[i], abort);
        const std::lock_guard lock(mu);
        outcomes[i] = std::move(outcome);
        ++done;
        done_cv.notify_one();
      });
    }
    {
      std::unique_lock lock(mu);
      while (done < items.size()) {
        done_cv.wait_for(lock, kPagePoll);
        if (abort.load()) continue;
        lock.unlock();
        const bool go_on = keep_going();  // may write the store: not under our lock
        lock.lock();
        if (!go_on) abort = true;
      }
    }
    for (std::thread& t : threads) t.join();
    {
      const std::lock_guard lock(worker_.running_mu_);
      std::erase_if(worker_.running_, [&](const RunningPage& p) { return p.abort == &abort; });
    }
    worker_.pages_running_.fetch_sub(1);
    std::vector<jobs::ItemOutcome> finished;
    for (std::optional<jobs::ItemOutcome>& o : outcomes) {
      if (o) finished.push_back(std::move(*o));
    }
    return finished;
  }

 private:
  // nullopt: abandoned (the job stops or the server does); the item stays pending.
  std::optional<jobs::ItemOutcome> run_item(const jobs::WorkItem& item,
                                            const std::atomic<bool>& abort) const {
    const std::function<bool()> cancelled = [&] {
      return abort.load() || worker_.stopping_.load();
    };
    const auto patience_ends =
        std::chrono::steady_clock::now() + worker_.options_.unavailable_patience;
    for (;;) {
      if (cancelled()) return std::nullopt;  // e.g. cancelled while waiting out a full queue
      Result<std::string> response =
          worker_.call_(item.url, item.body, request_class_of(item.job_class), cancelled);
      if (cancelled()) return std::nullopt;
      if (response.ok()) return jobs::ItemOutcome::success(item.index, std::move(*response));
      // A full queue is the scheduler pushing back, not a failure of the item: wait and retry
      // without spending one of its attempts.
      if (response.status().code() == ErrorCode::kQueueFull) {
        std::this_thread::sleep_for(worker_.options_.queue_full_backoff);
        continue;
      }
      // The model is down for a while (a worker restarting or cooling down after a crash
      // loop: docs/serving.md#worker-processes---isolate); the item waits for it rather than
      // spend its attempts on refusals within seconds of each other.
      if (response.status().code() == ErrorCode::kUnavailable &&
          std::chrono::steady_clock::now() < patience_ends) {
        std::this_thread::sleep_for(worker_.options_.unavailable_backoff);
        continue;
      }
      return jobs::ItemOutcome::failure(item.index, response.status().code(),
                                        response.status().message());
    }
  }

  JobWorker& worker_;
  const std::string& job_id_;
};

JobWorker::JobWorker(jobs::JobStore& store, ItemCall call, JobWorkerOptions options)
    : store_(store),
      call_(std::move(call)),
      options_(std::move(options)),
      node_(options_.node.empty() ? host_name() + ":" + std::to_string(getpid()) : options_.node) {}

JobWorker::~JobWorker() { stop(); }

Status JobWorker::start() {
  lock_fd_ = open(options_.lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) {
    return Status(ErrorCode::kIoError,
                  std::string("cannot open the job executor's lock file: ") + std::strerror(errno),
                  ErrorWhere{.path = options_.lock_path});
  }
  manager_ = std::thread([this] { manage(); });
  return ok_status();
}

void JobWorker::notify() {
  {
    const std::lock_guard lock(mu_);
    ++notifications_;
  }
  cv_.notify_all();
}

void JobWorker::job_cancelled(std::string_view job_id) {
  const std::lock_guard lock(running_mu_);
  for (const RunningPage& page : running_) {
    if (*page.job_id != job_id) continue;
    page.abort->store(true);
    page.wake->notify_all();
  }
}

void JobWorker::stop() {
  if (stopping_.exchange(true)) return;
  cv_.notify_all();
  if (manager_.joinable()) manager_.join();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
  // Another server waiting for this database's jobs may take over now.
  if (lock_fd_ >= 0) close(lock_fd_);
  lock_fd_ = -1;
}

void JobWorker::count_lease(size_t result) { leases_[result].fetch_add(1); }

std::string JobWorker::render_prometheus() const {
  const std::string node = "node=\"" + label_value(node_) + "\"";
  const auto counter = [&](std::string_view name, std::string_view help, uint64_t value) {
    return "# HELP " + std::string(name) + " " + std::string(help) + "\n# TYPE " +
           std::string(name) + " counter\n" + std::string(name) + "{" + node + "} " +
           std::to_string(value) + "\n";
  };
  std::string out;
  out += counter("synapse_jobs_items_committed_total",
                 "Job items whose final results this node committed.", items_committed_.load());
  out += counter("synapse_jobs_items_retried_total",
                 "Job items this node ran that failed transiently and wait for a retry.",
                 items_retried_.load());
  out += counter("synapse_jobs_pages_committed_total", "Job result pages this node committed.",
                 pages_committed_.load());
  out +=
      "# HELP synapse_jobs_leases_total Job leases this node's executors held, by how they "
      "ended.\n# TYPE synapse_jobs_leases_total counter\n";
  for (size_t i = 0; i < kLeaseResults; ++i) {
    out += "synapse_jobs_leases_total{" + node + ",result=\"" + std::string(kLeaseResultNames[i]) +
           "\"} " + std::to_string(leases_[i].load()) + "\n";
  }
  out +=
      "# HELP synapse_jobs_pages_running Job pages this node's executors are running now.\n"
      "# TYPE synapse_jobs_pages_running gauge\nsynapse_jobs_pages_running{" +
      node + "} " + std::to_string(pages_running_.load()) + "\n";
  return out;
}

bool JobWorker::wait_for_work(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  const uint64_t seen = notifications_;
  cv_.wait_for(lock, timeout, [&] { return stopping_.load() || notifications_ != seen; });
  return !stopping_.load();
}

void JobWorker::say(const std::string& line) const {
  if (options_.log) options_.log(line);
}

void JobWorker::manage() {
  // Wait for the database's executor lock: another server may be executing its jobs.
  bool waiting_said = false;
  while (!stopping_.load()) {
    if (flock(lock_fd_, LOCK_EX | LOCK_NB) == 0) break;
    if (!waiting_said) {
      say("jobs: another synapse serve executes this database's jobs; waiting to take over");
      waiting_said = true;
    }
    wait_for_work(options_.poll);
  }
  if (stopping_.load()) return;
  executing_ = true;
  // Every lease of ours left in the database belongs to a process that died holding the lock.
  const auto reclaim = [&] {
    if (Result<int64_t> reclaimed = store_.reclaim_leases(owner_prefix()); !reclaimed.ok()) {
      say("jobs: cannot reclaim leases: " + reclaimed.status().to_string());
    } else if (*reclaimed > 0) {
      say("jobs: resuming " + std::to_string(*reclaimed) + " lease(s) interrupted by a crash");
    }
  };
  reclaim();
  for (size_t i = 0; i < options_.workers; ++i) workers_.emplace_back([this, i] { work(i); });
  using Clock = std::chrono::steady_clock;
  const bool reclaiming = options_.reclaim_every.count() > 0;
  auto expire_at = Clock::now();
  auto reclaim_at = Clock::now() + options_.reclaim_every;
  while (!stopping_.load()) {
    if (Clock::now() >= expire_at) {
      if (Result<jobs::ExpireResult> expired = store_.expire(); !expired.ok()) {
        say("jobs: expiry failed: " + expired.status().to_string());
      } else if (expired->expired + expired->deleted > 0) {
        say("jobs: " + std::to_string(expired->expired) + " expired, " +
            std::to_string(expired->deleted) + " removed after retention");
      }
      expire_at = Clock::now() + options_.expire_every;
    }
    if (reclaiming && Clock::now() >= reclaim_at) {
      reclaim();
      reclaim_at = Clock::now() + options_.reclaim_every;
    }
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, reclaiming ? std::min(expire_at, reclaim_at) : expire_at,
                   [&] { return stopping_.load(); });
  }
}

void JobWorker::work(size_t index) {
  jobs::ExecutorOptions executor;
  executor.owner = owner_prefix() + node_ + "/worker-" + std::to_string(index);
  executor.lease_duration_ms = options_.lease_duration_ms;
  executor.items_per_commit = options_.items_per_commit;
  executor.renew_after_ms = options_.lease_duration_ms / 3;
  executor.check_after_ms = options_.cancel_check.count();
  executor.should_stop = [this] { return stopping_.load(); };
  executor.on_commit = [this](const jobs::CommitResult& committed) {
    items_committed_.fetch_add(static_cast<uint64_t>(committed.committed_items));
    items_retried_.fetch_add(static_cast<uint64_t>(committed.retried_items));
    pages_committed_.fetch_add(committed.pages.size());
  };
  jobs::Lease lease;  // run_one_job fills it when it leases, before any page runs
  PageRunner runner(*this, lease.job_id);
  std::string last_error;  // said once, not at every poll while it lasts
  while (!stopping_.load()) {
    lease = jobs::Lease();
    Result<jobs::ExecutorResult> result = jobs::run_one_job(store_, runner, executor, &lease);
    if (!result.ok() && !lease.job_id.empty()) count_lease(kLeaseResults - 1);
    if (result.ok() && *result != jobs::ExecutorResult::kNoJob) {
      count_lease(lease_result_index(*result));
    }
    if (!result.ok()) {
      // Storage trouble (a full disk, a read-only database): the lease runs out or is reclaimed
      // and the job resumes; look again after a poll interval.
      const std::string error = result.status().to_string();
      if (error != last_error) say("jobs: " + error + " (retrying)");
      last_error = error;
      wait_for_work(options_.poll);
      continue;
    }
    if (!last_error.empty()) say("jobs: the job database works again");
    last_error.clear();
    switch (*result) {
      case jobs::ExecutorResult::kNoJob:
        wait_for_work(options_.poll);
        break;
      case jobs::ExecutorResult::kCompleted:
        say("jobs: " + lease.job_id + " completed");
        break;
      case jobs::ExecutorResult::kReleased:
      case jobs::ExecutorResult::kLeaseLost:
      case jobs::ExecutorResult::kCancelled:
      case jobs::ExecutorResult::kShared:
        break;
    }
  }
}

}  // namespace synapse::request
