// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of `synapse pull` against a local fake of the Hugging Face hub (hub/fake_hub.h,
// in this process) serving a model `synapse synth` made, and of `synapse models list --discover`
// and `models import --from-ollama` on fake caches in a temporary directory. No network.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hub/fake_hub.h"
#include "tests/e2e/server_process.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using hub::FakeHub;
using testing::run_command;
using testing::synapse_cli;

std::string q(const std::string& s) { return "'" + s + "'"; }

std::string read_text(const std::string& path) { return testing::read_file_text(path); }

class PullE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string synth = synapse_cli() + " synth --arch qwen3 --n-layer 2 --seed ";
    ASSERT_EQ(run_command(synth + "1 -o " + q(dir_.file("a.gguf"))).exit_code, 0);
    ASSERT_EQ(run_command(synth + "2 --type f16 -o " + q(dir_.file("b.gguf"))).exit_code, 0);
    q8_ = read_text(dir_.file("a.gguf"));
    f16_ = read_text(dir_.file("b.gguf"));
    start_hub("");
  }

  void start_hub(const std::string& token) {
    hub_.reset();
    hub::FakeHubOptions options;
    options.repo = "org/tiny-GGUF";
    options.required_token = token;
    options.files = {
        {"README.md", "# tiny", false}, {"tiny-Q8_0.gguf", q8_}, {"tiny-F16.gguf", f16_}};
    auto started = FakeHub::start(std::move(options));
    ASSERT_TRUE(started.ok()) << started.status().to_string();
    hub_ = std::move(*started);
  }

  // The environment of every command: this hub, this store, caches in the temporary directory,
  // no token from the user's home.
  std::string env(const std::string& extra = "") const {
    return "env -u HF_TOKEN -u HF_HUB_OFFLINE -u HF_TOKEN_PATH HF_ENDPOINT=" + hub_->endpoint() +
           " SYNAPSE_STORE=" + q(dir_.file("store")) + " HF_HOME=" + q(dir_.file("hf")) +
           " HF_HUB_CACHE=" + q(dir_.file("hf/hub")) + " LLAMA_CACHE=" + q(dir_.file("llama")) +
           " OLLAMA_MODELS=" + q(dir_.file("ollama")) + " " + extra + " " + synapse_cli();
  }

  std::string partial_of(const std::string& bytes) const {
    return dir_.file("store/downloads/" + FakeHub::sha256_hex(bytes) + ".partial");
  }

  size_t stored_models() const {
    const auto r = run_command(env() + " models list --json");
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    return Json::parse(r.stdout_text)["models"].size();
  }

  testing::TempDir dir_;
  std::string q8_, f16_;
  std::unique_ptr<FakeHub> hub_;
};

TEST_F(PullE2e, PullsTheDefaultQuantizationAndRunsIt) {
  const auto r = run_command(env() + " pull hf.co/org/tiny-GGUF");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("pulled hf.co/org/tiny-GGUF:Q8_0"), std::string::npos)
      << r.stdout_text;
  EXPECT_EQ(r.stderr_text, "") << "quiet when not on a terminal";
  const auto list = run_command(env() + " models list --json");
  ASSERT_EQ(list.exit_code, 0);
  const Json models = Json::parse(list.stdout_text)["models"];
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0]["aliases"][0], "hf.co/org/tiny-GGUF:Q8_0");
  EXPECT_EQ(models[0]["source_sha256"], FakeHub::sha256_hex(q8_));
  const auto gen = run_command(env() + " generate -m hf.co/org/tiny-GGUF:Q8_0 -p hello -n 4 " +
                               "--temp 0 --json");
  ASSERT_EQ(gen.exit_code, 0) << gen.stderr_text;
  EXPECT_EQ(Json::parse(gen.stdout_text)["n_generated_tokens"], 4);
  // Again: nothing downloaded.
  const auto again = run_command(env() + " pull hf.co/org/tiny-GGUF");
  ASSERT_EQ(again.exit_code, 0) << again.stderr_text;
  EXPECT_NE(again.stdout_text.find("already in the store"), std::string::npos);
  EXPECT_EQ(hub_->cdn_ranges().size(), 1u);
}

