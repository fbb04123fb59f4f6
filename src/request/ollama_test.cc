// SPDX-License-Identifier: Apache-2.0
// Ollama's /api/tags, /api/ps and /api/show over a model directory whose sources are
// synthesized model files, with a fake loader (instances without a service): every listed name
// carries the store digest and the details of its file without a load; show gives the file's
// model_info, the template's capabilities and the stop strings.
#include "request/ollama.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>

#include "synth/synth_model.h"
#include "tests/support/test_support.h"

namespace synapse::request {
namespace {

using Json = nlohmann::json;

constexpr const char* kDigest = "5f1b8c0e2d9a4b7c6e3f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d";
constexpr uint32_t kSynthCtx = 256;

class OllamaListing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    SynthOptions o;
    o.arch = kArch;
    o.n_ctx = kSynthCtx;
    o.type_attention = TensorType::kQ8_0;
    o.type_feed_forward = TensorType::kQ8_0;
    ASSERT_TRUE(synthesize_model(o, dir_->file("tiny.gguf")).ok());
  }
  static void TearDownTestSuite() { delete dir_; }

  // A directory over the file: "tiny" (a decoder, served with `chat_template`, also named
  // "tiny-copy") and "tiny-embed" (the same file served as an embedder).
  void make_directory(std::string_view chat_template) {
    template_ = std::string(chat_template);
    directory_ = std::make_unique<ModelDirectory>();
    directory_->set_loader(
        [this](const ModelSource& source) -> Result<std::unique_ptr<ModelInstance>> {
          ++loads_;
          auto instance = std::make_unique<ModelInstance>();
          instance->served.id = source.name;
          SYN_ASSIGN_OR_RETURN(instance->served.chat_template,
                               chat::ChatTemplate::compile(template_));
          instance->kind = source.kind;
          instance->bytes = source.bytes;
          return instance;
        },
        DirectoryOptions{});
    ModelSource decoder;
    decoder.name = "tiny";
    decoder.aliases = {"tiny-copy"};
    decoder.ref = decoder.path = dir_->file("tiny.gguf");
    decoder.digest = kDigest;
    decoder.bytes = 1000;
    decoder.created = 1700000000;
    directory_->add_source(decoder);
    ModelSource embedder = decoder;
    embedder.name = "tiny-embed";
    embedder.aliases.clear();
    embedder.digest.clear();  // a file outside the store
    embedder.kind = ServedKind::kEmbedding;
    directory_->add_source(embedder);
  }

  static constexpr const char* kArch = "qwen2";
  static testing::TempDir* dir_;
  std::string template_;
  std::atomic<int> loads_{0};
  std::unique_ptr<ModelDirectory> directory_;
};
testing::TempDir* OllamaListing::dir_ = nullptr;

void expect_tiny_details(const Json& details) {
  EXPECT_EQ(details["format"], "gguf");
  EXPECT_EQ(details["family"], "qwen2");  // the file's general.architecture
  EXPECT_EQ(details["families"], Json::array({"qwen2"}));
  EXPECT_EQ(details["quantization_level"], "Q8_0");  // general.file_type 7
  const std::string size = details["parameter_size"];
  EXPECT_FALSE(size.empty());
  EXPECT_NE(std::string("KMBT").find(size.back()), std::string::npos) << size;
}

TEST_F(OllamaListing, TagsGiveDigestAndDetailsWithoutLoading) {
  make_directory(*chat::builtin_template("chatml"));
  const Json tags = Json::parse(ollama_tags(*directory_));
  ASSERT_EQ(tags["models"].size(), 3u) << tags;  // tiny, tiny-copy, tiny-embed
  for (const Json& m : tags["models"]) {
    SCOPED_TRACE(m.dump());
    EXPECT_EQ(m["digest"], m["name"] == "tiny-embed" ? "" : kDigest);
    expect_tiny_details(m["details"]);
  }
  EXPECT_EQ(loads_, 0);  // metadata only
  EXPECT_TRUE(Json::parse(ollama_ps(*directory_))["models"].empty());
}

TEST_F(OllamaListing, ShowReadsTheFileAndTheServedTemplate) {
  make_directory(*chat::builtin_template("qwen2.5"));  // reads `tools`
  Result<std::string> shown = ollama_show(*directory_, "tiny");
  ASSERT_TRUE(shown.ok()) << shown.status().to_string();
  const Json show = Json::parse(*shown);
  expect_tiny_details(show["details"]);
  const Json& info = show["model_info"];
  EXPECT_EQ(info["general.architecture"], "qwen2");
  EXPECT_EQ(info["qwen2.context_length"], kSynthCtx);
  EXPECT_GT(info["qwen2.block_count"].get<int>(), 0);
  EXPECT_GT(info["general.parameter_count"].get<uint64_t>(), 0u);
  EXPECT_TRUE(info["tokenizer.ggml.tokens"].is_null());
  EXPECT_FALSE(info.contains("synapse.context_length"));  // no service in this test
  EXPECT_EQ(show["capabilities"], Json::array({"completion", "tools"}));
  EXPECT_EQ(show["template"], *chat::builtin_template("qwen2.5"));
  // The end-of-generation token's text, one "stop" line each.
  const std::string parameters = show["parameters"];
  EXPECT_EQ(parameters.rfind("stop ", 0), 0u) << parameters;
  EXPECT_NE(parameters.find('"'), std::string::npos) << parameters;
  EXPECT_EQ(show["modified_at"], "2023-11-14T22:13:20.000000000Z");
  EXPECT_EQ(loads_, 1);

  // Loaded now: /api/ps lists it with the same details and digest.
  const Json ps = Json::parse(ollama_ps(*directory_));
  ASSERT_EQ(ps["models"].size(), 1u) << ps;
  EXPECT_EQ(ps["models"][0]["digest"], kDigest);
  expect_tiny_details(ps["models"][0]["details"]);
}

TEST_F(OllamaListing, CapabilitiesFollowTheKindAndTheTemplate) {
  make_directory(*chat::builtin_template("chatml"));  // never reads `tools`
  Result<std::string> decoder = ollama_show(*directory_, "tiny-copy");
  ASSERT_TRUE(decoder.ok()) << decoder.status().to_string();
  EXPECT_EQ(Json::parse(*decoder)["capabilities"], Json::array({"completion"}));
  Result<std::string> embedder = ollama_show(*directory_, "tiny-embed");
  ASSERT_TRUE(embedder.ok()) << embedder.status().to_string();
  const Json e = Json::parse(*embedder);
  EXPECT_EQ(e["capabilities"], Json::array({"embedding"}));
  EXPECT_EQ(e["parameters"], "");  // no stop strings for an embedder
  expect_tiny_details(e["details"]);
}

}  // namespace
}  // namespace synapse::request
