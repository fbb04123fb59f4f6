// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of `synapse serve`: the server runs as its own process on a free loopback
// port with a small synthesized model and is driven by clients no one here wrote (the official
// OpenAI SDK for Node, curl) and by raw sockets where a test must control the connection
// (closing it mid-stream, 200 requests at once).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "tests/e2e/server_process.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;
using testing::run_command;
using testing::synapse_cli;

constexpr const char* kKey = "e2e-key";

std::string quote(const std::string& s) { return "'" + s + "'"; }

using testing::connect_loopback;
using testing::HttpReply;
using testing::send_all;

// A server with this file's API key; ARGS as for `synapse serve`.
class ServerProcess : public testing::ServerProcess {
 public:
  ServerProcess(const std::string& model, const std::string& args, const std::string& log_path)
      : testing::ServerProcess(model, std::string("--api-key ") + kKey + " " + args, log_path) {}
};

std::string request_text(const std::string& method, const std::string& path,
                         const std::string& body, const std::string& key) {
  return testing::http_request_text(method, path, body, key);
}

HttpReply http(int port, const std::string& method, const std::string& path,
               const std::string& body = "", const std::string& key = kKey,
               const std::string& extra_headers = "") {
  return testing::http_request(port, method, path, body, key, extra_headers);
}

// The `data:` payloads of a server-sent event stream, checking its framing.
std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p < body.size()) {
    const size_t end = body.find("\n\n", p);
    EXPECT_NE(end, std::string::npos) << "an event not ended by a blank line: " << body.substr(p);
    if (end == std::string::npos) break;
    const std::string event = body.substr(p, end - p);
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    out.push_back(event.substr(6));
    p = end + 2;
  }
  return out;
}

// Text of a streamed completion (text_completion chunks).
std::string streamed_text(const std::string& body) {
  std::string text;
  for (const std::string& payload : sse_payloads(body)) {
    if (payload == "[DONE]") break;
    const Json chunk = Json::parse(payload);
    if (!chunk["choices"].empty()) text += chunk["choices"][0]["text"].get<std::string>();
  }
  return text;
}

// One sample of a Prometheus metric without labels (or with exactly `labels`).
double metric(int port, const std::string& name) {
  const HttpReply r = http(port, "GET", "/metrics");
  std::smatch m;
  if (std::regex_search(r.body, m, std::regex("\n" + name + " ([0-9.e+-]+)"))) {
    return std::stod(m[1]);
  }
  return -1.0;
}

std::string completion_body(const std::string& prompt, int max_tokens, bool stream,
                            const std::string& extra = "") {
  Json j = {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"stream", stream}};
  std::string s = j.dump();
  if (!extra.empty()) s = s.substr(0, s.size() - 1) + "," + extra + "}";
  return s;
}

class ServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    model_ = new std::string(dir_->file("tiny.gguf"));
    const std::string error = testing::synth_serving_model(*model_, 4096);
    ASSERT_EQ(error, "");
  }
  static void TearDownTestSuite() {
    delete model_;
    delete dir_;
  }

  std::unique_ptr<ServerProcess> start(const std::string& args = "") {
    auto s =
        std::make_unique<ServerProcess>(*model_, "--threads 1 " + args, dir_->file("server.log"));
    EXPECT_GT(s->port(), 0) << "no URL in the start-up line: '" << s->banner() << "'\n"
                            << testing::read_file_text(dir_->file("server.log"));
    return s;
  }

  static testing::TempDir* dir_;
  static std::string* model_;
};
testing::TempDir* ServeTest::dir_ = nullptr;
std::string* ServeTest::model_ = nullptr;

