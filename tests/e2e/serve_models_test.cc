// SPDX-License-Identifier: Apache-2.0
// One `synapse serve` for every model in a store (issue 18): a decoder, a BERT embedder and a
// BERT reranker answered by the request's "model", loaded on demand; with room for one model at
// a time (--max-loaded 1, and a --max-memory that holds one loaded model but no two) alternating
// requests load and unload correctly and every answer equals
// a dedicated server's; a model with a stream running is never unloaded (the next model waits for
// the stream's end); /v1/models names each model's kind and whether it is loaded.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/server_process.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using testing::run_command;
using testing::synapse_cli;

std::string quote(const std::string& s) { return "'" + s + "'"; }

class ServeModels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    store_ = dir_->file("store");
    const auto make = [](const std::string& args, const std::string& name) {
      const std::string file = dir_->file(name + ".gguf");
      auto r = run_command(synapse_cli() + " synth " + args + " -o " + quote(file));
      ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
      r = run_command(synapse_cli() + " models import " + quote(file) + " --name " + name +
                      " --store " + quote(store_));
      ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    };
    make("--arch qwen3 --n-embd 64 --n-ff 128 --n-layer 2 --n-head 4 --n-head-kv 2 --n-ctx 256",
         "chat");
    make("--arch bert --n-ctx 16", "embedder");
    make("--arch bert --n-ctx 16 --classifier-labels 1", "reranker");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  // A server over the store; `models` empty: every stored model.
  static std::unique_ptr<testing::ServerProcess> serve(const std::string& model,
                                                       const std::string& args) {
    auto s = std::make_unique<testing::ServerProcess>(
        model, "--threads 1 --no-jobs --store " + quote(store_) + " " + args,
        dir_->file("serve.log"));
    EXPECT_GT(s->port(), 0) << testing::read_file_text(dir_->file("serve.log"));
    return s;
  }

  static Json post(const testing::ServerProcess& s, const std::string& path, const Json& body) {
    const testing::HttpReply r = testing::http_request(s.port(), "POST", path, body.dump());
    EXPECT_EQ(r.status, 200) << path << " " << body.dump() << " -> " << r.body;
    return Json::parse(r.body, nullptr, false);
  }

  static Json chat_body() {
    return {{"model", "chat"},
            {"messages", {{{"role", "user"}, {"content", "tell me a story"}}}},
            {"max_tokens", 8},
            {"temperature", 0}};
  }
  static Json embed_body() { return {{"model", "embedder"}, {"input", {"a cat", "the dog"}}}; }
  static Json rerank_body() {
    return {{"model", "reranker"}, {"query", "cat"}, {"documents", {"a cat", "a car", "tea"}}};
  }

  // What a request's answer must equal across servers: the text, vectors or scores.
  static Json essence(const Json& reply) {
    if (reply.contains("choices")) return reply["choices"][0]["message"]["content"];
    if (reply.contains("results")) return reply["results"];
    Json vectors = Json::array();
    for (const Json& item : reply["data"]) vectors.push_back(item["embedding"]);
    return vectors;
  }

  static std::map<std::string, bool> loaded(const testing::ServerProcess& s) {
    const testing::HttpReply r = testing::http_request(s.port(), "GET", "/v1/models");
    const Json listed = Json::parse(r.body, nullptr, false);
    std::map<std::string, bool> out;
    if (!listed.contains("data")) return out;
    for (const Json& m : listed["data"]) out[m["id"]] = m["loaded"];
    return out;
  }

  static testing::TempDir* dir_;
  static std::string store_;
};

testing::TempDir* ServeModels::dir_ = nullptr;
std::string ServeModels::store_;

