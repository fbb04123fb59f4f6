// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of `synapse jobs`: the executable on a job database in a temporary directory.
// Nothing runs jobs here; where results are needed the test writes them through the store's
// lease protocol itself, as the executor in `synapse serve` would.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "jobs/sqlite_job_store.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using testing::CommandResult;
using testing::run_command;
using testing::synapse_cli;
using testing::TempDir;

std::string quote(const std::string& s) { return "'" + s + "'"; }

std::string request_line(const std::string& custom_id, const std::string& input) {
  return R"({"custom_id":")" + custom_id +
         R"(","method":"POST","url":"/v1/embeddings","body":{"input":")" + input + "\"}}\n";
}

class JobsCli : public ::testing::Test {
 protected:
  std::string db() const { return dir_.file("jobs.db"); }
  CommandResult run_jobs(const std::string& args) const {
    return run_command(synapse_cli() + " jobs --db " + quote(db()) + " " + args);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_.file(name), std::ios::binary) << text;
    return dir_.file(name);
  }
  static std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }
  std::unique_ptr<jobs::SqliteJobStore> open_store(jobs::SqliteJobStoreOptions options = {}) {
    auto store = jobs::SqliteJobStore::open(db(), std::move(options));
    EXPECT_TRUE(store.ok()) << store.status().to_string();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  TempDir dir_;
};

TEST_F(JobsCli, SubmitTwiceIsTheSameJob) {
  const std::string file = write("in.jsonl", request_line("a", "x") + request_line("b", "y"));
  const CommandResult first = run_jobs("submit " + quote(file));
  ASSERT_EQ(first.exit_code, 0) << first.stderr_text;
  const std::string id = trimmed(first.stdout_text);
  EXPECT_EQ(id.rfind("job_", 0), 0u) << id;
  const CommandResult again = run_jobs("submit " + quote(file));
  ASSERT_EQ(again.exit_code, 0) << again.stderr_text;
  EXPECT_EQ(trimmed(again.stdout_text), id);
  EXPECT_NE(again.stderr_text.find("an earlier job has the same requests"), std::string::npos)
      << again.stderr_text;
  // From stdin, as JSON, with a key: a new job (the key is new), then the same one.
  const CommandResult keyed =
      run_jobs("submit - --json --idempotency-key k1 --class background < " + quote(file));
  ASSERT_EQ(keyed.exit_code, 0) << keyed.stderr_text;
  const Json job = Json::parse(keyed.stdout_text);
  EXPECT_EQ(job["object"], "job");
  EXPECT_EQ(job["class"], "background");
  EXPECT_EQ(job["idempotency_key"], "k1");
  EXPECT_EQ(job["counts"]["total"], 2);
  EXPECT_NE(job["id"], id);
  const CommandResult keyed_again =
      run_jobs("submit - --idempotency-key k1 --class background < " + quote(file));
  EXPECT_EQ(trimmed(keyed_again.stdout_text), job["id"].get<std::string>());
  EXPECT_EQ(open_store()->list_jobs({})->size(), 2u);
}

TEST_F(JobsCli, BadInput) {
  // A bad line is reported with its number and code; the valid lines still form the job.
  const std::string mixed =
      write("mixed.jsonl", request_line("a", "x") + "{nope\n" + request_line("a", "dup"));
  const CommandResult partial = run_jobs("submit " + quote(mixed));
  ASSERT_EQ(partial.exit_code, 0) << partial.stderr_text;
  EXPECT_NE(partial.stderr_text.find("line 2: invalid_json"), std::string::npos)
      << partial.stderr_text;
  EXPECT_NE(partial.stderr_text.find("line 3: duplicate_custom_id"), std::string::npos)
      << partial.stderr_text;
  const CommandResult shown = run_jobs("show " + trimmed(partial.stdout_text));
  EXPECT_NE(shown.stdout_text.find("invalid     2 line(s)"), std::string::npos)
      << shown.stdout_text;
  EXPECT_NE(shown.stderr_text.find("line 2: invalid_json"), std::string::npos);

  const CommandResult nothing_valid = run_jobs("submit " + quote(write("bad.jsonl", "{nope\n")));
  EXPECT_EQ(nothing_valid.exit_code, 1);
  EXPECT_NE(nothing_valid.stderr_text.find("invalid_argument"), std::string::npos)
      << nothing_valid.stderr_text;
  const CommandResult missing = run_jobs("submit " + quote(dir_.file("missing.jsonl")));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.stderr_text.find("io_error"), std::string::npos) << missing.stderr_text;
  const CommandResult bad_class = run_jobs("submit --class urgent " + quote(mixed));
  EXPECT_EQ(bad_class.exit_code, 1);
  EXPECT_NE(bad_class.stderr_text.find("invalid_value"), std::string::npos);
  EXPECT_EQ(run_jobs("list --status done").exit_code, 1);
  EXPECT_EQ(run_jobs("list --limit 0").exit_code, 1);
  EXPECT_EQ(run_jobs("results job_x --page 1 --all").exit_code, 2);
  EXPECT_EQ(run_jobs("frobnicate").exit_code, 2);
  EXPECT_EQ(open_store()->list_jobs({})->size(), 1u);

  for (const char* command : {"show", "results", "cancel"}) {
    const CommandResult unknown = run_jobs(std::string(command) + " job_000000000000000000000000");
    EXPECT_EQ(unknown.exit_code, 1) << command;
    EXPECT_NE(unknown.stderr_text.find("job_not_found"), std::string::npos)
        << command << ": " << unknown.stderr_text;
  }
}

