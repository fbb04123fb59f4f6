// SPDX-License-Identifier: Apache-2.0
// Crash safety: executor processes (fork) run jobs through the real store and a deterministic
// fake model; the parent SIGKILLs them at random moments, round after round, then lets one run to
// the end. Checked: every job completes; every item's result appears exactly once and equals the
// fake model's answer (what an uninterrupted run gives); committed pages never change; no item
// executes again once its page was committed (counted twice: by the store's hand-out counter and
// by an execution log the fake model appends to).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/hash.h"
#include "jobs/job_executor.h"
#include "jobs/sqlite_job_store.h"
#include "tests/support/test_support.h"

namespace synapse::jobs {
namespace {

using synapse::testing::TempDir;

constexpr int kKillRounds = 6;
constexpr int kExecutorsPerRound = 2;
constexpr int64_t kLeaseMs = 300;
const std::vector<int> kJobSizes = {40, 300, 7, 150, 1, 90, 220, 12};

// The fake model: the response is a pure function of the request body.
std::string fake_response(std::string_view body) {
  return R"({"digest":")" + to_hex(sha256(as_bytes(body))).substr(0, 16) + R"(","bytes":)" +
         std::to_string(body.size()) + "}";
}

class FakeModel final : public ItemRunner {
 public:
  explicit FakeModel(int log_fd) : log_fd_(log_fd) {}

  ItemOutcome run(const WorkItem& item) override {
    // One write(2) per execution on an O_APPEND file: atomic, and survives SIGKILL.
    const std::string record = item.custom_id + "\n";
    if (write(log_fd_, record.data(), record.size()) != static_cast<ssize_t>(record.size())) {
      _exit(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return ItemOutcome::success(item.index, fake_response(item.body));
  }

 private:
  int log_fd_;
};

bool all_jobs_done(SqliteJobStore& store) {
  for (JobState state : {JobState::kQueued, JobState::kRunning}) {
    Result<std::vector<JobInfo>> jobs = store.list_jobs({.state = state, .limit = 1});
    if (!jobs.ok() || !jobs->empty()) return false;
  }
  return true;
}

// The body of an executor process; never returns.
[[noreturn]] void executor_process(const std::string& db_path, const std::string& log_path,
                                   int executor) {
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (log_fd < 0) _exit(2);
  Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(db_path);
  if (!store.ok()) _exit(2);
  FakeModel model(log_fd);
  const ExecutorOptions options{
      .owner = "executor-" + std::to_string(getpid()) + "-" + std::to_string(executor),
      .lease_duration_ms = kLeaseMs,
      .items_per_commit = 8};
  while (true) {
    Result<ExecutorResult> result = run_one_job(**store, model, options);
    if (result.ok() && *result == ExecutorResult::kNoJob) {
      if (all_jobs_done(**store)) _exit(0);
      // Jobs whose executor was killed become runnable when their lease runs out.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } else if (!result.ok() && !result.status().is_transient()) {
      std::fprintf(stderr, "executor: %s\n", result.status().to_string().c_str());
      _exit(4);
    }
  }
}

pid_t spawn_executor(const std::string& db_path, const std::string& log_path, int executor) {
  const pid_t pid = fork();
  if (pid == 0) executor_process(db_path, log_path, executor);
  return pid;
}

// Everything the parent observes between rounds.
struct Snapshot {
  std::map<std::string, std::string> page_hashes;       // "job/page" -> SHA-256 of its bytes
  std::map<std::string, int64_t> committed_executions;  // custom_id -> hand-outs when committed
};

Snapshot snapshot(SqliteJobStore& store, const std::vector<std::string>& job_ids) {
  Snapshot result;
  for (const std::string& id : job_ids) {
    const JobInfo job = *store.get_job(id);
    for (int64_t page = 0; page < job.page_count; ++page) {
      Result<ResultPage> bytes = store.result_page(id, page);
      EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
      if (!bytes.ok()) continue;
      result.page_hashes[id + "/" + std::to_string(page)] = to_hex(sha256(as_bytes(bytes->jsonl)));
    }
    const std::vector<ItemInfo> items = *store.items(id);
    for (const ItemInfo& item : items) {
      if (item.state != ItemState::kPending) {
        result.committed_executions[item.custom_id] = item.executed_count;
      }
    }
  }
  return result;
}

size_t file_size(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 ? static_cast<size_t>(info.st_size) : 0;
}

std::vector<std::string> split_lines(const std::string& text, size_t from_byte = 0) {
  std::vector<std::string> lines;
  size_t start = std::min(from_byte, text.size());
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) break;  // a torn last line cannot happen with one write(2)
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

TEST(JobCrash, SigkillAtRandomMomentsLosesAndRepeatsNothingCommitted) {
  const auto started = std::chrono::steady_clock::now();
  TempDir dir;
  const std::string db_path = dir.file("jobs.db");
  const std::string log_path = dir.file("executions.log");
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 random(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));

  // Jobs of mixed sizes; expected results computed from the submissions.
  std::vector<std::string> job_ids;
  std::map<std::string, std::string> expected;  // custom_id -> response
  int64_t total_items = 0;
  {
    Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(db_path);
    ASSERT_TRUE(store.ok());
    for (size_t j = 0; j < kJobSizes.size(); ++j) {
      Submission submission;
      submission.job_class = j % 3 == 2 ? JobClass::kBackground : JobClass::kBatch;
      for (int i = 0; i < kJobSizes[j]; ++i) {
        const std::string custom_id = "j" + std::to_string(j) + "-" + std::to_string(i);
        const std::string body =
            R"({"input":")" + custom_id + std::string(static_cast<size_t>(i % 17), '.') + "\"}";
        submission.requests.push_back(
            JobRequest{.custom_id = custom_id, .url = "/v1/embeddings", .body = body});
        expected[custom_id] = fake_response(body);
      }
      total_items += kJobSizes[j];
      Result<SubmitResult> submitted = (*store)->submit(submission, std::nullopt);
      ASSERT_TRUE(submitted.ok());
      job_ids.push_back(submitted->job.id);
    }
  }  // no connection is open across fork()

