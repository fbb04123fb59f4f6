// SPDX-License-Identifier: Apache-2.0
// The supervisor (WorkerService) over real worker processes (worker_test_host: a synthetic model
// served as `synapse worker` serves one): what crosses the boundary equals the in-process
// service's output, a killed worker fails the requests running on it with worker_crashed and is
// replaced, a prompt running at two crashes of the worker's own is quarantined (and one running
// at kills from outside is not), a spent crash budget refuses with
// unavailable until the cool-down ends, a hung worker is killed, and shutdown ends every stream
// whichever thread waits on it. These tests run several client threads against the front's
// reader and supervisor threads: the TSan lane (scripts/test.sh) runs them too.
#include "worker/worker_service.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <optional>
#include <thread>

#include "backend/cpu_backend.h"
#include "base/thread_pool.h"
#include "format/gguf/gguf_file.h"
#include "kernels/kernel_selection.h"
#include "serve/service.h"
#include "serve/service_test_support.h"
#include "synth/synth_model.h"
#include "tests/support/test_support.h"
#include "tokenizer/tokenizer.h"

namespace synapse::worker {
namespace {

using namespace std::chrono_literals;

struct Collected {
  std::vector<int32_t> tokens;
  std::string text;
  std::optional<serve::GenerationEvent> final_event;
};

Collected collect(serve::RequestHandle& handle) {
  Collected c;
  serve::GenerationEvent e;
  while (handle.next(e)) {
    c.text += e.text;
    for (const serve::GeneratedToken& t : e.tokens) c.tokens.push_back(t.token);
    if (e.final) c.final_event = e;
  }
  return c;
}

// Blocks until the request has produced a token: it is running in the worker, not queued.
void wait_for_first_token(serve::RequestHandle& handle, Collected& into) {
  serve::GenerationEvent e;
  while (into.tokens.empty() && handle.next(e)) {
    into.text += e.text;
    for (const serve::GeneratedToken& t : e.tokens) into.tokens.push_back(t.token);
    if (e.final) into.final_event = e;
  }
}

std::vector<int32_t> prompt(size_t seed, size_t length = 20) {
  std::vector<int32_t> p;
  for (size_t i = 0; i < length; ++i)
    p.push_back(3 + static_cast<int32_t>((seed * 37 + i * 11) % 250));
  return p;
}

using serve::greedy_request;

class WorkerServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    path_ = new std::string(dir_->file("worker.gguf"));
    SynthOptions o;
    o.arch = "qwen2";
    o.n_embd = 64;
    o.n_ff = 128;
    o.type_attention = TensorType::kQ8_0;
    o.type_feed_forward = TensorType::kQ8_0;
    ASSERT_TRUE(synthesize_model(o, *path_).ok());
  }
  static void TearDownTestSuite() {
    delete path_;
    delete dir_;
  }

  // A worker of the suite's model whose engine steps take at least `step_delay_ms` (so that a
  // test can act while a request runs) and with `fail_points` set besides.
  static WorkerOptions options(int step_delay_ms = 0, const std::string& fail_points = "") {
    std::string points = "serve.step_delay_ms=" + std::to_string(step_delay_ms);
    if (!fail_points.empty()) points += "," + fail_points;
    WorkerOptions o;
    o.argv = {"/usr/bin/env", "SYNAPSE_FAILPOINTS=" + points, SYNAPSE_WORKER_TEST_HOST, *path_};
    o.model_name = "tiny";
    o.start_timeout = 60s;
    return o;
  }

  static std::unique_ptr<WorkerService> start(WorkerOptions o) {
    Result<std::unique_ptr<WorkerService>> started = WorkerService::start(std::move(o));
    EXPECT_TRUE(started.ok()) << started.status().to_string();
    return started.ok() ? std::move(*started) : nullptr;
  }

  static int32_t pid_of(const WorkerService& service) { return service.worker()->pid; }