TEST_F(ServeTest, OpenAiSdkForNode) {
  SYN_REQUIRE_OPENAI_NODE_SDK(npm_dir, SYNAPSE_NPM_DIR);
  auto server = start("--chat-template chatml --parallel 4");
  ASSERT_GT(server->port(), 0);
  const auto r = run_command(testing::openai_node_sdk_command(
      npm_dir, SYNAPSE_SOURCE_DIR, "openai_sdk_client.cjs", server->url(), kKey, "tiny"));
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("\"ok\":true"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(server->stop(), 0);
}

// Structured outputs and tool calls on random-weight models: only the constraint can make the
// replies parse and validate (tests/e2e/openai_sdk_structured.cjs says what is checked). A
// second model with Qwen 2.5's vocabulary and chat template covers tool_choice "auto", where
// the model itself writes the <tool_call> token.
TEST_F(ServeTest, StructuredOutputsAndToolCallsThroughTheOpenAiSdk) {
  SYN_REQUIRE_OPENAI_NODE_SDK(npm_dir, SYNAPSE_NPM_DIR);
  SYN_REQUIRE_FIXTURE(maskbench, "schemas/maskbench/Github_easy.jsonl");
  SYN_REQUIRE_FIXTURE(qwen_vocab, "tokenizer/vocab/qwen2-vocab.gguf");
  const std::string qwen_model = dir_->file("qwen.gguf");
  const auto synth = run_command(
      synapse_cli() + " synth --arch qwen2 --n-embd 64 --n-ff 128 --n-layer 1 --n-head 4 " +
      "--n-head-kv 2 --n-ctx 2048 --type q8_0 --vocab-from " + quote(qwen_vocab) + " -o " +
      quote(qwen_model));
  ASSERT_EQ(synth.exit_code, 0) << synth.stderr_text;
  auto server = start("--chat-template chatml --parallel 4");
  ASSERT_GT(server->port(), 0);
  ServerProcess qwen(qwen_model, "--threads 1", dir_->file("qwen-server.log"));
  ASSERT_GT(qwen.port(), 0) << testing::read_file_text(dir_->file("qwen-server.log"));
  // The id of Qwen's <tool_call> token, from the tokenizer rather than written down here.
  const auto ids = run_command(synapse_cli() + " tokenize -m " + quote(qwen_vocab) +
                               " -p '<tool_call>' --special --ids");
  ASSERT_EQ(ids.exit_code, 0) << ids.stderr_text;
  std::string trigger;  // "[151657]" -> "151657"
  for (const char c : ids.stdout_text) {
    if (c >= '0' && c <= '9') trigger += c;
  }
  ASSERT_FALSE(trigger.empty()) << ids.stdout_text;
  const std::string dir = maskbench.substr(0, maskbench.rfind('/'));
  const auto r = run_command(testing::openai_node_sdk_command(
      npm_dir, SYNAPSE_SOURCE_DIR, "openai_sdk_structured.cjs", server->url(), kKey, "tiny",
      "SYNAPSE_MASKBENCH=" + quote(dir) + " SYNAPSE_QWEN_URL=" + qwen.url() +
          " SYNAPSE_TOOL_CALL_TOKEN=" + trigger));
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("\"auto\""), std::string::npos) << r.stdout_text;
  EXPECT_EQ(qwen.stop(), 0);
  EXPECT_EQ(server->stop(), 0);
}