TEST_F(JobsCli, ListShowAndCancel) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    const std::string file =
        write("in" + std::to_string(i) + ".jsonl", request_line("r", std::to_string(i)));
    const CommandResult r =
        run_jobs("submit " + quote(file) + (i == 1 ? " --class background" : ""));
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    ids.push_back(trimmed(r.stdout_text));
  }
  const CommandResult cancelled = run_jobs("cancel " + ids[0]);
  ASSERT_EQ(cancelled.exit_code, 0) << cancelled.stderr_text;
  EXPECT_NE(cancelled.stdout_text.find(ids[0] + " cancelled"), std::string::npos);
  EXPECT_NE(run_jobs("cancel " + ids[0]).stdout_text.find("already cancelled"), std::string::npos);

  const CommandResult table = run_jobs("list");
  ASSERT_EQ(table.exit_code, 0) << table.stderr_text;
  EXPECT_NE(table.stdout_text.find("DONE/TOTAL"), std::string::npos) << table.stdout_text;
  for (const std::string& id : ids) EXPECT_NE(table.stdout_text.find(id), std::string::npos);
  EXPECT_NE(table.stdout_text.find("cancelled"), std::string::npos);
  EXPECT_NE(table.stdout_text.find("0/1"), std::string::npos);

  const Json all = Json::parse(run_jobs("list --json").stdout_text);
  // --db also works after the subcommand.
  const CommandResult db_after =
      run_command(synapse_cli() + " jobs list --json --db " + quote(db()));
  ASSERT_EQ(db_after.exit_code, 0) << db_after.stderr_text;
  EXPECT_EQ(Json::parse(db_after.stdout_text)["data"].size(), 3u);
  ASSERT_EQ(all["data"].size(), 3u);
  EXPECT_EQ(all["data"][0]["id"], ids[2]);  // newest first
  EXPECT_EQ(all["has_more"], false);
  const Json background = Json::parse(run_jobs("list --json --class background").stdout_text);
  ASSERT_EQ(background["data"].size(), 1u);
  EXPECT_EQ(background["data"][0]["id"], ids[1]);
  const Json queued = Json::parse(run_jobs("list --json --status queued --limit 1").stdout_text);
  ASSERT_EQ(queued["data"].size(), 1u);
  EXPECT_EQ(queued["data"][0]["id"], ids[2]);
  EXPECT_EQ(queued["has_more"], true);

  const Json shown = Json::parse(run_jobs("show --json " + ids[0]).stdout_text);
  EXPECT_EQ(shown["status"], "cancelled");
  EXPECT_TRUE(shown.contains("finished_at"));
  const CommandResult text = run_jobs("show " + ids[1]);
  EXPECT_NE(text.stdout_text.find("status      queued"), std::string::npos) << text.stdout_text;
  EXPECT_NE(text.stdout_text.find("class       background"), std::string::npos);

  // NODE: which server runs a job (its lease owner's HOST:PID), "-" for one never leased.
  auto lease = open_store()->acquire("synapse-serve/node-a:4242/worker-0", 60'000);
  ASSERT_TRUE(lease.ok() && lease->has_value());
  const std::string nodes = run_jobs("list").stdout_text;
  EXPECT_NE(nodes.find("NODE"), std::string::npos) << nodes;
  std::istringstream rows(nodes);
  int never_leased = 0;
  for (std::string row; std::getline(rows, row);) {
    if (row.starts_with((*lease)->job_id)) {
      EXPECT_TRUE(row.ends_with("  node-a:4242")) << row;
    }
    if (row.ends_with("  -")) ++never_leased;
  }
  EXPECT_EQ(never_leased, 2) << nodes;
}

