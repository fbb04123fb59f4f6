// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of Ollama's API on `synapse serve`: the official Ollama client for
// JavaScript (tests/e2e/ollama_client.cjs says what it checks) and raw HTTP where a test must
// see the exact bytes (NDJSON framing, content types, status codes, error bodies).
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hub/fake_hub.h"
#include "tests/e2e/server_process.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using testing::run_command;

constexpr const char* kKey = "e2e-key";

class OllamaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    model_ = new std::string(dir_->file("tiny.gguf"));
    ASSERT_EQ(testing::synth_serving_model(*model_, 2048), "");
  }
  static void TearDownTestSuite() {
    delete model_;
    delete dir_;
  }
  void SetUp() override {
    server_ = std::make_unique<testing::ServerProcess>(
        *model_, std::string("--api-key ") + kKey + " --threads 1 --chat-template chatml",
        dir_->file("server.log"));
    ASSERT_GT(server_->port(), 0) << testing::read_file_text(dir_->file("server.log"));
  }
  testing::HttpReply post(const std::string& path, const std::string& body) {
    return testing::http_request(server_->port(), "POST", path, body, kKey);
  }

  static testing::TempDir* dir_;
  static std::string* model_;
  std::unique_ptr<testing::ServerProcess> server_;
};
testing::TempDir* OllamaTest::dir_ = nullptr;
std::string* OllamaTest::model_ = nullptr;

TEST_F(OllamaTest, OllamaClientAndOpenAiSdkForNodeOnOneServer) {
  SYN_REQUIRE_OPENAI_NODE_SDK(npm_dir, SYNAPSE_NPM_DIR);
  if (run_command("test -f " + npm_dir + "/node_modules/ollama/package.json").exit_code != 0) {
    if (testing::running_in_ci()) FAIL() << "npm package ollama missing (required under CI=true)";
    GTEST_SKIP() << "npm package ollama missing (./scripts/install-deps.sh installs it)";
  }
  const auto r = run_command(testing::openai_node_sdk_command(
      npm_dir, SYNAPSE_SOURCE_DIR, "ollama_client.cjs", server_->url(), kKey, "tiny"));
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("\"ok\":true"), std::string::npos) << r.stdout_text;
  // The official OpenAI SDK, unchanged, against the same server right after.
  const auto openai = run_command(testing::openai_node_sdk_command(
      npm_dir, SYNAPSE_SOURCE_DIR, "openai_sdk_client.cjs", server_->url(), kKey, "tiny"));
  EXPECT_EQ(openai.exit_code, 0) << openai.stdout_text << openai.stderr_text;
  EXPECT_NE(openai.stdout_text.find("\"ok\":true"), std::string::npos) << openai.stdout_text;
}