TEST_F(ServeTest, RawSseFramingWithCurl) {
  auto server = start("--chat-template chatml");
  ASSERT_GT(server->port(), 0);
  const std::string curl = "curl -sS -N -D - -H 'Authorization: Bearer " + std::string(kKey) +
                           "' -H 'Content-Type: application/json' " + server->url();
  const auto r = run_command(
      curl + "/v1/chat/completions -d " +
      quote(R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":6,"temperature":0,)"
            R"("stream":true,"stream_options":{"include_usage":true}})"));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const size_t head_end = r.stdout_text.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos);
  const std::string head = r.stdout_text.substr(0, head_end);
  EXPECT_NE(head.find("HTTP/1.1 200"), std::string::npos) << head;
  EXPECT_NE(head.find("Content-Type: text/event-stream"), std::string::npos) << head;
  const std::string body = r.stdout_text.substr(head_end + 4);
  ASSERT_GE(body.size(), 14u);
  EXPECT_EQ(body.substr(body.size() - 14), "data: [DONE]\n\n");
  const std::vector<std::string> events = sse_payloads(body);
  ASSERT_GE(events.size(), 4u);  // role, content..., finish, usage, [DONE]
  const Json first = Json::parse(events.front());
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  const Json finish = Json::parse(events[events.size() - 3]);
  EXPECT_TRUE(finish["choices"][0]["finish_reason"].is_string()) << finish.dump();
  const Json usage = Json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_GT(usage["usage"]["prompt_tokens"].get<int>(), 0);
  EXPECT_LE(usage["usage"]["completion_tokens"].get<int>(), 6);

  // /tokenize and /detokenize round-trip.
  const auto tok = run_command(curl + "/tokenize -d '{\"content\":\"Hello world\"}'");
  const Json ids = Json::parse(tok.stdout_text.substr(tok.stdout_text.find("\r\n\r\n") + 4));
  ASSERT_FALSE(ids["tokens"].empty()) << tok.stdout_text;
  const auto detok =
      run_command(curl + "/detokenize -d " + quote(Json{{"tokens", ids["tokens"]}}.dump()));
  EXPECT_NE(detok.stdout_text.find(R"({"content":"Hello world"})"), std::string::npos)
      << detok.stdout_text;
  EXPECT_EQ(server->stop(), 0);
}

TEST_F(ServeTest, ConcurrentGreedyStreamsMatchEachAlone) {
  auto server = start("--parallel 8");
  ASSERT_GT(server->port(), 0);
  constexpr size_t kStreams = 8;
  std::vector<std::string> prompts, alone(kStreams), together(kStreams);
  for (size_t i = 0; i < kStreams; ++i) {
    prompts.push_back("Stream number " + std::to_string(i) + " tells" + std::string(i, '!'));
  }
  for (size_t i = 0; i < kStreams; ++i) {
    const HttpReply r =
        http(server->port(), "POST", "/v1/completions", completion_body(prompts[i], 24, true));
    ASSERT_EQ(r.status, 200) << r.body;
    alone[i] = streamed_text(r.body);
  }
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      const HttpReply r =
          http(server->port(), "POST", "/v1/completions", completion_body(prompts[i], 24, true));
      together[i] = r.status == 200 ? streamed_text(r.body) : "HTTP " + std::to_string(r.status);
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < kStreams; ++i) {
    EXPECT_FALSE(alone[i].empty()) << i;
    EXPECT_EQ(together[i], alone[i]) << "stream " << i;
  }
  EXPECT_EQ(server->stop(), 0);
}

TEST_F(ServeTest, ClosingTheConnectionFreesTheSlotAndPages) {
  auto server = start("--parallel 2 --ctx 4096");
  ASSERT_GT(server->port(), 0);
  const int port = server->port();
  const double pages_before = metric(port, "synapse_kv_pages_in_use");
  ASSERT_GE(pages_before, 0.0);
  for (const bool stream : {true, false}) {
    SCOPED_TRACE(stream ? "streaming" : "not streaming");
    const int fd = connect_loopback(port);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, request_text("POST", "/v1/completions",
                                          completion_body("A long story:", 4000, stream), kKey)));
    // Wait until it is generating (a streamed token, or the active gauge for a plain request).
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    if (stream) {
      std::string seen;
      char buf[4096];
      while (seen.find("data: ") == std::string::npos &&
             std::chrono::steady_clock::now() < deadline) {
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        seen.append(buf, static_cast<size_t>(n));
      }
      ASSERT_NE(seen.find("data: "), std::string::npos) << seen;
    } else {
      while (metric(port, "synapse_active_sequences") < 1.0 &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(5ms);
      }
    }
    ASSERT_EQ(metric(port, "synapse_active_sequences"), 1.0);
    close(fd);
    const auto closed = std::chrono::steady_clock::now();
    while ((metric(port, "synapse_active_sequences") != 0.0 ||
            metric(port, "synapse_kv_pages_in_use") != pages_before) &&
           std::chrono::steady_clock::now() - closed < 5s) {
      std::this_thread::sleep_for(10ms);
    }
    const double freed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - closed).count();
    EXPECT_EQ(metric(port, "synapse_active_sequences"), 0.0);
    EXPECT_EQ(metric(port, "synapse_kv_pages_in_use"), pages_before);
    EXPECT_LT(freed_s, 1.0) << "slot and pages freed " << freed_s << " s after the close";
  }
  const HttpReply m = http(port, "GET", "/metrics");
  EXPECT_NE(m.body.find("cancelled"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("synapse_http_requests_total{route=\"/v1/completions\",status=\"499\"}"),
            std::string::npos)
      << m.body;
  EXPECT_EQ(server->stop(), 0);
}