TEST_F(ServeModels, OneServerAnswersEveryKindByModelAndEqualsDedicatedServers) {
  Json expected_chat, expected_embed, expected_rerank;
  {
    auto s = serve("chat", "");
    expected_chat = essence(post(*s, "/v1/chat/completions", chat_body()));
  }
  {
    auto s = serve("embedder", "");
    expected_embed = essence(post(*s, "/v1/embeddings", embed_body()));
  }
  {
    auto s = serve("reranker", "");
    expected_rerank = essence(post(*s, "/v1/rerank", rerank_body()));
  }
  ASSERT_TRUE(expected_chat.is_string());
  ASSERT_EQ(expected_embed.size(), 2u);
  ASSERT_EQ(expected_rerank.size(), 3u);

  auto s = serve("", "--max-loaded 1");
  // The banner and /v1/models list every model with its kind; none is loaded yet.
  const Json listed = Json::parse(testing::http_request(s->port(), "GET", "/v1/models").body);
  std::map<std::string, std::string> kinds;
  for (const Json& m : listed["data"]) {
    kinds[m["id"]] = m["kind"];
    EXPECT_FALSE(m["loaded"].get<bool>()) << m.dump();
  }
  EXPECT_EQ(kinds, (std::map<std::string, std::string>{
                       {"chat", "generation"}, {"embedder", "embedding"}, {"reranker", "rerank"}}));
  // Alternating: each request loads its model in the place of the last one.
  const auto alternate = [&](const testing::ServerProcess& server) {
    EXPECT_EQ(essence(post(server, "/v1/chat/completions", chat_body())), expected_chat);
    EXPECT_EQ(loaded(server), (std::map<std::string, bool>{
                                  {"chat", true}, {"embedder", false}, {"reranker", false}}));
    EXPECT_EQ(essence(post(server, "/v1/embeddings", embed_body())), expected_embed);
    EXPECT_EQ(loaded(server), (std::map<std::string, bool>{
                                  {"chat", false}, {"embedder", true}, {"reranker", false}}));
    EXPECT_EQ(essence(post(server, "/v1/rerank", rerank_body())), expected_rerank);
    EXPECT_EQ(loaded(server), (std::map<std::string, bool>{
                                  {"chat", false}, {"embedder", false}, {"reranker", true}}));
  };
  alternate(*s);
  alternate(*s);
  // The same alternation with a memory budget that holds any one of the three loaded (its file
  // and its KV cache, as /v1/models reports it) but no two.
  std::map<std::string, uint64_t> sizes;
  const auto listing = [&] {
    return Json::parse(testing::http_request(s->port(), "GET", "/v1/models").body)["data"];
  };
  for (const Json& m : listing()) {
    if (m.value("loaded", false)) sizes[m["id"]] = m["bytes"].get<uint64_t>();
  }
  for (const auto& [body, name] : {std::pair{chat_body(), "chat"}, {embed_body(), "embedder"}}) {
    post(*s, body.contains("messages") ? "/v1/chat/completions" : "/v1/embeddings", body);
    for (const Json& m : listing()) {
      if (m["id"] == name) sizes[name] = m["bytes"].get<uint64_t>();
    }
  }
  ASSERT_EQ(sizes.size(), 3u);
  // Any one fits, no two do: between the largest alone and the two smallest together.
  std::vector<uint64_t> by_size;
  for (const auto& [name, bytes] : sizes) by_size.push_back(bytes);
  std::sort(by_size.begin(), by_size.end());
  ASSERT_LT(by_size[2], by_size[0] + by_size[1]) << "the models' sizes allow no such budget";
  EXPECT_EQ(s->stop(), 0);
  s = serve("", "--max-memory " + std::to_string((by_size[2] + by_size[0] + by_size[1]) / 2));
  alternate(*s);
  alternate(*s);

  // A model the store does not have, and a generation request to an embedder.
  const testing::HttpReply missing = testing::http_request(s->port(), "POST", "/v1/embeddings",
                                                           R"({"model": "nope", "input": "x"})");
  EXPECT_EQ(missing.status, 404) << missing.body;
  EXPECT_NE(missing.body.find("'chat'"), std::string::npos) << missing.body;
  Json wrong = chat_body();
  wrong["model"] = "embedder";
  const testing::HttpReply refused =
      testing::http_request(s->port(), "POST", "/v1/chat/completions", wrong.dump());
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("unsupported_parameter"), std::string::npos) << refused.body;
  EXPECT_EQ(s->stop(), 0);
}

TEST_F(ServeModels, AModelWithAStreamRunningIsNeverUnloaded) {
  // Slow steps, so that the stream outlives the embedding request sent while it runs.
  ::setenv("SYNAPSE_FAILPOINTS", "serve.step_delay_ms=25", 1);
  auto s = serve("", "--max-loaded 1");
  ::unsetenv("SYNAPSE_FAILPOINTS");
  Json stream_body = chat_body();
  stream_body["stream"] = true;
  stream_body["max_tokens"] = 40;
  // No end of generation before max_tokens: the template's end tokens are biased away.
  stream_body["logit_bias"] = Json::object();
  for (const char* end : {"<|im_end|>", "<|endoftext|>"}) {
    const Json ids = post(*s, "/tokenize", {{"model", "chat"}, {"content", end}})["tokens"];
    ASSERT_EQ(ids.size(), 1u) << end;
    stream_body["logit_bias"][std::to_string(ids[0].get<int>())] = -100;
  }
  std::future<std::pair<testing::HttpReply, Clock::time_point>> stream =
      std::async(std::launch::async, [&] {
        testing::HttpReply r =
            testing::http_request(s->port(), "POST", "/v1/chat/completions", stream_body.dump());
        return std::make_pair(std::move(r), Clock::now());
      });
  // Once the chat model is streaming (a request in flight on it: /tokenize above already
  // loaded it, so "loaded" alone can come before the stream has reached the server), ask for
  // the embedder.
  const auto streaming = [&] {
    const Json listed =
        Json::parse(testing::http_request(s->port(), "GET", "/v1/models").body, nullptr, false);
    if (!listed.contains("data")) return false;
    for (const Json& m : listed["data"]) {
      if (m["id"] == "chat") return m.value("requests", 0) > 0;
    }
    return false;
  };
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (!streaming() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(streaming());
  const Clock::time_point embed_sent = Clock::now();
  EXPECT_EQ(essence(post(*s, "/v1/embeddings", embed_body())).size(), 2u);
  const Clock::time_point embedded = Clock::now();
  auto [reply, stream_ended] = stream.get();
  EXPECT_EQ(reply.status, 200);
  // The stream ran to its end, unharmed, before the embedder took its place.
  EXPECT_NE(reply.body.find("\"finish_reason\":\"length\""), std::string::npos) << reply.body;
  EXPECT_NE(reply.body.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(reply.body.find("\"error\""), std::string::npos) << reply.body;
  // The two overlapped (else this test proves nothing), and the embedder answered only after
  // the stream had ended: the stream had about 1 s to run when the embedding was asked for, so
  // an embedder loaded beside it would answer far earlier than 400 ms before the stream's end
  // (the margin is for a loaded machine's scheduling of this client's threads).
  EXPECT_GT(stream_ended, embed_sent);
  EXPECT_LE(stream_ended, embedded + std::chrono::milliseconds(400));
  EXPECT_EQ(loaded(*s), (std::map<std::string, bool>{
                            {"chat", false}, {"embedder", true}, {"reranker", false}}));
  EXPECT_EQ(s->stop(), 0);
}

}  // namespace
}  // namespace synapse