  Snapshot previous;
  int kills = 0;
  for (int round = 0; round <= kKillRounds; ++round) {
    const bool last = round == kKillRounds;
    const size_t log_start = file_size(log_path);
    std::vector<pid_t> pids;
    for (int e = 0; e < kExecutorsPerRound; ++e) {
      pids.push_back(spawn_executor(db_path, log_path, e));
      ASSERT_GT(pids.back(), 0);
    }
    if (!last) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::uniform_int_distribution<int>(30, 400)(random)));
      for (pid_t pid : pids) {
        kill(pid, SIGKILL);
        ++kills;
      }
    }
    for (pid_t pid : pids) {
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      if (last) {
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
      }
    }

    Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(db_path);
    ASSERT_TRUE(store.ok());
    const Snapshot now = snapshot(**store, job_ids);
    // Committed pages never change or vanish.
    for (const auto& [page, hash] : previous.page_hashes) {
      ASSERT_TRUE(now.page_hashes.contains(page)) << "page " << page << " vanished";
      EXPECT_EQ(now.page_hashes.at(page), hash) << "page " << page << " changed";
    }
    // Items committed before this round were neither handed out nor executed during it.
    for (const auto& [custom_id, executions] : previous.committed_executions) {
      EXPECT_EQ(now.committed_executions.at(custom_id), executions) << custom_id;
    }
    const std::string log = synapse::testing::read_file_text(log_path);
    for (const std::string& custom_id : split_lines(log, log_start)) {
      EXPECT_FALSE(previous.committed_executions.contains(custom_id))
          << custom_id << " executed again after its page was committed (round " << round << ")";
    }
    std::printf("round %d: %zu of %lld items committed, %zu pages\n", round,
                now.committed_executions.size(), static_cast<long long>(total_items),
                now.page_hashes.size());
    if (round == 0) {
      // The first kill must land while work is in flight, or the test proves little.
      EXPECT_LT(static_cast<int64_t>(now.committed_executions.size()), total_items);
    }
    previous = now;
  }

  // Final state: every job completed, every item exactly once with the uninterrupted answer.
  Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(db_path);
  ASSERT_TRUE(store.ok());
  std::map<std::string, int> seen;
  int64_t reexecuted = 0;
  for (const std::string& id : job_ids) {
    const JobInfo job = *store->get()->get_job(id);
    EXPECT_EQ(job.state, JobState::kCompleted) << id;
    EXPECT_EQ(job.counts.succeeded, job.counts.total);
    for (int64_t page = 0; page < job.page_count; ++page) {
      Result<ResultPage> bytes = (*store)->result_page(id, page);
      ASSERT_TRUE(bytes.ok());
      for (const std::string& line : split_lines(bytes->jsonl)) {
        const size_t id_start = line.find(R"("custom_id":")") + 13;
        const std::string custom_id = line.substr(id_start, line.find('"', id_start) - id_start);
        ++seen[custom_id];
        EXPECT_EQ(line, R"({"custom_id":")" + custom_id + R"(","response":)" +
                            expected.at(custom_id) + "}");
      }
    }
    const std::vector<ItemInfo> items = *(*store)->items(id);
    for (const ItemInfo& item : items) {
      EXPECT_GE(item.executed_count, 1);
      reexecuted += item.executed_count > 1 ? 1 : 0;
    }
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), total_items);
  for (const auto& [custom_id, count] : seen) EXPECT_EQ(count, 1) << custom_id;
  const std::vector<std::string> log = split_lines(synapse::testing::read_file_text(log_path));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf(
      "crash test: %d kills, %lld items in %zu jobs, %zu executions, %lld items run more "
      "than once (killed before their commit), %.1f s, seed %llu\n",
      kills, static_cast<long long>(total_items), job_ids.size(), log.size(),
      static_cast<long long>(reexecuted), seconds, static_cast<unsigned long long>(seed));
}

}  // namespace
}  // namespace synapse::jobs
