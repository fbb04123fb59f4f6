// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of `synapse serve` embeddings: /v1/embeddings on a BERT-family model and on a
// decoder (through the generation engine loop) driven by the official OpenAI SDK for Node (its
// default base64 encoding and explicit floats, compared with `synapse embed --json`), /v1/rerank
// and /rerank with curl (order, top_n, return_documents), every bad input with its stable code
// and field, and the wrong kind of model on either side.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
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
// Both sides compute the same vectors in the same order; only printing could differ.
constexpr double kSameVectorTolerance = 1e-6;

std::string quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void synth(const std::string& args, const std::string& path) {
  const auto r = run_command(synapse_cli() + " synth " + args + " -o " + quote(path));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
}

// A server with this file's API key and model alias "m".
class Server : public testing::ServerProcess {
 public:
  Server(const std::string& model, const std::string& log_path, const std::string& extra_args)
      : testing::ServerProcess(
            model, std::string("--threads 1 --alias m --api-key ") + kKey + " " + extra_args,
            log_path) {}
};

struct Reply {
  int status = 0;
  Json body;
  std::string headers;
};

// POST with curl; the status, the headers and the parsed body.
Reply post(const Server& s, const std::string& path, const std::string& body) {
  testing::TempDir dir;
  const std::string body_file = dir.file("body.json");
  {
    FILE* f = std::fopen(body_file.c_str(), "wb");
    std::fwrite(body.data(), 1, body.size(), f);
    std::fclose(f);
  }
  const auto r =
      run_command("curl -sS -D " + quote(dir.file("headers")) + " -o " + quote(dir.file("out")) +
                  " -w '%{http_code}' -H 'Authorization: " + "Bearer " + kKey +
                  "' -H 'Content-Type: application/json' " + "--data-binary @" + quote(body_file) +
                  " " + s.url() + path);
  Reply reply;
  reply.status = std::atoi(r.stdout_text.c_str());
  reply.headers = testing::read_file_text(dir.file("headers"));
  reply.body = Json::parse(testing::read_file_text(dir.file("out")), nullptr, false);
  return reply;
}

// Expects a 400 (or `status`) with this error code and param.
void expect_error(const Reply& r, const std::string& code, const std::string& param,
                  int status = 400) {
  EXPECT_EQ(r.status, status) << r.body.dump();
  ASSERT_TRUE(r.body.contains("error")) << r.body.dump();
  EXPECT_EQ(r.body["error"]["code"], code) << r.body.dump();
  if (param.empty()) {
    EXPECT_TRUE(r.body["error"]["param"].is_null()) << r.body.dump();
  } else {
    EXPECT_EQ(r.body["error"]["param"], param) << r.body.dump();
  }
}

std::vector<float> decode_base64_floats(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::string bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (const char c : text) {
    const int v = value(c);
    if (v < 0) continue;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  std::vector<float> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t u = 0;
    for (size_t b = 0; b < 4; ++b)
      u |= uint32_t{static_cast<unsigned char>(bytes[i * 4 + b])} << (8 * b);
    std::memcpy(&out[i], &u, 4);
  }
  return out;
}

void expect_same_vectors(const Json& got, const Json& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), expected[i].size()) << "vector " << i;
    for (size_t e = 0; e < got[i].size(); ++e) {
      EXPECT_NEAR(got[i][e].get<double>(), expected[i][e].get<double>(), kSameVectorTolerance)
          << "vector " << i << " component " << e;
    }
  }
}

class ServeEmbedTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    synth("--arch bert --n-ctx 16", dir_->file("bert.gguf"));
    synth("--arch bert --classifier-labels 1", dir_->file("reranker.gguf"));
    synth("--arch qwen3 --n-embd 64 --n-ff 128 --n-layer 2 --n-head 4 --n-head-kv 2 --n-ctx 32",
          dir_->file("decoder.gguf"));
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::unique_ptr<Server> start(const std::string& model, const std::string& args = "") {
    auto s = std::make_unique<Server>(dir_->file(model), dir_->file(model + ".log"), args);
    EXPECT_GT(s->port(), 0) << "no URL in the start-up line: '" << s->banner() << "'\n"
                            << testing::read_file_text(dir_->file(model + ".log"));
    return s;
  }

  // `synapse embed --json` vectors of the inputs.
  static Json cli_vectors(const std::string& model, const std::vector<std::string>& inputs,
                          const std::string& extra = "") {
    std::string args;
    for (const std::string& in : inputs) args += " -p " + quote(in);
    const auto r = run_command(synapse_cli() + " embed -m " + quote(dir_->file(model)) +
                               " --json -t 1" + extra + args);
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    Json out = Json::array();
    const Json parsed = Json::parse(r.stdout_text);
    for (const Json& d : parsed["data"]) out.push_back(d["embedding"]);
    return out;
  }

  static testing::TempDir* dir_;
};
testing::TempDir* ServeEmbedTest::dir_ = nullptr;

