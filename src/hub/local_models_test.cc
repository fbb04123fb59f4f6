// SPDX-License-Identifier: Apache-2.0
#include "hub/local_models.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "hub/fake_hub.h"
#include "tests/support/test_support.h"

namespace synapse::hub {
namespace {

namespace fs = std::filesystem;

void write_text(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  synapse::testing::write_file_bytes(path, std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

// The layouts the three tools write, in a temporary directory.
struct FakeMachine {
  synapse::testing::TempDir dir;
  HubConfig config;
  std::string hf_bytes = "GGUF hf model", llama_bytes = "GGUF llama", ollama_bytes = "GGUF ol";

  FakeMachine() {
    config.hub_cache = dir.file("hf/hub");
    config.llama_cache = dir.file("llama.cpp");
    config.ollama_models = dir.file("ollama/models");
    // huggingface_hub: blobs named by SHA-256, snapshots linking to them, refs naming commits.
    const std::string repo = config.hub_cache + "/models--org--Model-GGUF";
    const std::string sha = FakeHub::sha256_hex(hf_bytes);
    write_text(repo + "/blobs/" + sha, hf_bytes);
    write_text(repo + "/refs/main", kCommit);
    fs::create_directories(repo + "/snapshots/" + kCommit);
    fs::create_symlink("../../blobs/" + sha, repo + "/snapshots/" + kCommit + "/Model-Q4_K_M.gguf");
    write_text(repo + "/snapshots/" + kCommit + "/README.md", "readme");
    // llama.cpp: flat files, with its .json etag sidecars.
    write_text(config.llama_cache + "/org_Other-GGUF_other-q8_0.gguf", llama_bytes);
    write_text(config.llama_cache + "/org_Other-GGUF_other-q8_0.gguf.json", "{}");
    // Ollama: a manifest naming a blob.
    const std::string blob_sha = FakeHub::sha256_hex(ollama_bytes);
    write_text(config.ollama_models + "/blobs/sha256-" + blob_sha, ollama_bytes);
    write_text(config.ollama_models + "/manifests/registry.ollama.ai/library/tiny/latest",
               R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model",
                  "digest":"sha256:)" +
                   blob_sha + R"(","size":7}]})");
    write_text(config.ollama_models + "/manifests/hf.co/org/Model-GGUF/Q4_K_M",
               R"({"layers":[{"mediaType":"application/vnd.ollama.image.model",
                  "digest":"sha256:)" +
                   blob_sha + R"("}]})");
    // A manifest whose blob is gone is not listed.
    write_text(config.ollama_models + "/manifests/registry.ollama.ai/library/gone/latest",
               R"({"layers":[{"mediaType":"application/vnd.ollama.image.model",
                  "digest":"sha256:)" +
                   std::string(64, 'e') + R"("}]})");
  }
};

TEST(LocalModels, DiscoversTheThreeCaches) {
  FakeMachine m;
  const std::vector<LocalModel> found = discover_local_models(m.config);
  ASSERT_EQ(found.size(), 4u);
  EXPECT_EQ(found[0].source, "huggingface");
  EXPECT_EQ(found[0].name, "hf.co/org/Model-GGUF:Q4_K_M");
  EXPECT_EQ(found[0].bytes, m.hf_bytes.size());
  EXPECT_EQ(found[0].sha256, FakeHub::sha256_hex(m.hf_bytes));
  EXPECT_EQ(found[1].source, "llama.cpp");
  EXPECT_EQ(found[1].name, "llama.cpp:org_Other-GGUF_other-q8_0");
  EXPECT_EQ(found[2].source, "ollama");
  EXPECT_EQ(found[2].name, "hf.co/org/Model-GGUF:Q4_K_M");
  EXPECT_EQ(found[3].name, "tiny:latest");
  EXPECT_EQ(found[3].bytes, m.ollama_bytes.size());
  // Nothing there: nothing found, no error.
  HubConfig empty;
  empty.hub_cache = m.dir.file("none1");
  empty.llama_cache = m.dir.file("none2");
  empty.ollama_models = m.dir.file("none3");
  EXPECT_TRUE(discover_local_models(empty).empty());
}

TEST(LocalModels, FindsOllamaModelsByName) {
  FakeMachine m;
  for (const char* name : {"tiny", "tiny:latest", "library/tiny:latest"}) {
    const Result<LocalModel> found = find_ollama_model(m.config, name);
    ASSERT_TRUE(found.ok()) << name << ": " << found.status().to_string();
    EXPECT_EQ(found->name, "tiny:latest");
    EXPECT_EQ(synapse::testing::read_file_text(found->path), m.ollama_bytes);
  }
  ASSERT_TRUE(find_ollama_model(m.config, "hf.co/org/Model-GGUF:Q4_K_M").ok());
  EXPECT_EQ(find_ollama_model(m.config, "tiny:7b").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(find_ollama_model(m.config, "gone").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(find_ollama_model(m.config, "../x").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(find_ollama_model(m.config, "a/b/c/d").status().code(), ErrorCode::kInvalidArgument);
}

TEST(LocalModels, ReadsHuggingFaceSnapshotsAndBlobs) {
  FakeMachine m;
  const std::string sha = FakeHub::sha256_hex(m.hf_bytes);
  const Result<CachedSnapshot> snapshot = hf_cache_snapshot(m.config, "org/Model-GGUF", "main");
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().to_string();
  EXPECT_EQ(snapshot->commit, kCommit);
  ASSERT_EQ(snapshot->files.size(), 2u);
  EXPECT_EQ(snapshot->files[0].repo_path, "Model-Q4_K_M.gguf");
  EXPECT_EQ(snapshot->files[0].sha256, sha);
  EXPECT_EQ(snapshot->files[1].sha256, "");  // README.md: no blob link
  EXPECT_TRUE(hf_cache_snapshot(m.config, "org/Model-GGUF", kCommit).ok());
  EXPECT_EQ(hf_cache_snapshot(m.config, "org/Model-GGUF", "dev").status().code(),
            ErrorCode::kHubOffline);
  EXPECT_EQ(hf_cache_snapshot(m.config, "org/Other", "main").status().code(),
            ErrorCode::kHubOffline);
  EXPECT_TRUE(hf_cache_blob(m.config, "org/Model-GGUF", sha, m.hf_bytes.size()).has_value());
  EXPECT_FALSE(hf_cache_blob(m.config, "org/Model-GGUF", sha, 1).has_value());
  EXPECT_FALSE(hf_cache_blob(m.config, "org/Model-GGUF", std::string(64, 'f'), 1).has_value());
}

}  // namespace
}  // namespace synapse::hub