TEST_F(JobsCli, ResultsPageByPage) {
  const std::string file =
      write("in.jsonl", request_line("a", "x") + request_line("b", "y") + request_line("c", "z"));
  const std::string id = trimmed(run_jobs("submit " + quote(file)).stdout_text);
  EXPECT_EQ(run_jobs("results " + id).stdout_text, "");

  // One item per page; two of three committed: the job is still running.
  auto store = open_store({.max_page_bytes = 1});
  auto lease = store->acquire("test-executor", 60'000);
  ASSERT_TRUE(lease.ok() && lease->has_value());
  ASSERT_TRUE(store->next_items(**lease, 2).ok());
  ASSERT_TRUE(store
                  ->commit_page(**lease, {jobs::ItemOutcome::success(0, R"({"v":0})"),
                                          jobs::ItemOutcome::failure(1, ErrorCode::kInvalidValue,
                                                                     "bad input")})
                  .ok());
  const CommandResult running = run_jobs("results " + id);
  ASSERT_EQ(running.exit_code, 0) << running.stderr_text;
  EXPECT_NE(running.stderr_text.find("is running"), std::string::npos);
  std::vector<Json> lines;
  std::istringstream stream(running.stdout_text);
  for (std::string line; std::getline(stream, line);) lines.push_back(Json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["custom_id"], "a");
  EXPECT_EQ(lines[0]["response"]["v"], 0);
  EXPECT_EQ(lines[1]["custom_id"], "b");
  EXPECT_EQ(lines[1]["error"]["code"], "invalid_value");

  const CommandResult page1 = run_jobs("results " + id + " --page 1");
  EXPECT_EQ(Json::parse(page1.stdout_text)["custom_id"], "b");
  const CommandResult page5 = run_jobs("results " + id + " --page 5");
  EXPECT_EQ(page5.exit_code, 1);
  EXPECT_NE(page5.stderr_text.find("not_found"), std::string::npos) << page5.stderr_text;

  ASSERT_TRUE(store->next_items(**lease, 1).ok());
  ASSERT_TRUE(store->commit_page(**lease, {jobs::ItemOutcome::success(2, R"({"v":2})")}).ok());
  ASSERT_TRUE(store->complete(**lease).ok());
  const std::string out = dir_.file("out.jsonl");
  const CommandResult all = run_jobs("results " + id + " --all -o " + quote(out));
  ASSERT_EQ(all.exit_code, 0) << all.stderr_text;
  EXPECT_EQ(all.stderr_text, "");
  const std::string written = testing::read_file_text(out);
  EXPECT_EQ(std::count(written.begin(), written.end(), '\n'), 3);
  EXPECT_NE(written.find(R"("custom_id":"c")"), std::string::npos) << written;
  EXPECT_EQ(Json::parse(run_jobs("show --json " + id).stdout_text)["status"], "completed");
  // A write that fails (a full disk) is an error, not a silently short export.
  const CommandResult full = run_command("sh -c \"" + synapse_cli() + " jobs --db " + quote(db()) +
                                         " results " + id + " >/dev/full\"");
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_NE(full.stderr_text.find("io_error"), std::string::npos) << full.stderr_text;
}

// --wait follows the job until an executor (here the test, through the store) finishes it.
TEST_F(JobsCli, SubmitWaitsForTheExecutor) {
  const std::string file = write("in.jsonl", request_line("a", "x") + request_line("b", "y"));
  auto store = open_store();
  std::atomic<bool> ran{false};
  std::thread executor([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < give_up) {
      auto lease = store->acquire("test-executor", 60'000);
      if (!lease.ok() || !lease->has_value()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      auto items = store->next_items(**lease, 10);
      std::vector<jobs::ItemOutcome> outcomes;
      for (const jobs::WorkItem& item : items->items) {
        outcomes.push_back(jobs::ItemOutcome::success(item.index, R"({"ok":true})"));
      }
      ran = store->commit_page(**lease, outcomes).ok() && store->complete(**lease).ok();
      return;
    }
  });
  const CommandResult waited = run_jobs("submit --wait --json " + quote(file));
  executor.join();
  ASSERT_TRUE(ran);
  ASSERT_EQ(waited.exit_code, 0) << waited.stderr_text;
  const Json job = Json::parse(waited.stdout_text);
  EXPECT_EQ(job["status"], "completed");
  EXPECT_EQ(job["counts"]["succeeded"], 2);

  // Waiting on a job that ends other than completed exits 1: cancel it from another thread.
  const std::string other = write("other.jsonl", request_line("c", "z"));
  std::thread canceller([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < give_up) {
      auto queued = store->list_jobs({.state = jobs::JobState::kQueued});
      if (queued.ok() && !queued->empty()) {
        (void)store->cancel(queued->front().id);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const CommandResult cancelled = run_jobs("submit --wait " + quote(other));
  canceller.join();
  EXPECT_EQ(cancelled.exit_code, 1) << cancelled.stderr_text;
  EXPECT_NE(cancelled.stderr_text.find("cancelled"), std::string::npos) << cancelled.stderr_text;
}

}  // namespace
}  // namespace synapse