TEST_F(PullE2e, TagAndFileChooseAndJsonReports) {
  const auto tagged = run_command(env() + " pull hf://org/tiny-GGUF:f16 --json");
  ASSERT_EQ(tagged.exit_code, 0) << tagged.stderr_text;
  const Json t = Json::parse(tagged.stdout_text);
  EXPECT_EQ(t["name"], "hf.co/org/tiny-GGUF:F16");
  EXPECT_EQ(t["sha256"], FakeHub::sha256_hex(f16_));
  EXPECT_EQ(t["files"], Json::array({"tiny-F16.gguf"}));
  EXPECT_EQ(t["source"], "download");
  const auto file =
      run_command(env() + " pull org/tiny-GGUF --file tiny-Q8_0.gguf --name tiny --json");
  ASSERT_EQ(file.exit_code, 0) << file.stderr_text;
  EXPECT_EQ(Json::parse(file.stdout_text)["name"], "tiny");
  const auto missing = run_command(env() + " pull org/tiny-GGUF:Q2_K");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.stderr_text.find("hub_not_found"), std::string::npos) << missing.stderr_text;
  EXPECT_NE(missing.stderr_text.find("Q8_0"), std::string::npos) << "lists what there is";
}

TEST_F(PullE2e, AKilledPullResumesFromItsPartialFile) {
  const auto killed = run_command(env() + " pull org/tiny-GGUF --crash-after-bytes 65536");
  ASSERT_NE(killed.exit_code, 0);
  EXPECT_NE(killed.stderr_text.find("crashing on purpose"), std::string::npos)
      << killed.stderr_text;
  const std::string partial = partial_of(q8_);
  ASSERT_TRUE(fs::exists(partial));
  const uint64_t have = fs::file_size(partial);
  ASSERT_GE(have, 65536u);
  ASSERT_LT(have, q8_.size());
  EXPECT_EQ(stored_models(), 0u);

  const auto resumed = run_command(env() + " pull org/tiny-GGUF --json");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.stderr_text;
  EXPECT_EQ(Json::parse(resumed.stdout_text)["sha256"], FakeHub::sha256_hex(q8_));
  const std::vector<std::string> ranges = hub_->cdn_ranges();
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[1], "bytes=" + std::to_string(have) + "-");
  EXPECT_FALSE(fs::exists(partial));
}

TEST_F(PullE2e, AConnectionCutShortKeepsThePartialForTheNextRun) {
  hub_->cut_next_body_after(100000);
  const auto cut = run_command(env() + " pull org/tiny-GGUF");
  EXPECT_EQ(cut.exit_code, 1);
  EXPECT_NE(cut.stderr_text.find("hub_unavailable"), std::string::npos) << cut.stderr_text;
  EXPECT_EQ(fs::file_size(partial_of(q8_)), 100000u);
  ASSERT_EQ(run_command(env() + " pull org/tiny-GGUF").exit_code, 0);
  EXPECT_EQ(hub_->cdn_ranges().back(), "bytes=100000-");
}

TEST_F(PullE2e, ACorruptDownloadIsRefusedAndNothingStored) {
  hub_->corrupt_bodies(true);
  const auto r = run_command(env() + " pull org/tiny-GGUF");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.stderr_text.find("checksum_mismatch"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(stored_models(), 0u);
  EXPECT_FALSE(fs::exists(partial_of(q8_)));
}

TEST_F(PullE2e, UnauthorizedWithoutATokenPulledWithOne) {
  start_hub("hf_secret");
  const auto anonymous = run_command(env() + " pull org/tiny-GGUF");
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_NE(anonymous.stderr_text.find("hub_unauthorized"), std::string::npos);
  EXPECT_NE(anonymous.stderr_text.find("set HF_TOKEN"), std::string::npos) << anonymous.stderr_text;
  const auto with_token = run_command(env("HF_TOKEN=hf_secret") + " pull org/tiny-GGUF");
  EXPECT_EQ(with_token.exit_code, 0) << with_token.stderr_text;
  // The token file huggingface_hub's login writes works too.
  fs::create_directories(dir_.file("hf"));
  testing::write_file_bytes(dir_.file("hf/token"), {'h', 'f', '_', 's', 'e', 'c', 'r', 'e', 't'});
  const auto from_file = run_command(env() + " pull org/tiny-GGUF:F16");
  EXPECT_EQ(from_file.exit_code, 0) << from_file.stderr_text;
}

// The Hugging Face cache as huggingface_hub lays it out, holding tiny-Q8_0.gguf.
void make_hf_cache(const std::string& cache, const std::string& bytes) {
  const std::string repo = cache + "/models--org--tiny-GGUF";
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  const std::string sha = FakeHub::sha256_hex(bytes);
  fs::create_directories(repo + "/blobs");
  fs::create_directories(repo + "/refs");
  fs::create_directories(repo + "/snapshots/" + commit);
  testing::write_file_bytes(repo + "/blobs/" + sha,
                            std::vector<uint8_t>(bytes.begin(), bytes.end()));
  testing::write_file_bytes(repo + "/refs/main",
                            std::vector<uint8_t>(commit.begin(), commit.end()));
  fs::create_symlink("../../blobs/" + sha, repo + "/snapshots/" + commit + "/tiny-Q8_0.gguf");
}

TEST_F(PullE2e, ModelsGcRemovesWeekOldPartialDownloads) {
  fs::create_directories(dir_.file("store/downloads"));
  const std::string stale = dir_.file("store/downloads/" + std::string(64, 'a') + ".partial");
  const std::string recent = dir_.file("store/downloads/" + std::string(64, 'b') + ".partial");
  testing::write_file_bytes(stale, {'x'});
  testing::write_file_bytes(recent, {'y'});
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::days(8));
  auto r = run_command(env() + " models gc --json --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(Json::parse(r.stdout_text)["stale_partials_removed"], Json::array({stale}));
  EXPECT_TRUE(fs::exists(stale));
  r = run_command(env() + " models gc --json");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(Json::parse(r.stdout_text)["stale_partials_removed"], Json::array({stale}));
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(recent)) << "a partial written this week is resumable";
}

