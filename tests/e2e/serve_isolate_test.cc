// SPDX-License-Identifier: Apache-2.0
// `synapse serve --isolate` (issue 19): each model's engine in a supervised worker process. With
// fail points (SYNAPSE_FAILPOINTS, inherited by the workers) and with `kill -9` of a worker found
// through `synapse ps`: a streaming client gets a final SSE error `worker_crashed`, retryable;
// the other model's stream goes on untouched; the next request to the crashed model succeeds
// within 5 s; a poison prompt is quarantined at its second crash; a crash-looping model is
// unavailable until its cool-down ends; a hung worker and one past its memory limit are killed
// and replaced alone; a durable job completes across three worker kills with every result exactly
// once. The soak (ServeIsolateSoak, label `slow`): mixed load while a random worker is killed every
// 30-60 s.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/server_process.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using testing::http_request;
using testing::run_command;
using testing::ServerProcess;
using testing::synapse_cli;

std::string quote(const std::string& s) { return "'" + s + "'"; }

// The model's worker as `synapse ps --json` shows it ({} when the model is not listed).
Json worker_of(const ServerProcess& s, const std::string& model) {
  const testing::CommandResult r = run_command(synapse_cli() + " ps --json --host " + s.url());
  const Json listed = Json::parse(r.stdout_text, nullptr, false);
  if (!listed.is_object() || !listed.contains("models")) return Json::object();
  for (const Json& m : listed["models"]) {
    if (m.value("name", "") == model && m.contains("worker")) return m["worker"];
  }
  return Json::object();
}

int64_t worker_pid(const ServerProcess& s, const std::string& model) {
  const Json w = worker_of(s, model);
  return w.value("pid", Json()).is_number_integer() ? w["pid"].get<int64_t>() : 0;
}

Json completion(const std::string& model, const std::string& prompt, int max_tokens,
                bool stream = false) {
  return {{"model", model},
          {"prompt", prompt},
          {"max_tokens", max_tokens},
          {"temperature", 0},
          {"stream", stream}};
}

// The `data:` payloads of an SSE body, parsed ("[DONE]" as a string).
std::vector<Json> sse_events(const std::string& body) {
  std::vector<Json> out;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const size_t end = body.find('\n', at);
    const std::string data = body.substr(at + 6, end == std::string::npos ? end : end - at - 6);
    out.push_back(data == "[DONE]" ? Json("[DONE]") : Json::parse(data, nullptr, false));
    at = end == std::string::npos ? body.size() : end;
  }
  return out;
}

class ServeIsolate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    ASSERT_EQ(testing::synth_serving_model(dir_->file("alpha.gguf"), 512), "");
    ASSERT_EQ(testing::synth_serving_model(dir_->file("beta.gguf"), 512, "llama"), "");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void TearDown() override { ::unsetenv("SYNAPSE_FAILPOINTS"); }

  // Both models, each in its worker; `fail_points` for the server and so its workers.
  std::unique_ptr<ServerProcess> serve(const std::string& fail_points, const std::string& args) {
    if (fail_points.empty()) {
      ::unsetenv("SYNAPSE_FAILPOINTS");
    } else {
      ::setenv("SYNAPSE_FAILPOINTS", fail_points.c_str(), 1);
    }
    auto s = std::make_unique<ServerProcess>(
        dir_->file("alpha.gguf"),
        "-m " + quote(dir_->file("beta.gguf")) + " --isolate --threads 1 " +
            (args.find("--jobs-db") == std::string::npos ? "--no-jobs " : "") + args,
        work_.file("serve.log"));
    EXPECT_GT(s->port(), 0) << log();
    return s;
  }

  std::string log() const { return testing::read_file_text(work_.file("serve.log")); }

  // Waits until the model's worker runs (its first request loads it); its pid, 0 on timeout.
  int64_t wait_running(const ServerProcess& s, const std::string& model,
                       std::chrono::seconds patience = 20s) {
    const auto deadline = Clock::now() + patience;
    while (Clock::now() < deadline) {
      const Json w = worker_of(s, model);
      if (w.value("state", "") == "running" && w.value("pid", Json()).is_number_integer()) {
        return w["pid"].get<int64_t>();
      }
      std::this_thread::sleep_for(50ms);
    }
    return 0;
  }

  testing::TempDir work_;
  static testing::TempDir* dir_;
};
testing::TempDir* ServeIsolate::dir_ = nullptr;

