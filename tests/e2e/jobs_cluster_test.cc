// SPDX-License-Identifier: Apache-2.0
// The durable-jobs crash test at cluster scale: three `synapse serve` nodes share one PostgreSQL
// job database (a throwaway server, pg/pg_test_server.h); jobs are submitted through different
// nodes over HTTP; nodes are SIGKILLed and restarted at random (seeded, the seed is printed) and
// every session on the database is cut once mid-run. Every job completes, every custom_id appears
// exactly once, a page never changes once seen, no item runs again after its page committed, and
// every node ran some of the jobs. SYNAPSE_CLUSTER_JOBS sets the job count (default 60, so the
// default suite stays fast; the figure is 200).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "jobs/job_store_testing.h"
#include "tests/e2e/server_process.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;

std::string item_body(int job, int item) {
  const char* const prompts[] = {"Once upon a time", "The cat", "A small robot", "Hello"};
  return Json{{"prompt", prompts[(job + item) % 4]},
              {"max_tokens", 1 + (job * 5 + item * 7) % 8},
              {"temperature", 0}}
      .dump();
}

TEST(JobsCluster, ThreeNodesKilledAndCutCommitEveryItemOnce) {
  SYN_TEST_STORE(location, jobs::StoreBackend::kPostgres);
  Result<testing::PgTestServer*> server = testing::PgTestServer::shared();
  ASSERT_TRUE(server.ok());
  const std::string url = (*server)->url(location->database());
  Result<std::unique_ptr<jobs::JobStore>> opened = location->open();
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  std::unique_ptr<jobs::JobStore> store = std::move(*opened);

  testing::TempDir work;
  const std::string model = work.file("tiny.gguf");
  ASSERT_EQ(testing::synth_serving_model(model, 512), "");
  constexpr int kNodes = 3;
  std::vector<std::unique_ptr<testing::ServerProcess>> nodes(kNodes);
  std::map<pid_t, int> node_of_pid;
  auto start = [&](int n) {
    nodes[static_cast<size_t>(n)] = std::make_unique<testing::ServerProcess>(
        model, "--threads 1 --parallel 4 --job-workers 2 --jobs-db '" + url + "'",
        work.file("node" + std::to_string(n) + ".log"));
    ASSERT_GT(nodes[static_cast<size_t>(n)]->port(), 0)
        << testing::read_file_text(work.file("node" + std::to_string(n) + ".log"));
    node_of_pid[nodes[static_cast<size_t>(n)]->pid()] = n;
  };
  for (int n = 0; n < kNodes; ++n) start(n);

  const char* env_jobs = std::getenv("SYNAPSE_CLUSTER_JOBS");
  const int job_count = env_jobs != nullptr ? std::atoi(env_jobs) : 60;
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::printf("[cluster test] seed %u, %d jobs\n", seed, job_count);
  std::mt19937 rng(seed);
  std::vector<std::string> ids;
  std::map<std::string, int> items_of;
  for (int j = 0; j < job_count; ++j) {
    const int items = 1 + (j * 7) % 6;
    Json requests = Json::array();
    for (int i = 0; i < items; ++i) {
      requests.push_back({{"custom_id", "job" + std::to_string(j) + "-item" + std::to_string(i)},
                          {"url", "/v1/completions"},
                          {"body", Json::parse(item_body(j, i))}});
    }
    const int via = j % kNodes;  // submitted through every node in turn
    const testing::HttpReply created =
        testing::http_request(nodes[static_cast<size_t>(via)]->port(), "POST", "/v1/jobs",
                              Json{{"requests", requests}}.dump());
    ASSERT_EQ(created.status, 201) << created.body;
    ids.push_back(Json::parse(created.body)["id"]);
    items_of[ids.back()] = items;
  }

  std::map<std::pair<std::string, int64_t>, std::string> seen_pages;
  std::map<std::pair<std::string, int64_t>, int64_t> committed_executions;
  auto snapshot = [&] {
    for (const std::string& id : ids) {
      Result<jobs::JobInfo> job = store->get_job(id);
      if (!job.ok()) continue;  // a cut connection: the next snapshot looks again
      for (int64_t p = 0; p < job->page_count; ++p) {
        Result<jobs::ResultPage> page = store->result_page(id, p);
        if (!page.ok()) continue;
        auto [it, inserted] = seen_pages.emplace(std::make_pair(id, p), page->jsonl);
        if (!inserted) {
          EXPECT_EQ(it->second, page->jsonl) << "page " << p << " of " << id;
        }
      }
      Result<std::vector<jobs::ItemInfo>> items = store->items(id);
      if (!items.ok()) continue;
      for (const jobs::ItemInfo& item : *items) {
        if (item.state == jobs::ItemState::kPending) continue;
        auto [it, inserted] =
            committed_executions.emplace(std::make_pair(id, item.index), item.executed_count);
        if (!inserted) {
          EXPECT_EQ(it->second, item.executed_count)
              << "item " << item.index << " of " << id << " ran again after its page committed";
        }
      }
    }
  };

  constexpr int kKills = 4;
  for (int round = 0; round < kKills; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 1200));
    if (round == kKills / 2) {
      // Every session on the database ends mid-run (commits in flight included), as a failover
      // would: the nodes see `unavailable`, reconnect and go on.
      ASSERT_TRUE((*server)->terminate_connections(location->database()).ok());
    }
    const int victim = static_cast<int>(rng() % kNodes);
    nodes[static_cast<size_t>(victim)]->kill_hard();
    snapshot();
    start(victim);
  }

  const auto deadline = std::chrono::steady_clock::now() + 300s;
  bool done = false;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(200ms);
    done = true;
    for (const std::string& id : ids) {
      Result<jobs::JobInfo> job = store->get_job(id);
      if (!job.ok() || !jobs::is_terminal(job->state)) {
        done = false;
        break;
      }
    }
  }
  ASSERT_TRUE(done) << testing::read_file_text(work.file("node0.log"));
  snapshot();

  std::set<int> nodes_that_ran;
  for (const std::string& id : ids) {
    const jobs::JobInfo job = *store->get_job(id);
    EXPECT_EQ(job.state, jobs::JobState::kCompleted) << id;
    std::multiset<std::string> custom_ids;
    for (int64_t p = 0; p < job.page_count; ++p) {
      std::istringstream in(store->result_page(id, p)->jsonl);
      for (std::string line; std::getline(in, line);) {
        custom_ids.insert(Json::parse(line)["custom_id"].get<std::string>());
      }
    }
    EXPECT_EQ(custom_ids.size(), static_cast<size_t>(items_of[id])) << id;
    EXPECT_EQ(std::set<std::string>(custom_ids.begin(), custom_ids.end()).size(), custom_ids.size())
        << "a result appears twice in " << id;
    // Which node leased it: the owner is "synapse-serve/HOST:PID/worker-N".
    const Result<std::vector<jobs::JobEvent>> events = store->events(id);
    ASSERT_TRUE(events.ok()) << events.status().to_string();
    for (const jobs::JobEvent& event : *events) {
      if (event.kind != "leased") continue;
      const size_t colon = event.detail.find(':');
      const size_t slash = event.detail.find('/', colon);
      if (colon == std::string::npos || slash == std::string::npos) continue;
      const pid_t pid = static_cast<pid_t>(std::atoi(event.detail.substr(colon + 1).c_str()));
      if (node_of_pid.contains(pid)) nodes_that_ran.insert(node_of_pid[pid]);
    }
  }
  EXPECT_EQ(nodes_that_ran.size(), static_cast<size_t>(kNodes)) << "the work was not spread";
}

}  // namespace
}  // namespace synapse