const std::vector<std::string> kInputs = {"the cat sat", "a hat", "on the mat by the door"};

// The SDK against `model` served alone; its vectors are `synapse embed --json`'s.
void check_with_openai_sdk(const std::string& model) {
  SYN_REQUIRE_OPENAI_NODE_SDK(npm_dir, SYNAPSE_NPM_DIR);
  auto server = ServeEmbedTest::start(model);
  ASSERT_GT(server->port(), 0);
  const auto r = run_command(testing::openai_node_sdk_command(
      npm_dir, SYNAPSE_SOURCE_DIR, "openai_sdk_embeddings.cjs", server->url(), kKey, "m",
      "SYNAPSE_INPUTS=" + quote(Json(kInputs).dump())));
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  const Json seen = Json::parse(r.stdout_text);
  EXPECT_EQ(seen["ok"], true);
  const Json expected = ServeEmbedTest::cli_vectors(model, kInputs);
  expect_same_vectors(seen["default"], expected);
  expect_same_vectors(seen["float"], expected);
  const std::vector<float> first = decode_base64_floats(seen["base64_first"]);
  expect_same_vectors(Json::array({first}), Json::array({expected[0]}));
  EXPECT_EQ(seen["error_code"], "invalid_value");
  EXPECT_EQ(server->stop(), 0);
}

TEST_F(ServeEmbedTest, OpenAiSdkForNode) { check_with_openai_sdk("bert.gguf"); }

TEST_F(ServeEmbedTest, OpenAiSdkForNodeOnADecoder) { check_with_openai_sdk("decoder.gguf"); }

TEST_F(ServeEmbedTest, EmbeddingsWithCurl) {
  auto server = start("bert.gguf");
  ASSERT_GT(server->port(), 0);
  // Float and base64 give the same vectors as the CLI; usage counts the tokens.
  const Reply floats = post(*server, "/v1/embeddings", Json{{"input", kInputs}}.dump());
  ASSERT_EQ(floats.status, 200) << floats.body.dump();
  EXPECT_EQ(floats.body["object"], "list");
  EXPECT_EQ(floats.body["model"], "m");
  Json got = Json::array();
  for (const Json& d : floats.body["data"]) got.push_back(d["embedding"]);
  expect_same_vectors(got, cli_vectors("bert.gguf", kInputs));
  EXPECT_GT(floats.body["usage"]["prompt_tokens"].get<int>(), 0);
  EXPECT_EQ(floats.body["usage"]["total_tokens"], floats.body["usage"]["prompt_tokens"]);
  const Reply b64 = post(*server, "/v1/embeddings",
                         Json{{"input", kInputs}, {"encoding_format", "base64"}}.dump());
  ASSERT_EQ(b64.status, 200) << b64.body.dump();
  for (size_t i = 0; i < kInputs.size(); ++i) {
    expect_same_vectors(Json::array({decode_base64_floats(b64.body["data"][i]["embedding"])}),
                        Json::array({got[i]}));
  }
  // A single string, and `dimensions` equal to the model's.
  const Reply one = post(*server, "/v1/embeddings",
                         Json{{"input", kInputs[0]}, {"dimensions", got[0].size()}}.dump());
  ASSERT_EQ(one.status, 200) << one.body.dump();
  expect_same_vectors(Json::array({one.body["data"][0]["embedding"]}), Json::array({got[0]}));
  // Pooling and normalization extensions match the CLI's flags.
  const Reply cls = post(*server, "/v1/embeddings",
                         Json{{"input", kInputs}, {"pooling", "cls"}, {"normalize", false}}.dump());
  ASSERT_EQ(cls.status, 200) << cls.body.dump();
  Json got_cls = Json::array();
  for (const Json& d : cls.body["data"]) got_cls.push_back(d["embedding"]);
  expect_same_vectors(got_cls, cli_vectors("bert.gguf", kInputs, " --pooling cls --no-normalize"));
  // Token ids: one list, or a list of lists.
  const Reply ids =
      post(*server, "/v1/embeddings", Json{{"input", {{2, 5, 7, 3}, {2, 9, 3}}}}.dump());
  ASSERT_EQ(ids.status, 200) << ids.body.dump();
  EXPECT_EQ(ids.body["data"].size(), 2u);
  EXPECT_EQ(ids.body["usage"]["prompt_tokens"], 7);
  const Reply flat = post(*server, "/v1/embeddings", Json{{"input", {2, 5, 7, 3}}}.dump());
  ASSERT_EQ(flat.status, 200) << flat.body.dump();
  EXPECT_EQ(flat.body["data"][0]["embedding"], ids.body["data"][0]["embedding"]);
  // Many clients at once (batched together by the executor) get their own answers.
  std::vector<std::thread> clients;
  std::vector<Reply> replies(6);
  for (size_t c = 0; c < replies.size(); ++c) {
    clients.emplace_back([&, c] {
      replies[c] = post(*server, "/v1/embeddings", Json{{"input", kInputs[c % 3]}}.dump());
    });
  }
  for (std::thread& t : clients) t.join();
  for (size_t c = 0; c < replies.size(); ++c) {
    ASSERT_EQ(replies[c].status, 200) << replies[c].body.dump();
    expect_same_vectors(Json::array({replies[c].body["data"][0]["embedding"]}),
                        Json::array({got[c % 3]}));
  }
  EXPECT_EQ(server->stop(), 0);
}