  // `text` in the model's (synthetic, byte-level) vocabulary.
  static std::vector<int32_t> encode(const std::string& text) {
    auto file = GgufFile::open(*path_);
    EXPECT_TRUE(file.ok()) << file.status().to_string();
    if (!file.ok()) return {};
    auto tokenizer = tokenizer::Tokenizer::from_gguf(file->metadata());
    EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
    if (!tokenizer.ok()) return {};
    std::vector<int32_t> ids;
    for (const tokenizer::TokenId id : tokenizer->encode(text)) ids.push_back(id);
    return ids;
  }

  // Waits until a worker other than `old_pid` runs.
  static void wait_for_restart(const WorkerService& service, int32_t old_pid) {
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < until) {
      const serve::WorkerProcessInfo info = *service.worker();
      if (info.state == "running" && info.pid != old_pid && info.pid > 0) return;
      std::this_thread::sleep_for(20ms);
    }
    FAIL() << "no new worker within 30 s";
  }

  static testing::TempDir* dir_;
  static std::string* path_;
};

testing::TempDir* WorkerServiceTest::dir_ = nullptr;
std::string* WorkerServiceTest::path_ = nullptr;

TEST_F(WorkerServiceTest, ConcurrentStreamsEqualTheInProcessServiceAlone) {
  // The reference: each request alone on an in-process service over the same file.
  std::vector<Collected> alone;
  {
    ThreadPool pool(1);
    CpuBackend backend(selected_kernels(), pool);
    auto model = DecoderModel::open(*path_, backend, serve::serving_decoder_options());
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    auto tokenizer = tokenizer::Tokenizer::from_gguf((*model)->file().metadata());
    ASSERT_TRUE(tokenizer.ok());
    serve::ServiceConfig config;
    config.prefill_chunk_tokens = 16;
    config.page_tokens = 8;
    serve::Service service(**model, *tokenizer, config);
    for (size_t i = 0; i < 4; ++i) {
      auto handle = service.submit(greedy_request(prompt(i, 12 + 7 * i), 24));
      ASSERT_TRUE(handle.ok());
      alone.push_back(collect(**handle));
    }
  }
  std::unique_ptr<WorkerService> service = start(options());
  ASSERT_NE(service, nullptr);
  std::vector<Collected> through(4);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      auto handle = service->submit(greedy_request(prompt(i, 12 + 7 * i), 24));
      if (handle.ok()) through[i] = collect(**handle);
    });
  }
  for (std::thread& t : clients) t.join();
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(through[i].final_event.has_value()) << i;
    EXPECT_TRUE(through[i].final_event->error.ok()) << through[i].final_event->error.to_string();
    EXPECT_EQ(through[i].final_event->finish_reason, serve::FinishReason::kLength);
    EXPECT_EQ(through[i].tokens, alone[i].tokens) << i;
    EXPECT_EQ(through[i].text, alone[i].text) << i;
    EXPECT_EQ(through[i].tokens.size(), 24u);
  }
  EXPECT_EQ(service->hello().build, "worker_test_host");
  EXPECT_EQ(service->limits().n_ctx, 512u);
}

TEST_F(WorkerServiceTest, KilledWorkerFailsItsRunningRequestsAndIsReplaced) {
  std::unique_ptr<WorkerService> service = start(options(20));
  ASSERT_NE(service, nullptr);
  const int32_t first_pid = pid_of(*service);
  auto handle = service->submit(greedy_request(prompt(1), 400));
  ASSERT_TRUE(handle.ok());
  Collected c;
  wait_for_first_token(**handle, c);
  ASSERT_FALSE(c.final_event.has_value());
  ASSERT_EQ(::kill(first_pid, SIGKILL), 0);
  const Collected rest = collect(**handle);
  ASSERT_TRUE(rest.final_event.has_value());
  EXPECT_EQ(rest.final_event->finish_reason, serve::FinishReason::kError);
  EXPECT_EQ(rest.final_event->error.code(), ErrorCode::kWorkerCrashed);
  EXPECT_NE(rest.final_event->error.message().find("signal 9"), std::string::npos)
      << rest.final_event->error.message();

  // The next request waits for the new worker and is served by it.
  auto again = service->submit(greedy_request(prompt(2), 4));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  const Collected served = collect(**again);
  ASSERT_TRUE(served.final_event.has_value());
  EXPECT_TRUE(served.final_event->error.ok()) << served.final_event->error.to_string();
  EXPECT_EQ(served.tokens.size(), 4u);
  const serve::WorkerProcessInfo info = *service->worker();
  EXPECT_NE(info.pid, first_pid);
  EXPECT_EQ(info.crashes, 1u);
  EXPECT_EQ(info.restarts, 1u);
  EXPECT_EQ(info.quarantined, 0u);
  EXPECT_NE(service->render_prometheus().find("synapse_worker_crashes_total 1\n"),
            std::string::npos);
}