TEST_F(ServeTest, OverloadGets429WithRetryAfterAndHealthKeepsAnswering) {
  auto server = start("--parallel 2 --queue-limit 32");
  ASSERT_GT(server->port(), 0);
  const int port = server->port();
  constexpr size_t kRequests = 200;
  std::vector<HttpReply> replies(kRequests);
  std::atomic<bool> done{false};
  std::atomic<int> health_ok{0}, health_bad{0};
  double worst_health_s = 0.0;
  std::thread health([&] {
    while (!done) {
      const auto t0 = std::chrono::steady_clock::now();
      const HttpReply h = http(port, "GET", "/health", "", "");
      worst_health_s =
          std::max(worst_health_s,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      (h.status == 200 ? health_ok : health_bad)++;
      std::this_thread::sleep_for(20ms);
    }
  });
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      replies[i] = http(port, "POST", "/v1/completions",
                        completion_body("Request " + std::to_string(i), 16, false));
    });
  }
  for (std::thread& t : threads) t.join();
  done = true;
  health.join();
  int ok = 0, refused = 0;
  std::map<int, int> by_status;
  for (const HttpReply& r : replies) ++by_status[r.status];
  for (const auto& [status, n] : by_status) std::printf("status %d: %d\n", status, n);
  for (const HttpReply& r : replies) {
    if (r.status == 200) {
      ++ok;
    } else {
      ++refused;
      EXPECT_EQ(r.status, 429) << r.body;
      EXPECT_NE(r.body.find(R"("code":"queue_full")"), std::string::npos) << r.body;
      const int retry =
          std::atoi(r.headers.count("retry-after") ? r.headers.at("retry-after").c_str() : "0");
      EXPECT_GE(retry, 1);
      EXPECT_LE(retry, 60);
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GE(ok, 32);  // the queue and the slots
  EXPECT_EQ(static_cast<size_t>(ok + refused), kRequests);
  EXPECT_GT(health_ok.load(), 0);
  EXPECT_EQ(health_bad.load(), 0);
  EXPECT_LT(worst_health_s, 5.0);
  EXPECT_TRUE(server->alive());
  EXPECT_EQ(http(port, "GET", "/health", "", "").status, 200);
  // RSS stays bounded (the model is tiny; a leak per request would show).
  const std::string status =
      testing::read_file_text("/proc/" + std::to_string(server->pid()) + "/status");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(status, m, std::regex("VmRSS:\\s+([0-9]+) kB")));
  EXPECT_LT(std::stol(m[1]), 1024L * 1024) << "RSS " << m[1] << " kB";
  EXPECT_EQ(server->stop(), 0);
}