// The server events of an SSE body, [DONE] last.
std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> data;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("data: ")) data.push_back(line.substr(6));
  }
  return data;
}

// POST /v1/models/pull on `synapse serve` from the fake hub: progress as server-sent events, the
// model listed and served at once; not streamed, one object; errors in OpenAI's shape.
TEST_F(PullE2e, ServerPullsOverTheOpenAiStyleRoute) {
  ASSERT_EQ(testing::synth_serving_model(dir_.file("served.gguf"), 1024), "");
  for (const char* name : {"HF_TOKEN", "HF_HUB_OFFLINE", "HF_TOKEN_PATH"}) unsetenv(name);
  setenv("HF_ENDPOINT", hub_->endpoint().c_str(), 1);
  setenv("SYNAPSE_STORE", dir_.file("store").c_str(), 1);
  setenv("HF_HOME", dir_.file("hf").c_str(), 1);
  setenv("HF_HUB_CACHE", dir_.file("hf/hub").c_str(), 1);
  const std::string key = "e2e-key";
  testing::ServerProcess server(dir_.file("served.gguf"), "--api-key " + key + " --threads 1",
                                dir_.file("server.log"));
  ASSERT_GT(server.port(), 0) << read_text(dir_.file("server.log"));
  const auto post = [&](const std::string& path, const std::string& body) {
    return testing::http_request(server.port(), "POST", path, body, key);
  };

  auto r = post("/v1/models/pull", R"({"model": "hf.co/org/tiny-GGUF"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"].substr(0, 17), "text/event-stream");
  const std::vector<std::string> events = sse_data(r.body);
  ASSERT_GE(events.size(), 3u) << r.body;
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(Json::parse(events.front()),
            Json::parse(R"({"object":"model.pull.progress","status":"manifest"})"));
  bool downloaded = false;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    const Json e = Json::parse(events[i]);
    EXPECT_EQ(e["object"], "model.pull.progress") << events[i];
    if (e["status"] == "downloading" && e["completed"] == q8_.size()) {
      EXPECT_EQ(e["file"], "tiny-Q8_0.gguf");
      EXPECT_EQ(e["digest"], "sha256:" + FakeHub::sha256_hex(q8_));
      EXPECT_EQ(e["total"], q8_.size());
      downloaded = true;
    }
  }
  EXPECT_TRUE(downloaded) << r.body;
  const Json done = Json::parse(events[events.size() - 2]);
  EXPECT_EQ(done["object"], "model.pull.done") << done;
  EXPECT_EQ(done["status"], "success");
  EXPECT_EQ(done["model"], "hf.co/org/tiny-GGUF:Q8_0");
  EXPECT_EQ(done["source"], "download");

  // Listed and served by that name at once.
  r = testing::http_request(server.port(), "GET", "/v1/models", "", key);
  EXPECT_NE(r.body.find("\"hf.co/org/tiny-GGUF:Q8_0\""), std::string::npos) << r.body;
  r = post("/v1/completions",
           R"({"model": "hf.co/org/tiny-GGUF:Q8_0", "prompt": "hi", "max_tokens": 2})");
  EXPECT_EQ(r.status, 200) << r.body;

  // Not streamed: one object, the exact file chosen by "file".
  r = post("/v1/models/pull",
           R"({"model": "hf.co/org/tiny-GGUF", "file": "tiny-F16.gguf", "stream": false})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"].substr(0, 16), "application/json");
  const Json whole = Json::parse(r.body);
  EXPECT_EQ(whole["object"], "model.pull.done");
  EXPECT_EQ(whole["model"], "hf.co/org/tiny-GGUF:F16");
  r = testing::http_request(server.port(), "GET", "/v1/models", "", key);
  EXPECT_NE(r.body.find("\"hf.co/org/tiny-GGUF:F16\""), std::string::npos) << r.body;

  // Errors: the body's with 400, the hub's with its status, or as the stream's last event.
  r = post("/v1/models/pull", R"({"model": 7})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Json::parse(r.body)["error"]["param"], "model") << r.body;
  r = post("/v1/models/pull", R"({"model": "org/missing-GGUF", "stream": false})");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(Json::parse(r.body)["error"]["code"], "hub_not_found") << r.body;
  r = post("/v1/models/pull", R"({"model": "org/missing-GGUF"})");
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<std::string> failed = sse_data(r.body);
  ASSERT_GE(failed.size(), 2u) << r.body;
  EXPECT_EQ(failed.back(), "[DONE]");
  EXPECT_EQ(Json::parse(failed[failed.size() - 2])["error"]["code"], "hub_not_found") << r.body;
  // Without the key: refused like every other model route.
  EXPECT_EQ(testing::http_request(server.port(), "POST", "/v1/models/pull",
                                  R"({"model": "hf.co/org/tiny-GGUF"})")
                .status,
            401);
}