TEST_F(ServeEmbedTest, BadInput) {
  auto server = start("bert.gguf");
  ASSERT_GT(server->port(), 0);
  const auto embed = [&](const std::string& body) { return post(*server, "/v1/embeddings", body); };
  expect_error(embed(R"({"input": ""})"), "invalid_value", "input");
  expect_error(embed(R"({"input": []})"), "invalid_value", "input");
  expect_error(embed(R"({"input": ["a", ""]})"), "invalid_value", "input[1]");
  expect_error(embed(R"({"input": ["a", 3]})"), "invalid_type", "input[1]");
  expect_error(embed(R"({"input": [[1, 2], "a"]})"), "invalid_type", "input[1]");
  expect_error(embed(R"({"input": [[]]})"), "invalid_value", "input[0]");
  expect_error(embed(R"({"input": [1, 99999999]})"), "invalid_value", "input[0]");
  expect_error(embed(R"({"input": 5})"), "invalid_type", "input");
  expect_error(embed(R"({"model": "m"})"), "missing_parameter", "input");
  expect_error(embed(R"({"input": "a", "pooling": "max"})"), "invalid_value", "pooling");
  expect_error(embed(R"({"input": "a", "encoding_format": "hex"})"), "invalid_value",
               "encoding_format");
  expect_error(embed(R"({"input": "a", "dimensions": 7})"), "unsupported_parameter", "dimensions");
  expect_error(embed(R"({"input": "a", "normalize": "yes"})"), "invalid_type", "normalize");
  expect_error(embed(R"({"input": "a", "model": "other"})"), "model_not_found", "model", 404);
  expect_error(embed("[1, 2"), "invalid_json", "");
  // The context holds 16 tokens; truncate cuts instead of failing.
  const std::string long_text = "a b c d e f g h i j k l m n o p q r s t u v w x y z";
  expect_error(embed(Json{{"input", {"a", long_text}}}.dump()), "context_length_exceeded",
               "input[1]");
  const Reply cut = embed(Json{{"input", long_text}, {"truncate", true}}.dump());
  EXPECT_EQ(cut.status, 200) << cut.body.dump();
  EXPECT_EQ(cut.body["usage"]["prompt_tokens"], 16);
  // The wrong kind of model: generation routes here (a valid body: the model it names is the
  // one refused), rerank without a head.
  expect_error(post(*server, "/v1/completions", R"({"prompt": "hi"})"), "unsupported_parameter",
               "model");
  expect_error(
      post(*server, "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}]})"),
      "unsupported_parameter", "model");
  expect_error(post(*server, "/v1/rerank", R"({"query": "a", "documents": ["b"]})"),
               "unsupported_parameter", "model");
  EXPECT_EQ(server->stop(), 0);
}