TEST_F(ServeTest, BadInputGetsTheRight4xxAndStableCode) {
  auto server = start("--ctx 64");
  ASSERT_GT(server->port(), 0);
  const std::string curl =
      "curl -sS -o - -w '\\n%{http_code}' -H 'Content-Type: application/json' ";
  const std::string auth = "-H 'Authorization: Bearer " + std::string(kKey) + "' ";
  struct Case {
    std::string name, args;
    int status;
    std::string code;
  };
  const std::string big = dir_->file("big.json");
  {
    std::string body = R"({"prompt": ")" + std::string(100u << 20, 'a') + "\"}";
    testing::write_file_bytes(big, std::vector<uint8_t>(body.begin(), body.end()));
  }
  const std::string url = server->url();
  const std::vector<Case> cases = {
      {"malformed JSON", auth + "-d '{\"prompt\": ' " + url + "/v1/completions", 400,
       "invalid_json"},
      {"wrong type",
       auth + "-d '{\"prompt\": \"a\", \"max_tokens\": \"ten\"}' " + url + "/v1/completions", 400,
       "invalid_type"},
      {"unknown model",
       auth + "-d '{\"model\": \"gpt-4\", \"prompt\": \"a\"}' " + url + "/v1/completions", 404,
       "model_not_found"},
      {"prompt longer than the context",
       auth + "-d '{\"prompt\": \"" +
           [] {
             std::string s;
             for (int i = 0; i < 200; ++i) s += "word" + std::to_string(i) + " ";
             return s;
           }() +
           "\"}' " + url + "/v1/completions",
       400, "context_length_exceeded"},
      {"negative max_tokens",
       auth + "-d '{\"prompt\": \"a\", \"max_tokens\": -5}' " + url + "/v1/completions", 400,
       "invalid_value"},
      {"unknown class",
       auth + "-H 'X-Synapse-Class: urgent' -d '{\"prompt\": \"a\"}' " + url + "/v1/completions",
       400, "invalid_value"},
      {"bad priority",
       auth + "-d '{\"prompt\": \"a\", \"priority\": \"now\"}' " + url + "/v1/completions", 400,
       "invalid_value"},
      {"100 MB body", auth + "--data-binary @" + quote(big) + " " + url + "/v1/completions", 413,
       "request_too_large"},
      {"missing API key", "-d '{\"prompt\": \"a\"}' " + url + "/v1/completions", 401,
       "invalid_api_key"},
      {"wrong API key",
       "-H 'Authorization: Bearer nope' -d '{\"prompt\": \"a\"}' " + url + "/v1/completions", 401,
       "invalid_api_key"},
      {"detokenize outside the vocabulary",
       auth + "-d '{\"tokens\": [99999999]}' " + url + "/detokenize", 400, "invalid_value"},
      {"unknown route", auth + url + "/v1/nothing", 404, "not_found"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto r = run_command(curl + c.args);
    const size_t nl = r.stdout_text.rfind('\n');
    ASSERT_NE(nl, std::string::npos) << r.stdout_text << r.stderr_text;
    const int status = std::atoi(r.stdout_text.c_str() + nl + 1);
    const std::string body = r.stdout_text.substr(0, nl);
    EXPECT_EQ(status, c.status) << body << r.stderr_text;
    EXPECT_NE(body.find("\"code\":\"" + c.code + "\""), std::string::npos) << body;
  }
  // Unauthenticated /health still answers; completions still work after all that.
  EXPECT_EQ(http(server->port(), "GET", "/health", "", "").status, 200);
  EXPECT_EQ(http(server->port(), "POST", "/v1/completions", completion_body("a", 2, false)).status,
            200);
  EXPECT_EQ(server->stop(), 0);
}