// The first check: kill -9 of a worker found through `synapse ps` ends its stream with a
// clean, retryable SSE error; the other model's stream completes untouched (same worker, same
// text as without the kill); the crashed model answers again within 5 s.
TEST_F(ServeIsolate, KilledWorkerEndsItsStreamWithRetryableErrorAndOtherModelsGoOn) {
  // Each engine step 30 ms: a 60-token stream runs for about two seconds.
  auto s = serve("serve.step_delay_ms=30", "");
  ASSERT_GT(s->port(), 0);
  const testing::HttpReply reference = http_request(s->port(), "POST", "/v1/completions",
                                                    completion("beta", "Once upon", 60).dump());
  ASSERT_EQ(reference.status, 200) << reference.body;
  const int64_t alpha_pid = wait_running(*s, "alpha");
  const int64_t beta_pid = wait_running(*s, "beta");
  ASSERT_GT(alpha_pid, 0) << log();
  ASSERT_GT(beta_pid, 0) << log();
  ASSERT_NE(alpha_pid, beta_pid);
  EXPECT_NE(alpha_pid, s->pid());

  auto alpha = std::async(std::launch::async, [&] {
    return http_request(s->port(), "POST", "/v1/completions",
                        completion("alpha", "Once upon", 200, true).dump());
  });
  auto beta = std::async(std::launch::async, [&] {
    return http_request(s->port(), "POST", "/v1/completions",
                        completion("beta", "Once upon", 60, true).dump());
  });
  std::this_thread::sleep_for(600ms);  // both streams are sending
  ASSERT_EQ(::kill(static_cast<pid_t>(alpha_pid), SIGKILL), 0);
  const auto killed_at = Clock::now();

  const testing::HttpReply a = alpha.get();
  EXPECT_EQ(a.status, 200);  // the stream had begun: the error comes as its last event
  const std::vector<Json> a_events = sse_events(a.body);
  ASSERT_GE(a_events.size(), 2u) << a.body;
  size_t tokens_before = 0;
  for (const Json& e : a_events) {
    if (e.is_object() && e.contains("choices")) ++tokens_before;
  }
  EXPECT_GT(tokens_before, 0u) << "the kill came before the stream began: " << a.body;
  const Json& error = a_events.back().is_string() ? a_events[a_events.size() - 2] : a_events.back();
  ASSERT_TRUE(error.contains("error")) << a.body;
  EXPECT_EQ(error["error"]["code"], "worker_crashed") << a.body;
  EXPECT_EQ(error["error"]["retryable"], true) << a.body;
  EXPECT_TRUE(error["error"].contains("retry_after_ms")) << a.body;

  // beta's stream: whole, the same text as the request before the kill.
  const testing::HttpReply b = beta.get();
  ASSERT_EQ(b.status, 200);
  std::string text;
  std::string finish;
  for (const Json& e : sse_events(b.body)) {
    ASSERT_FALSE(e.is_object() && e.contains("error")) << b.body;
    if (!e.is_object() || !e.contains("choices")) continue;
    text += e["choices"][0].value("text", "");
    if (e["choices"][0].value("finish_reason", Json()).is_string()) {
      finish = e["choices"][0]["finish_reason"];
    }
  }
  EXPECT_EQ(text, Json::parse(reference.body)["choices"][0]["text"].get<std::string>());
  EXPECT_FALSE(finish.empty()) << b.body;
  EXPECT_EQ(sse_events(b.body).back(), Json("[DONE]"));

  // The crashed model answers again within 5 s of the kill, from a new worker.
  testing::HttpReply again;
  while (Clock::now() - killed_at < 5s) {
    again = http_request(s->port(), "POST", "/v1/completions", completion("alpha", "Hi", 4).dump());
    if (again.status == 200) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(again.status, 200) << again.body << log();
  EXPECT_LT(Clock::now() - killed_at, 5s);
  const Json alpha_worker = worker_of(*s, "alpha");
  EXPECT_NE(alpha_worker.value("pid", int64_t{0}), alpha_pid);
  EXPECT_EQ(alpha_worker.value("crashes", 0), 1) << alpha_worker;
  EXPECT_EQ(alpha_worker.value("restarts", 0), 1) << alpha_worker;
  EXPECT_EQ(worker_pid(*s, "beta"), beta_pid);
  EXPECT_EQ(worker_of(*s, "beta").value("crashes", -1), 0);
  EXPECT_TRUE(s->alive());
}

// A prompt that crashes its worker (a fail point: SIGSEGV when the prompt has the marker) is
// answered worker_crashed twice, then refused as quarantined; the model keeps answering other
// prompts, the other model never notices, and /metrics and `synapse ps` count it.
TEST_F(ServeIsolate, PoisonPromptIsQuarantinedAtItsSecondCrash) {
  auto s = serve("engine.prompt=crash:POISON", "");
  ASSERT_GT(s->port(), 0);
  const Json poison = completion("alpha", "a POISON prompt", 8);
  for (int crash = 1; crash <= 2; ++crash) {
    const testing::HttpReply r = http_request(s->port(), "POST", "/v1/completions", poison.dump());
    EXPECT_EQ(r.status, 503) << crash << ": " << r.body;
    const Json body = Json::parse(r.body, nullptr, false);
    EXPECT_EQ(body["error"]["code"], "worker_crashed") << r.body;
    EXPECT_EQ(body["error"]["retryable"], true) << r.body;
    EXPECT_TRUE(r.headers.count("retry-after")) << r.body;
  }
  const testing::HttpReply refused =
      http_request(s->port(), "POST", "/v1/completions", poison.dump());
  EXPECT_EQ(refused.status, 422) << refused.body;
  const Json refusal = Json::parse(refused.body, nullptr, false);
  EXPECT_EQ(refusal["error"]["code"], "quarantined") << refused.body;
  EXPECT_EQ(refusal["error"]["retryable"], false) << refused.body;

  const testing::HttpReply fine =
      http_request(s->port(), "POST", "/v1/completions", completion("alpha", "Hello", 4).dump());
  EXPECT_EQ(fine.status, 200) << fine.body;
  const testing::HttpReply other =
      http_request(s->port(), "POST", "/v1/completions", completion("beta", "Hello", 4).dump());
  EXPECT_EQ(other.status, 200) << other.body;

  const std::string metrics = http_request(s->port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("synapse_worker_quarantined{model=\"alpha\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("synapse_worker_quarantine_refusals_total{model=\"alpha\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("synapse_worker_crashes_total{model=\"alpha\"} 2"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("synapse_worker_crashes_total{model=\"beta\"} 0"), std::string::npos)
      << metrics;
  const Json alpha = worker_of(*s, "alpha");
  EXPECT_EQ(alpha.value("quarantined", 0), 1) << alpha;
  EXPECT_EQ(alpha.value("crashes", 0), 2) << alpha;
  const testing::CommandResult table = run_command(synapse_cli() + " ps --host " + s->url());
  EXPECT_NE(table.stdout_text.find("WORKER"), std::string::npos) << table.stdout_text;
  EXPECT_NE(table.stdout_text.find("1 quarantined"), std::string::npos) << table.stdout_text;
  EXPECT_TRUE(s->alive());
}

// Crashes past the budget (2 within the window here) make the model unavailable for its
// cool-down (503 with Retry-After); the other model serves throughout; after the cool-down the
// model answers again.
TEST_F(ServeIsolate, CrashLoopingModelIsUnavailableUntilItsCoolDownEnds) {
  auto s = serve("engine.prompt=crash:BOOM",
                 "--worker-crash-budget 2 --worker-crash-window 60 --worker-cool-down 3");
  ASSERT_GT(s->port(), 0);
  for (const char* prompt : {"BOOM one", "BOOM two"}) {  // two prompts: no quarantine
    const testing::HttpReply r =
        http_request(s->port(), "POST", "/v1/completions", completion("alpha", prompt, 4).dump());
    EXPECT_EQ(r.status, 503) << r.body;
    EXPECT_EQ(Json::parse(r.body, nullptr, false)["error"]["code"], "worker_crashed") << r.body;
  }
  const auto spent_at = Clock::now();
  const testing::HttpReply down =
      http_request(s->port(), "POST", "/v1/completions", completion("alpha", "Hello", 4).dump());
  EXPECT_EQ(down.status, 503) << down.body;
  const Json body = Json::parse(down.body, nullptr, false);
  EXPECT_EQ(body["error"]["code"], "unavailable") << down.body;
  EXPECT_EQ(body["error"]["retryable"], true) << down.body;
  ASSERT_TRUE(down.headers.count("retry-after")) << down.body;
  const int retry_after = std::stoi(down.headers.at("retry-after"));
  EXPECT_GE(retry_after, 1);
  EXPECT_LE(retry_after, 3);
  EXPECT_EQ(worker_of(*s, "alpha").value("state", ""), "unavailable");
  const testing::HttpReply other =
      http_request(s->port(), "POST", "/v1/completions", completion("beta", "Hello", 4).dump());
  EXPECT_EQ(other.status, 200) << other.body;

  testing::HttpReply back;
  while (Clock::now() - spent_at < 20s) {
    back =
        http_request(s->port(), "POST", "/v1/completions", completion("alpha", "Hello", 4).dump());
    if (back.status == 200) break;
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(back.status, 200) << back.body << log();
  EXPECT_GE(Clock::now() - spent_at, 2500ms) << "answered before the cool-down ended";
  EXPECT_TRUE(s->alive());
}

// `marker` in a prompt to alpha sets off a fail point that makes its worker misbehave; the
// supervisor kills it within `patience` (the request gets worker_crashed, its message saying
// why: `reason`) and starts a new one, which answers; beta's worker keeps its pid.
void expect_killed_alone(const ServerProcess& s, const std::string& marker,
                         const std::string& reason, std::chrono::seconds patience) {
  ASSERT_EQ(
      http_request(s.port(), "POST", "/v1/completions", completion("beta", "Hi", 2).dump()).status,
      200);
  const int64_t beta_pid = worker_pid(s, "beta");
  ASSERT_GT(beta_pid, 0);
  const auto sent_at = Clock::now();
  const testing::HttpReply killed = http_request(s.port(), "POST", "/v1/completions",
                                                 completion("alpha", marker + " here", 4).dump());
  EXPECT_EQ(killed.status, 503) << killed.body;
  const Json body = Json::parse(killed.body, nullptr, false);
  EXPECT_EQ(body["error"]["code"], "worker_crashed") << killed.body;
  EXPECT_NE(body["error"].value("message", "").find(reason), std::string::npos) << killed.body;
  EXPECT_LT(Clock::now() - sent_at, patience);
  const testing::HttpReply fine =
      http_request(s.port(), "POST", "/v1/completions", completion("alpha", "Hello", 4).dump());
  EXPECT_EQ(fine.status, 200) << fine.body;
  EXPECT_EQ(worker_pid(s, "beta"), beta_pid);
  EXPECT_EQ(worker_of(s, "alpha").value("crashes", 0), 1);
  EXPECT_TRUE(s.alive());
}

// A worker that stops making engine steps with a request running (a fail point hangs it) is
// killed after --worker-hang-timeout and replaced.
TEST_F(ServeIsolate, HungWorkerIsKilledAndReplaced) {
  auto s = serve("engine.prompt=hang:HANG", "--worker-hang-timeout 1");
  ASSERT_GT(s->port(), 0);
  expect_killed_alone(*s, "HANG", "no engine step", 10s);
}

// One whose resident memory passes --worker-memory-limit (a fail point allocates without end)
// is killed alone: the front and the other model's worker are untouched.
TEST_F(ServeIsolate, WorkerPastItsMemoryLimitIsKilledAlone) {
  auto s = serve("engine.prompt=alloc:GREEDY", "--worker-memory-limit 1500MB");
  ASSERT_GT(s->port(), 0);
  expect_killed_alone(*s, "GREEDY", "resident memory", 30s);
}

// A durable job whose items run while the worker is killed three times completes: every item
// succeeds once, and its results equal the same requests answered without a kill (greedy; one
// item in ten is compared, as each direct request takes its steps' delay).
TEST_F(ServeIsolate, DurableJobCompletesAcrossThreeWorkerKills) {
  // Three kills spend the default crash budget (3 within 60 s): the model is unavailable for
  // the cool-down (2 s here), which the items wait out without spending attempts.
  auto s = serve("serve.step_delay_ms=40",
                 "--parallel 4 --worker-cool-down 2 --jobs-db " + quote(work_.file("jobs.db")));
  ASSERT_GT(s->port(), 0);
  const auto item_body = [](int i) {
    return completion("alpha", "Story " + std::to_string(i) + " begins", 6 + i % 5);
  };
  constexpr int kItems = 240;
  Json requests = Json::array();
  for (int i = 0; i < kItems; ++i) {
    requests.push_back({{"custom_id", "item" + std::to_string(i)},
                        {"url", "/v1/completions"},
                        {"body", item_body(i)}});
  }
  const testing::HttpReply created = http_request(
      s->port(), "POST", "/v1/jobs", Json{{"requests", requests}, {"class", "batch"}}.dump());
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = Json::parse(created.body)["id"];
  const auto job = [&] {
    return Json::parse(http_request(s->port(), "GET", "/v1/jobs/" + id).body, nullptr, false);
  };

  for (int kill = 0; kill < 3; ++kill) {
    const int64_t pid = wait_running(*s, "alpha");
    ASSERT_GT(pid, 0) << log();
    // Items finish on this worker first -- those the last kill failed too, which run again
    // after their 1 s back-off -- so that no item is running at two kills (it would be
    // quarantined, as a poison prompt is).
    const int64_t before = job()["counts"].value("succeeded", 0);
    const auto since = Clock::now();
    while (Clock::now() - since < 30s &&
           (job()["counts"].value("succeeded", 0) < before + 12 || Clock::now() - since < 4s)) {
      std::this_thread::sleep_for(50ms);
    }
    ASSERT_NE(job()["status"], "completed") << "the job ended before kill " << kill + 1;
    ASSERT_EQ(::kill(static_cast<pid_t>(pid), SIGKILL), 0);
  }
  Json done;
  const auto deadline = Clock::now() + 120s;
  do {
    std::this_thread::sleep_for(100ms);
    done = job();
  } while (done["status"] != "completed" && Clock::now() < deadline);
  ASSERT_EQ(done["status"], "completed") << done.dump() << log();
  EXPECT_EQ(done["counts"]["succeeded"], kItems) << done.dump();
  EXPECT_EQ(done["counts"]["failed"], 0) << done.dump();
  EXPECT_EQ(worker_of(*s, "alpha").value("crashes", 0), 3);

  std::map<std::string, int> seen;
  Json page = 0;
  while (!page.is_null()) {
    const testing::HttpReply r = http_request(
        s->port(), "GET", "/v1/jobs/" + id + "/results?page=" + std::to_string(page.get<int>()));
    ASSERT_EQ(r.status, 200) << r.body;
    const Json results = Json::parse(r.body);
    for (const Json& result : results["data"]) {
      const std::string custom_id = result["custom_id"];
      ++seen[custom_id];
      const int i = std::stoi(custom_id.substr(4));
      if (i % 10 != 0) continue;  // a sample: each direct request takes its steps' delay
      const testing::HttpReply direct =
          http_request(s->port(), "POST", "/v1/completions", item_body(i).dump());
      ASSERT_EQ(direct.status, 200) << direct.body;
      EXPECT_EQ(result["response"]["choices"][0]["text"],
                Json::parse(direct.body)["choices"][0]["text"])
          << custom_id;
    }
    page = results["next_page"];
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kItems));
  for (const auto& [custom_id, count] : seen) EXPECT_EQ(count, 1) << custom_id;
}

// The front's resident memory, in bytes (0 when it cannot be read).
uint64_t resident_bytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

// What a soak request may end in: a whole answer, or a typed retryable error (the worker died
// under it, or is being restarted) -- as a status or as a stream's last event. Anything else,
// and a request that does not end within a minute, is a failure the soak reports.
struct SoakTally {
  std::mutex mu;
  std::map<std::string, int> outcomes;  // "200", "503 worker_crashed", ...
  std::vector<std::string> failures;
  void add(const std::string& outcome, const std::string& failure) {
    std::lock_guard lock(mu);
    ++outcomes[outcome];
    if (!failure.empty() && failures.size() < 20) failures.push_back(failure);
  }
};

void soak_request(int port, std::mt19937& rng, SoakTally& tally) {
  const std::string model = rng() % 2 ? "alpha" : "beta";
  const int kind = static_cast<int>(rng() % 3);
  const std::string prompt = "Soak " + std::to_string(rng() % 1000) + " says";
  std::string path = "/v1/completions";
  Json body = completion(model, prompt, 4 + static_cast<int>(rng() % 40), kind == 1);
  if (kind == 2) {
    path = "/v1/embeddings";
    body = {{"model", model}, {"input", {prompt, "and more"}}};
  }
  const testing::HttpReply r = testing::http_request_within(port, "POST", path, body.dump(), 60s);
  const std::string what = path + " " + body.dump();
  if (r.timed_out) return tally.add("hung", "no answer within 60 s: " + what);
  const auto retryable_error = [](const Json& error) {
    const std::string code = error.value("code", "");
    return error.value("retryable", false) && (code == "worker_crashed" || code == "unavailable");
  };
  if (r.status == 200 && kind == 1) {
    const std::vector<Json> events = sse_events(r.body);
    if (events.empty() || events.back() != Json("[DONE]")) {
      return tally.add("stream cut", "a stream without [DONE]: " + what + " -> " + r.body);
    }
    for (const Json& e : events) {
      if (e.is_object() && e.contains("error")) {
        const bool typed = retryable_error(e["error"]);
        return tally.add("stream error " + e["error"].value("code", ""),
                         typed ? "" : "an untyped stream error: " + e.dump());
      }
    }
    return tally.add("200", "");
  }
  if (r.status == 200) return tally.add("200", "");
  const Json error = Json::parse(r.body, nullptr, false).value("error", Json::object());
  const bool typed = r.status == 503 && retryable_error(error) && r.headers.count("retry-after");
  tally.add(std::to_string(r.status) + " " + error.value("code", ""),
            typed ? ""
                  : "not a typed retryable error: " + what + " -> " + std::to_string(r.status) +
                        " " + r.body);
}

// Mixed load (completions, streams, embeddings on two models from four clients) for
// $SYNAPSE_SOAK_SECONDS (default 20 minutes), a random model's worker killed every 30-60 s: no
// request hangs, every failure is a typed retryable error, and the front's resident memory
// stays flat (from the end of the first third to the end, growth under 10% + 8 MiB).
TEST(ServeIsolateSoak, MixedLoadWithRandomWorkerKills) {
  const char* env = std::getenv("SYNAPSE_SOAK_SECONDS");
  const auto duration = std::chrono::seconds(env != nullptr ? std::atoi(env) : 1200);
  ASSERT_GE(duration.count(), 60) << "SYNAPSE_SOAK_SECONDS below a minute sees no kill";
  testing::TempDir dir;
  ASSERT_EQ(testing::synth_serving_model(dir.file("alpha.gguf"), 512), "");
  ASSERT_EQ(testing::synth_serving_model(dir.file("beta.gguf"), 512, "llama"), "");
  // Under AddressSanitizer, freed memory waits in a 256 MB quarantine: a small one lets the
  // front's RSS settle within the soak (the variable means nothing to other builds).
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options = std::string(asan != nullptr ? asan : "") +
                                   (asan != nullptr && *asan ? ":" : "") + "quarantine_size_mb=16";
  ::setenv("ASAN_OPTIONS", asan_options.c_str(), 1);
  ServerProcess s(dir.file("alpha.gguf"),
                  "-m " + quote(dir.file("beta.gguf")) +
                      " --isolate --threads 1 --no-jobs --parallel 4 --worker-crash-budget 100",
                  dir.file("serve.log"));
  ASSERT_GT(s.port(), 0) << testing::read_file_text(dir.file("serve.log"));

  SoakTally tally;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (unsigned c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(1234 + c);
      while (!stop.load()) soak_request(s.port(), rng, tally);
    });
  }
  std::mt19937 rng(42);
  const auto start = Clock::now();
  auto next_kill = start + std::chrono::seconds(30 + rng() % 31);
  uint64_t rss_settled = 0;
  uint64_t rss_peak = 0;
  int kills = 0;
  while (Clock::now() - start < duration) {
    std::this_thread::sleep_for(250ms);
    const uint64_t rss = resident_bytes(s.pid());
    rss_peak = std::max(rss_peak, rss);
    if (rss_settled == 0 && Clock::now() - start >= duration / 3) rss_settled = rss;
    if (Clock::now() < next_kill) continue;
    const std::string model = rng() % 2 ? "alpha" : "beta";
    const int64_t pid = worker_pid(s, model);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), SIGKILL) == 0) ++kills;
    next_kill = Clock::now() + std::chrono::seconds(30 + rng() % 31);
  }
  stop = true;
  for (std::thread& t : clients) t.join();
  const uint64_t rss_end = resident_bytes(s.pid());

  const auto mib = [](uint64_t bytes) { return static_cast<double>(bytes) / 1048576.0; };
  std::string summary;
  for (const auto& [outcome, count] : tally.outcomes) {
    summary += outcome + ": " + std::to_string(count) + "; ";
  }
  std::printf(
      "{\"soak_seconds\": %lld, \"kills\": %d, \"front_rss_settled_mib\": %.1f, "
      "\"front_rss_end_mib\": %.1f, \"front_rss_peak_mib\": %.1f, \"outcomes\": \"%s\"}\n",
      static_cast<long long>(duration.count()), kills, mib(rss_settled), mib(rss_end),
      mib(rss_peak), summary.c_str());
  // The first kill within a minute, then one at most a minute after the last.
  EXPECT_GE(kills, static_cast<int>(duration.count() / 60) - 1) << summary;
  EXPECT_TRUE(tally.failures.empty()) << tally.failures.front() << "\n" << summary;
  EXPECT_GT(tally.outcomes["200"], 100) << summary;
  EXPECT_GT(rss_settled, 0u);
  EXPECT_LE(rss_end, rss_settled + rss_settled / 10 + (8u << 20))
      << "the front's RSS grew from " << rss_settled << " to " << rss_end << " bytes";
  EXPECT_TRUE(s.alive());
}

}  // namespace
}  // namespace synapse