TEST_F(PullE2e, OfflineModeUsesOnlyWhatIsHere) {
  const auto none = run_command(env("HF_HUB_OFFLINE=1") + " pull org/tiny-GGUF");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.stderr_text.find("hub_offline"), std::string::npos) << none.stderr_text;
  make_hf_cache(dir_.file("hf/hub"), q8_);
  const auto cached = run_command(env("HF_HUB_OFFLINE=1") + " pull org/tiny-GGUF");
  ASSERT_EQ(cached.exit_code, 0) << cached.stderr_text;
  EXPECT_NE(cached.stdout_text.find("pulled hf.co/org/tiny-GGUF:Q8_0"), std::string::npos);
  EXPECT_NE(cached.stdout_text.find("from the Hugging Face cache"), std::string::npos);
  EXPECT_TRUE(hub_->requests().empty()) << "offline mode used the network";
}

TEST_F(PullE2e, DiscoversOtherToolsModelsAndImportsFromOllama) {
  make_hf_cache(dir_.file("hf/hub"), q8_);
  fs::create_directories(dir_.file("llama"));
  fs::copy_file(dir_.file("b.gguf"), dir_.file("llama/org_tiny-GGUF_tiny-F16.gguf"));
  const std::string blob_sha = FakeHub::sha256_hex(f16_);
  fs::create_directories(dir_.file("ollama/blobs"));
  fs::create_directories(dir_.file("ollama/manifests/registry.ollama.ai/library/tiny"));
  fs::copy_file(dir_.file("b.gguf"), dir_.file("ollama/blobs/sha256-" + blob_sha));
  const std::string manifest =
      R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model",)"
      R"("digest":"sha256:)" +
      blob_sha + R"(","size":)" + std::to_string(f16_.size()) + "}]}";
  testing::write_file_bytes(dir_.file("ollama/manifests/registry.ollama.ai/library/tiny/latest"),
                            std::vector<uint8_t>(manifest.begin(), manifest.end()));

  const auto r = run_command(env() + " models list --discover --json");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const Json found = Json::parse(r.stdout_text)["models"];
  ASSERT_EQ(found.size(), 3u) << found.dump(2);
  EXPECT_EQ(found[0]["source"], "huggingface");
  EXPECT_EQ(found[0]["name"], "hf.co/org/tiny-GGUF:Q8_0");
  EXPECT_EQ(found[0]["bytes"], q8_.size());
  EXPECT_EQ(found[1]["source"], "llama.cpp");
  EXPECT_EQ(found[2]["source"], "ollama");
  EXPECT_EQ(found[2]["name"], "tiny:latest");
  const auto text = run_command(env() + " models list --discover");
  EXPECT_NE(text.stdout_text.find("tiny:latest"), std::string::npos) << text.stdout_text;

  const auto imported = run_command(env() + " models import --from-ollama tiny --json");
  ASSERT_EQ(imported.exit_code, 0) << imported.stderr_text;
  const Json j = Json::parse(imported.stdout_text);
  EXPECT_EQ(j["name"], "tiny:latest");
  EXPECT_EQ(j["model"]["source_sha256"], blob_sha);
  const auto unknown = run_command(env() + " models import --from-ollama nothing:7b");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.stderr_text.find("Ollama has no model"), std::string::npos);
  EXPECT_EQ(run_command(env() + " models import").exit_code, 1);
}

}  // namespace
}  // namespace synapse