TEST_F(ServeTest, ChatWithoutATemplateIsAClear400) {
  // Synthetic vocabularies carry a ChatML template; llama.cpp's SentencePiece one has none.
  SYN_REQUIRE_FIXTURE(vocab, "tokenizer/vocab/ggml-vocab-llama-spm.gguf");
  const std::string model = dir_->file("no-template.gguf");
  const auto synth = run_command(synapse_cli() +
                                 " synth --arch llama --n-embd 64 --n-ff 128 --n-layer 1 "
                                 "--n-head 4 --n-head-kv 2 --type q8_0 --vocab-from " +
                                 quote(vocab) + " -o " + quote(model));
  ASSERT_EQ(synth.exit_code, 0) << synth.stderr_text;
  ServerProcess server(model, "--threads 1", dir_->file("no-template.log"));
  ASSERT_GT(server.port(), 0) << testing::read_file_text(dir_->file("no-template.log"));
  EXPECT_NE(server.banner().find("no chat template"), std::string::npos) << server.banner();
  const HttpReply chat = http(server.port(), "POST", "/v1/chat/completions",
                              R"({"messages": [{"role": "user", "content": "a"}]})");
  EXPECT_EQ(chat.status, 400) << chat.body;
  EXPECT_NE(chat.body.find(R"("code":"no_chat_template")"), std::string::npos) << chat.body;
  EXPECT_NE(chat.body.find("--chat-template"), std::string::npos) << chat.body;
  // Completions still work; naming a template makes chat work.
  EXPECT_EQ(http(server.port(), "POST", "/v1/completions", completion_body("a", 2, false)).status,
            200);
  EXPECT_EQ(server.stop(), 0);
  ServerProcess named(model, "--threads 1 --chat-template llama2", dir_->file("named.log"));
  ASSERT_GT(named.port(), 0);
  EXPECT_EQ(http(named.port(), "POST", "/v1/chat/completions",
                 R"({"messages": [{"role": "user", "content": "a"}], "max_tokens": 2})")
                .status,
            200);
  // A template that cannot be parsed stops the server at start-up.
  const auto bad = run_command(synapse_cli() + " serve -m " + quote(model) +
                               " --port 0 --chat-template '{% if %}'");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.stderr_text.find("template"), std::string::npos) << bad.stderr_text;
}