TEST_F(OllamaTest, StreamIsNdjsonEndingWithTheCounts) {
  const auto r = post("/api/generate",
                      R"({"model": "tiny", "prompt": "Once", "options": {"num_predict": 4}})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.at("content-type"), "application/x-ndjson");
  std::istringstream lines(r.body);
  std::string line;
  std::vector<Json> objects;
  while (std::getline(lines, line)) objects.push_back(Json::parse(line));
  ASSERT_GE(objects.size(), 2u);
  for (size_t i = 0; i + 1 < objects.size(); ++i) EXPECT_FALSE(objects[i]["done"]);
  const Json& last = objects.back();
  EXPECT_TRUE(last["done"]);
  EXPECT_TRUE(last["done_reason"] == "length" || last["done_reason"] == "stop") << last;
  EXPECT_GT(last["eval_count"].get<int>(), 0);
  EXPECT_LE(last["eval_count"].get<int>(), 4);
  for (const char* key : {"total_duration", "load_duration", "prompt_eval_count",
                          "prompt_eval_duration", "eval_duration", "created_at"}) {
    EXPECT_TRUE(last.contains(key)) << key;
  }
}

TEST_F(OllamaTest, ErrorsInOllamasShape) {
  auto r =
      post("/api/chat", R"({"model": "nope", "messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(Json::parse(r.body)["error"].get<std::string>().rfind("model 'nope' not found", 0), 0u)
      << r.body;
  r = post("/api/generate", R"({"model": "tiny", "template": "{{ .Prompt }}"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(Json::parse(r.body)["error"].get<std::string>().find("template"), std::string::npos);
  r = post("/api/generate", "{");
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(Json::parse(r.body).contains("error"));
}

TEST_F(OllamaTest, RootVersionAndLoadUnload) {
  auto r = testing::http_request(server_->port(), "GET", "/", "", kKey);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "Ollama is running");
  r = testing::http_request(server_->port(), "GET", "/api/version", "", kKey);
  EXPECT_TRUE(Json::parse(r.body)["version"].is_string());
  r = post("/api/generate", R"({"model": "tiny", "stream": false})");
  EXPECT_EQ(Json::parse(r.body)["done_reason"], "load") << r.body;
  r = post("/api/generate", R"({"model": "tiny", "keep_alive": 0, "stream": false})");
  EXPECT_EQ(Json::parse(r.body)["done_reason"], "unload") << r.body;
}

// /api/show and /api/tags read the served file's metadata: the synthesized model's architecture,
// its quantization (general.file_type of a Q8_0 synth) and its scalar keys.
TEST_F(OllamaTest, ShowAndTagsDescribeTheFile) {
  auto r = post("/api/show", R"({"model": "tiny"})");
  ASSERT_EQ(r.status, 200) << r.body;
  const Json show = Json::parse(r.body);
  const Json& details = show["details"];
  EXPECT_EQ(details["format"], "gguf");
  EXPECT_EQ(details["family"], "qwen2") << details;  // synth_serving_model's architecture
  EXPECT_EQ(details["families"], Json::array({"qwen2"}));
  EXPECT_EQ(details["quantization_level"], "Q8_0");
  EXPECT_FALSE(details["parameter_size"].get<std::string>().empty());
  const Json& info = show["model_info"];
  EXPECT_EQ(info["general.architecture"], "qwen2");
  EXPECT_GT(info["general.parameter_count"].get<int64_t>(), 0);
  EXPECT_GT(info["qwen2.embedding_length"].get<int64_t>(), 0);
  EXPECT_GT(info["qwen2.block_count"].get<int64_t>(), 0);
  EXPECT_EQ(info["synapse.context_length"], 2048);  // what it is served with
  EXPECT_TRUE(info["tokenizer.ggml.tokens"].is_null());
  EXPECT_EQ(show["capabilities"][0], "completion");
  EXPECT_EQ(show["parameters"].get<std::string>().rfind("stop ", 0), 0u) << show["parameters"];
  EXPECT_NE(show["template"].get<std::string>().find("<|im_start|>"), std::string::npos);

  r = testing::http_request(server_->port(), "GET", "/api/tags", "", kKey);
  ASSERT_EQ(r.status, 200) << r.body;
  const Json tags = Json::parse(r.body);
  ASSERT_FALSE(tags["models"].empty());
  for (const Json& m : tags["models"]) {
    EXPECT_TRUE(m["digest"].is_string()) << m;
    EXPECT_EQ(m["details"], details) << m;  // the same object as show's, without a load
  }
}

// The sum of synapse_requests_total over the samples of `request_class` in /metrics.
double requests_of_class(int port, const std::string& request_class) {
  const auto r = testing::http_request(port, "GET", "/metrics", "", kKey);
  EXPECT_EQ(r.status, 200) << r.body;
  std::istringstream lines(r.body);
  std::string line;
  double total = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("synapse_requests_total{", 0) != 0) continue;
    if (line.find("class=\"" + request_class + "\"") == std::string::npos) continue;
    total += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return total;
}

// X-Synapse-Class schedules Ollama's requests in the class it names, as on the OpenAI routes:
// the service counts them under that class.
TEST_F(OllamaTest, ClassHeaderPicksTheSchedulingClass) {
  const int port = server_->port();
  const std::string batch = "X-Synapse-Class: batch\r\n";
  const auto send = [&](const std::string& path, const std::string& body) {
    return testing::http_request(port, "POST", path, body, kKey, batch);
  };
  ASSERT_EQ(requests_of_class(port, "batch"), 0);
  auto r = send("/api/generate",
                R"({"model": "tiny", "prompt": "Once", "stream": false,
                    "options": {"num_predict": 2}})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(requests_of_class(port, "batch"), 1);
  r = send("/api/chat", R"({"model": "tiny", "stream": false, "options": {"num_predict": 2},
                            "messages": [{"role": "user", "content": "Hi"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(requests_of_class(port, "batch"), 2);
  r = send("/api/embed", R"({"model": "tiny", "input": ["a", "b"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(requests_of_class(port, "batch"), 4);  // one prefill-only request per input
  r = send("/api/embeddings", R"({"model": "tiny", "prompt": "a"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(requests_of_class(port, "batch"), 5);
  const double interactive = requests_of_class(port, "interactive");
  r = post("/api/generate", R"({"model": "tiny", "prompt": "Once", "stream": false,
                                "options": {"num_predict": 2}})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(requests_of_class(port, "interactive"), interactive + 1);  // no header: interactive
  EXPECT_EQ(requests_of_class(port, "batch"), 5);

  // A class that does not exist: refused before anything runs, in Ollama's error shape.
  r = testing::http_request(port, "POST", "/api/chat",
                            R"({"model": "tiny", "messages": [{"role": "user", "content": "x"}]})",
                            kKey, "X-Synapse-Class: urgent\r\n");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(Json::parse(r.body)["error"].get<std::string>().find("X-Synapse-Class"),
            std::string::npos)
      << r.body;
  r = testing::http_request(port, "POST", "/api/embed", R"({"model": "tiny", "input": "x"})", kKey,
                            "X-Synapse-Class: urgent\r\n");
  EXPECT_EQ(r.status, 400) << r.body;
}

// /api/pull from a fake hub (in this process), then the pulled model served at once; copy and
// delete over the store. The server's store and hub come from the environment it inherits.
TEST(OllamaPull, OllamaClientPullsCopiesAndDeletes) {
  SYN_REQUIRE_OPENAI_NODE_SDK(npm_dir, SYNAPSE_NPM_DIR);
  testing::TempDir dir;
  const std::string synth = testing::synapse_cli() + " synth --arch qwen3 --n-layer 2 --seed 1 -o ";
  ASSERT_EQ(run_command(synth + dir.file("a.gguf")).exit_code, 0);
  ASSERT_EQ(testing::synth_serving_model(dir.file("served.gguf"), 1024), "");
  hub::FakeHubOptions options;
  options.repo = "org/tiny-GGUF";
  options.files = {{"tiny-Q8_0.gguf", testing::read_file_text(dir.file("a.gguf"))}};
  auto hub = hub::FakeHub::start(std::move(options));
  ASSERT_TRUE(hub.ok()) << hub.status().to_string();
  for (const char* name : {"HF_TOKEN", "HF_HUB_OFFLINE", "HF_TOKEN_PATH"}) unsetenv(name);
  setenv("HF_ENDPOINT", (*hub)->endpoint().c_str(), 1);
  setenv("SYNAPSE_STORE", dir.file("store").c_str(), 1);
  setenv("HF_HOME", dir.file("hf").c_str(), 1);
  setenv("HF_HUB_CACHE", dir.file("hf/hub").c_str(), 1);
  testing::ServerProcess server(dir.file("served.gguf"),
                                std::string("--api-key ") + kKey + " --threads 1",
                                dir.file("server.log"));
  ASSERT_GT(server.port(), 0) << testing::read_file_text(dir.file("server.log"));
  const auto r = run_command(
      testing::openai_node_sdk_command(npm_dir, SYNAPSE_SOURCE_DIR, "ollama_client_pull.cjs",
                                       server.url(), kKey, "hf.co/org/tiny-GGUF"));
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text
                            << testing::read_file_text(dir.file("server.log"));
  EXPECT_NE(r.stdout_text.find("\"ok\":true"), std::string::npos) << r.stdout_text;
}

}  // namespace
}  // namespace synapse