TEST_F(ServeEmbedTest, FullQueueAnswers429) {
  // Steps slowed (5 ms each) so that the clients' requests overlap whatever the build's speed:
  // with one slot of queue, some must be refused.
  ::setenv("SYNAPSE_FAILPOINTS", "serve.step_delay_ms=5", 1);
  auto server = start("bert.gguf", "--queue-limit 1 --parallel 1");
  ::unsetenv("SYNAPSE_FAILPOINTS");
  ASSERT_GT(server->port(), 0);
  // Many clients at once against a queue of one: each gets its vectors or a 429 queue_full
  // (naming the class whose queue is full, as generation does) with Retry-After, never
  // anything else.
  std::vector<std::string> many(64, "the cat sat on the mat");
  const std::string body = Json{{"input", many}}.dump();
  std::vector<Reply> replies(12);
  std::vector<std::thread> clients;
  for (size_t c = 0; c < replies.size(); ++c) {
    clients.emplace_back([&, c] { replies[c] = post(*server, "/v1/embeddings", body); });
  }
  for (std::thread& t : clients) t.join();
  size_t ok = 0, refused = 0;
  for (const Reply& r : replies) {
    if (r.status == 200) {
      ++ok;
      EXPECT_EQ(r.body["data"].size(), many.size());
      continue;
    }
    ++refused;
    expect_error(r, "queue_full", "request_class", 429);
    EXPECT_NE(r.headers.find("Retry-After: "), std::string::npos) << r.headers;
  }
  EXPECT_GE(ok, 1u);
  EXPECT_GE(refused, 1u);  // admission refuses: a server that queued without bound would fail
  EXPECT_EQ(ok + refused, replies.size());
  // Alone, a request of more inputs than the queue holds is answered whole: its inputs wait for
  // each other rather than overflow the queue.
  const Reply alone = post(*server, "/v1/embeddings", body);
  EXPECT_EQ(alone.status, 200) << alone.body.dump();
  EXPECT_EQ(alone.body["data"].size(), many.size());
  EXPECT_EQ(server->stop(), 0);
}