TEST_F(WorkerServiceTest, RequestRunningAtTwoCrashesOfItsOwnIsQuarantined) {
  // The worker segfaults when a prompt holding the marker starts (as a kernel bug would).
  WorkerOptions o = options(0, "engine.prompt=crash:POISON");
  o.crash_budget = 10;  // not the budget's test
  std::unique_ptr<WorkerService> service = start(o);
  ASSERT_NE(service, nullptr);
  const std::vector<int32_t> poison = encode("a POISON pill");
  for (size_t crash = 0; crash < 2; ++crash) {
    const int32_t pid = pid_of(*service);
    auto handle = service->submit(greedy_request(poison, 8));
    if (handle.ok()) {
      const Collected c = collect(**handle);
      ASSERT_TRUE(c.final_event.has_value());
      EXPECT_EQ(c.final_event->error.code(), ErrorCode::kWorkerCrashed);
    } else {
      EXPECT_EQ(handle.status().code(), ErrorCode::kWorkerCrashed);  // died before its reply
    }
    wait_for_restart(*service, pid);
  }
  auto refused = service->submit(greedy_request(poison, 4));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kQuarantined);
  // Another prompt is served.
  auto other = service->submit(greedy_request(encode("a harmless one"), 4));
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  EXPECT_EQ(collect(**other).tokens.size(), 4u);
  EXPECT_EQ(service->worker()->quarantined, 1u);
  const std::string metrics = service->render_prometheus();
  EXPECT_NE(metrics.find("synapse_worker_quarantined 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("synapse_worker_quarantine_refusals_total 1\n"), std::string::npos);
}

TEST_F(WorkerServiceTest, KillsFromOutsideDoNotQuarantineTheRunningRequest) {
  // kill -9 by an operator (or a test) says nothing about the request that was running: it
  // fails with worker_crashed each time and is served when sent again.
  WorkerOptions o = options(20);
  o.crash_budget = 10;
  std::unique_ptr<WorkerService> service = start(o);
  ASSERT_NE(service, nullptr);
  const std::vector<int32_t> innocent = prompt(7);
  for (size_t kill = 0; kill < 3; ++kill) {
    const int32_t pid = pid_of(*service);
    auto handle = service->submit(greedy_request(innocent, 400));
    ASSERT_TRUE(handle.ok()) << handle.status().to_string();
    Collected c;
    wait_for_first_token(**handle, c);
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    const Collected rest = collect(**handle);
    ASSERT_TRUE(rest.final_event.has_value());
    EXPECT_EQ(rest.final_event->error.code(), ErrorCode::kWorkerCrashed);
    wait_for_restart(*service, pid);
  }
  auto again = service->submit(greedy_request(innocent, 4));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(collect(**again).tokens.size(), 4u);
  EXPECT_EQ(service->worker()->quarantined, 0u);
  EXPECT_EQ(service->worker()->crashes, 3u);
}

TEST_F(WorkerServiceTest, SpentCrashBudgetRefusesWithUnavailableUntilTheCoolDownEnds) {
  WorkerOptions o = options();
  o.crash_budget = 2;
  o.cool_down = 1500ms;
  std::unique_ptr<WorkerService> service = start(o);
  ASSERT_NE(service, nullptr);
  const int32_t first = pid_of(*service);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  wait_for_restart(*service, first);
  const int32_t second = pid_of(*service);
  ASSERT_EQ(::kill(second, SIGKILL), 0);
  // The second crash within the window spends the budget. Until the front has seen the death,
  // a request may still be served, or fail with worker_crashed when the worker dies under it.
  std::optional<Status> refusal;
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!refusal && std::chrono::steady_clock::now() < until) {
    auto r = service->submit(greedy_request(prompt(3), 2));
    if (r.ok()) {
      collect(**r);
    } else if (r.status().code() != ErrorCode::kWorkerCrashed) {
      refusal = r.status();
    }
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->code(), ErrorCode::kUnavailable);
  EXPECT_NE(refusal->message().find("unavailable for another"), std::string::npos)
      << refusal->message();
  EXPECT_EQ(service->worker()->state, "unavailable");
  const uint32_t retry_after = service->retry_after_s(serve::RequestClass::kInteractive);
  EXPECT_GE(retry_after, 1u);
  EXPECT_LE(retry_after, 2u);
  // After the cool-down the next request starts a worker again and is served.
  std::this_thread::sleep_for(1600ms);
  auto served = service->submit(greedy_request(prompt(3), 2));
  ASSERT_TRUE(served.ok()) << served.status().to_string();
  EXPECT_EQ(collect(**served).tokens.size(), 2u);
  EXPECT_EQ(service->worker()->crashes, 2u);
}