// Streams a completion of `max_tokens`, sends SIGTERM once the engine runs it, and returns what
// the client received by the time the server has exited (expected with status 0).
std::string stream_through_sigterm(ServerProcess& server, int max_tokens) {
  std::string body;
  std::thread client([&] {
    body =
        http(server.port(), "POST", "/v1/completions", completion_body("Go on:", max_tokens, true))
            .body;
  });
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (metric(server.port(), "synapse_active_sequences") < 1.0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(server.stop(), 0);
  client.join();
  return body;
}

TEST_F(ServeTest, SigtermLetsARunningStreamFinish) {
  auto server = start("--shutdown-grace 30");
  ASSERT_GT(server->port(), 0);
  const std::string body = stream_through_sigterm(*server, 2000);
  ASSERT_GE(body.size(), 14u) << body;
  EXPECT_EQ(body.substr(body.size() - 14), "data: [DONE]\n\n");
  EXPECT_EQ(body.find("\"error\""), std::string::npos) << body;
}

// Issue 25: SIGTERM while the writer is behind the engine. A fail point slows every write of a
// stream down (100 ms), so the engine has produced the whole completion long before the client
// has it: the old shutdown stopped the HTTP threads as soon as the engine was done and cut the
// stream; now every event, the final chunk and [DONE] arrive.
TEST_F(ServeTest, SigtermWritesTheWholeStreamOfASlowWriter) {
  ::setenv("SYNAPSE_FAILPOINTS", "http.write_delay_ms=100", 1);
  auto server = start("--shutdown-grace 30");
  ::unsetenv("SYNAPSE_FAILPOINTS");
  ASSERT_GT(server->port(), 0);
  const std::string body = stream_through_sigterm(*server, 24);
  const std::vector<std::string> events = sse_payloads(body);
  ASSERT_GE(events.size(), 2u) << body;
  EXPECT_EQ(events.back(), "[DONE]") << body;
  const Json last = Json::parse(events[events.size() - 2]);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length") << body;
  EXPECT_EQ(body.find("\"error\""), std::string::npos) << body;
}

// The grace period over with the stream still generating: the service cancels it, and the client
// gets the documented error event and [DONE] rather than a cut connection. Steps are slowed
// (5 ms each: 3000 tokens take 15 s) so that a fast build cannot finish within the grace.
TEST_F(ServeTest, SigtermPastTheGraceEndsTheStreamWithAnErrorEvent) {
  ::setenv("SYNAPSE_FAILPOINTS", "serve.step_delay_ms=5", 1);
  auto server = start("--shutdown-grace 0.5");
  ::unsetenv("SYNAPSE_FAILPOINTS");
  ASSERT_GT(server->port(), 0);
  const std::string body = stream_through_sigterm(*server, 3000);
  const std::vector<std::string> events = sse_payloads(body);
  ASSERT_GE(events.size(), 2u) << body;
  EXPECT_EQ(events.back(), "[DONE]") << body;
  const Json error = Json::parse(events[events.size() - 2]);
  ASSERT_TRUE(error.contains("error")) << body;
  EXPECT_EQ(error["error"]["code"], "unavailable") << body;
}

// Issue 22: 200 connections that trickle their request (a byte every 5 s) against the default
// bounds. They hold sockets, not threads: /health and a completion keep answering within a
// second, and every slow connection is answered 408 and closed once the 10 s head timeout is
// spent. A client without the key is refused as soon as its head is in, before any body.
TEST_F(ServeTest, SlowClientsCannotTakeTheServerDown) {
  auto server = start();
  ASSERT_GT(server->port(), 0);
  const int port = server->port();
  std::vector<int> slow;
  for (int i = 0; i < 200; ++i) {
    const int fd = connect_loopback(port);
    ASSERT_GE(fd, 0);
    // Half never finish their head; half finish it and trickle the body.
    ASSERT_TRUE(send_all(
        fd,
        i % 2 == 0
            ? std::string("POST /v1/completions HTTP/1.1\r\n")
            : request_text("POST", "/v1/completions", std::string(500, ' '), kKey).substr(0, 200)));
    slow.push_back(fd);
  }
  const auto start_time = std::chrono::steady_clock::now();
  for (int round = 0; round < 2; ++round) {
    auto asked = std::chrono::steady_clock::now();
    EXPECT_EQ(http(port, "GET", "/health", "", "").status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - asked, 1s);
    asked = std::chrono::steady_clock::now();
    EXPECT_EQ(http(port, "POST", "/v1/completions", completion_body("a", 4, false)).status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - asked, 1s);
    for (int fd : slow) send_all(fd, " ");
    std::this_thread::sleep_for(5s);
  }
  // An unauthenticated head announcing a body: 401 at once, the body never read.
  {
    const int fd = connect_loopback(port);
    ASSERT_TRUE(send_all(fd, "POST /v1/completions HTTP/1.1\r\nContent-Length: 100000\r\n\r\n"));
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 1000), 1);
    char buf[64] = {0};
    ASSERT_GT(recv(fd, buf, sizeof buf - 1, 0), 12);
    EXPECT_EQ(std::string(buf).substr(0, 12), "HTTP/1.1 401");
    close(fd);
  }
  // Every slow connection answered 408 and closed by the head or body timeout (10 s + a little).
  size_t timed_out = 0;
  for (int fd : slow) {
    std::string got;
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 3000) != 1) break;
      char buf[512];
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    if (got.rfind("HTTP/1.1 408", 0) == 0) ++timed_out;
    close(fd);
  }
  EXPECT_EQ(timed_out, slow.size());
  EXPECT_LT(std::chrono::steady_clock::now() - start_time, 16s);
  EXPECT_EQ(server->stop(), 0);
}

}  // namespace
}  // namespace synapse