TEST_F(ServeEmbedTest, RerankWithCurl) {
  auto server = start("reranker.gguf");
  ASSERT_GT(server->port(), 0);
  const std::vector<std::string> docs = {"a cat sat", "the dog", "hat and bat", "on the mat"};
  const Reply all =
      post(*server, "/v1/rerank", Json{{"query", "the cat"}, {"documents", docs}}.dump());
  ASSERT_EQ(all.status, 200) << all.body.dump();
  EXPECT_EQ(all.body["model"], "m");
  const Json& results = all.body["results"];
  ASSERT_EQ(results.size(), docs.size());
  std::vector<bool> seen(docs.size(), false);
  for (size_t i = 0; i < results.size(); ++i) {
    if (i > 0) {
      EXPECT_GE(results[i - 1]["relevance_score"].get<double>(),
                results[i]["relevance_score"].get<double>());
    }
    const size_t index = results[i]["index"];
    ASSERT_LT(index, docs.size());
    seen[index] = true;
    EXPECT_EQ(results[i]["document"]["text"], docs[index]);
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 4);
  EXPECT_GT(all.body["usage"]["prompt_tokens"].get<int>(), 0);
  // The scores equal `synapse rerank --json`.
  std::string args;
  for (const std::string& d : docs) args += " -d " + quote(d);
  const auto cli = run_command(synapse_cli() + " rerank -m " + quote(dir_->file("reranker.gguf")) +
                               " -q 'the cat' --json -t 1" + args);
  ASSERT_EQ(cli.exit_code, 0) << cli.stderr_text;
  const Json cli_results = Json::parse(cli.stdout_text)["results"];
  ASSERT_EQ(cli_results.size(), results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(cli_results[i]["index"], results[i]["index"]);
    EXPECT_NEAR(cli_results[i]["relevance_score"].get<double>(),
                results[i]["relevance_score"].get<double>(), kSameVectorTolerance);
  }
  // top_n keeps the best; return_documents false leaves the texts out; /rerank is the same.
  const Reply top = post(
      *server, "/rerank",
      Json{{"query", "the cat"}, {"documents", docs}, {"top_n", 2}, {"return_documents", false}}
          .dump());
  ASSERT_EQ(top.status, 200) << top.body.dump();
  ASSERT_EQ(top.body["results"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(top.body["results"][i]["index"], results[i]["index"]);
    EXPECT_FALSE(top.body["results"][i].contains("document"));
  }
  const auto rerank = [&](const std::string& body) { return post(*server, "/v1/rerank", body); };
  expect_error(rerank(R"({"documents": ["a"]})"), "missing_parameter", "query");
  expect_error(rerank(R"({"query": "", "documents": ["a"]})"), "invalid_value", "query");
  expect_error(rerank(R"({"query": "q", "documents": []})"), "invalid_value", "documents");
  expect_error(rerank(R"({"query": "q", "documents": ["a", 1]})"), "invalid_type", "documents[1]");
  expect_error(rerank(R"({"query": "q", "documents": ["a", ""]})"), "invalid_value",
               "documents[1]");
  expect_error(rerank(R"({"query": "q", "documents": ["a"], "top_n": 0})"), "invalid_value",
               "top_n");
  EXPECT_EQ(server->stop(), 0);
}

// A decoder answers /v1/embeddings through its generation engine loop (last-token pooling by
// default), the same bits as `synapse embed` (both open the model with the serving options),
// whatever the class; it refuses what a causal model cannot do.
TEST_F(ServeEmbedTest, DecoderModelServesEmbeddings) {
  auto server = start("decoder.gguf", "--parallel 2");
  ASSERT_GT(server->port(), 0);
  const auto embed = [&](const std::string& body) { return post(*server, "/v1/embeddings", body); };
  const Json expected = cli_vectors("decoder.gguf", kInputs);
  const Reply r = embed(Json{{"input", kInputs}, {"model", "m"}}.dump());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["object"], "list");
  EXPECT_EQ(r.body["model"], "m");
  ASSERT_EQ(r.body["data"].size(), kInputs.size());
  for (size_t i = 0; i < kInputs.size(); ++i) {
    EXPECT_EQ(r.body["data"][i]["index"], i);
    EXPECT_EQ(r.body["data"][i]["embedding"], expected[i]) << "input " << i;
  }
  EXPECT_GT(r.body["usage"]["prompt_tokens"].get<int>(), 0);
  // The batch class (the body's priority) gives the same vectors.
  const Reply batch = embed(Json{{"input", kInputs}, {"priority", "batch"}}.dump());
  ASSERT_EQ(batch.status, 200) << batch.body.dump();
  for (size_t i = 0; i < kInputs.size(); ++i) {
    EXPECT_EQ(batch.body["data"][i]["embedding"], expected[i]) << "input " << i;
  }
  const Json mean = cli_vectors("decoder.gguf", {kInputs[0]}, " --pooling mean");
  const Reply mean_reply = embed(Json{{"input", kInputs[0]}, {"pooling", "mean"}}.dump());
  ASSERT_EQ(mean_reply.status, 200) << mean_reply.body.dump();
  EXPECT_EQ(mean_reply.body["data"][0]["embedding"], mean[0]);
  // Token ids and base64.
  const Reply ids = embed(R"({"input": [[1, 2, 3], [4, 5]], "encoding_format": "base64"})");
  ASSERT_EQ(ids.status, 200) << ids.body.dump();
  EXPECT_EQ(ids.body["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(decode_base64_floats(ids.body["data"][1]["embedding"]).size(), 64u);

  expect_error(embed(R"({"input": "a", "pooling": "cls"})"), "unsupported_parameter", "pooling");
  // Per-token vectors: the rows of `synapse embed --pooling none`, through the same service.
  const Json rows = cli_vectors("decoder.gguf", {kInputs[0]}, " --pooling none");
  const Reply none = embed(Json{{"input", kInputs[0]}, {"pooling", "none"}}.dump());
  ASSERT_EQ(none.status, 200) << none.body.dump();
  EXPECT_EQ(none.body["data"][0]["embedding"], rows[0]);
  expect_error(embed(R"({"input": "a", "priority": "urgent"})"), "invalid_value", "priority");
  expect_error(embed(R"({"input": ["a", ""]})"), "invalid_value", "input[1]");
  expect_error(embed(R"({"input": [1, 99999999]})"), "invalid_value", "input[0]");
  expect_error(embed(R"({"input": "a", "dimensions": 7})"), "unsupported_parameter", "dimensions");
  // The context holds 32 tokens; truncate cuts instead of failing.
  const Json long_ids = std::vector<int>(40, 7);
  expect_error(embed(Json{{"input", {{1, 2}, long_ids}}}.dump()), "context_length_exceeded",
               "input[1]");
  const Reply cut = embed(Json{{"input", long_ids}, {"truncate", true}}.dump());
  EXPECT_EQ(cut.status, 200) << cut.body.dump();
  EXPECT_EQ(cut.body["usage"]["prompt_tokens"], 32);
  // Generation still works beside it; a decoder does not rerank.
  const Reply completion =
      post(*server, "/v1/completions", R"({"prompt": "the", "max_tokens": 3})");
  EXPECT_EQ(completion.status, 200) << completion.body.dump();
  expect_error(post(*server, "/v1/rerank", R"({"query": "a", "documents": ["b"]})"),
               "unsupported_parameter", "model");
  EXPECT_EQ(server->stop(), 0);
}

}  // namespace
}  // namespace synapse