TEST_F(WorkerServiceTest, HungWorkerIsKilledAndCountedAsACrash) {
  WorkerOptions o = options(0, "engine.step=hang@3");
  o.hang_timeout = 500ms;
  std::unique_ptr<WorkerService> service = start(o);
  ASSERT_NE(service, nullptr);
  const int32_t pid = pid_of(*service);
  auto handle = service->submit(greedy_request(prompt(4), 50));
  ASSERT_TRUE(handle.ok());
  const Collected c = collect(**handle);
  ASSERT_TRUE(c.final_event.has_value());
  EXPECT_EQ(c.final_event->error.code(), ErrorCode::kWorkerCrashed);
  EXPECT_NE(c.final_event->error.message().find("no engine step"), std::string::npos)
      << c.final_event->error.message();
  wait_for_restart(*service, pid);
  EXPECT_EQ(service->worker()->crashes, 1u);
}

TEST_F(WorkerServiceTest, ShutdownEndsEveryStreamWhateverThreadWaitsOnIt) {
  std::unique_ptr<WorkerService> service = start(options(20));
  ASSERT_NE(service, nullptr);
  constexpr size_t kClients = 6;
  std::vector<Collected> got(kClients);
  std::vector<std::optional<Status>> refused(kClients);
  std::atomic<int> first_tokens{0};
  std::vector<std::thread> clients;
  for (size_t i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      auto handle = service->submit(greedy_request(prompt(20 + i), 400));
      if (!handle.ok()) {
        refused[i] = handle.status();
        first_tokens.fetch_add(1);
        return;
      }
      wait_for_first_token(**handle, got[i]);
      first_tokens.fetch_add(1);
      Collected rest = collect(**handle);
      if (rest.final_event) got[i].final_event = rest.final_event;
    });
  }
  // Four run at once (the worker's max_active); the rest wait in its queue.
  while (first_tokens.load() < 4) std::this_thread::sleep_for(5ms);
  std::thread second_caller([&] { service->shutdown(0ms); });
  service->shutdown(0ms);
  second_caller.join();
  for (std::thread& t : clients) t.join();
  for (size_t i = 0; i < kClients; ++i) {
    if (refused[i]) continue;
    ASSERT_TRUE(got[i].final_event.has_value()) << i;
    EXPECT_NE(got[i].final_event->finish_reason, serve::FinishReason::kLength) << i;
  }
  EXPECT_EQ(service->worker()->state, "stopped");
  auto after = service->submit(greedy_request(prompt(1), 2));
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace synapse::worker
