// SPDX-License-Identifier: Apache-2.0
// Every GGUF under the shared fixtures (trained and random models, tokenizer vocabularies,
// quantization references) is read with the right architecture, hyper-parameters, tensor count,
// types and shapes. Expected values come from tests/golden/gguf_fixtures.jsonl (computed by an
// independent Python reader) and from the `<model>.tensors.json` files beside the models.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "format/gguf/gguf_file.h"
#include "format/gguf/gguf_keys.h"
#include "model/arch/architecture.h"
#include "model/tensor_check.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;

std::vector<Json> golden_entries() {
  std::ifstream in(std::string(SYNAPSE_SOURCE_DIR) + "/tests/golden/gguf_fixtures.jsonl");
  std::vector<Json> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    Json entry = Json::parse(line);
    if (!entry.contains("_comment")) out.push_back(std::move(entry));
  }
  return out;
}

std::vector<uint64_t> shape_of(const GgufTensorInfo& t) {
  return {t.shape().begin(), t.shape().end()};
}

TEST(GgufFixtures, Stories260KConcreteValues) {
  SYN_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  const Result<GgufFile> file = GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(*file->metadata().architecture(), "llama");
  EXPECT_EQ(file->tensors().size(), 48u);
  const Result<HParams> hp = read_model_hparams(file->metadata());
  ASSERT_TRUE(hp.ok()) << hp.status().to_string();
  EXPECT_EQ(hp->n_embd, 64u);
  EXPECT_EQ(hp->n_layer, 5u);
  EXPECT_EQ(hp->n_head, 8u);
  EXPECT_EQ(hp->n_head_kv, 4u);
  EXPECT_EQ(hp->n_vocab, 512u);
  EXPECT_EQ(hp->n_ff, 172u);
  EXPECT_EQ(hp->head_dim_k, 8u);
  EXPECT_EQ(hp->n_rot, 8u);
  EXPECT_EQ(hp->rope_layout, RopeLayout::kAdjacentPairs);
  EXPECT_FLOAT_EQ(hp->norm_eps, 1e-5f);
  const GgufTensorInfo* embd = file->find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->type, TensorType::kF32);
  EXPECT_EQ(shape_of(*embd), (std::vector<uint64_t>{64, 512}));
  const TensorCheckReport check = check_model_tensors(*find_architecture("llama"), *hp, *file);
  EXPECT_TRUE(check.ok());
  EXPECT_FALSE(check.tied_output);
  EXPECT_TRUE(check.unknown.empty());
}

TEST(GgufFixtures, EveryFileMatchesItsGoldenLine) {
  SYN_REQUIRE_FIXTURE(anchor, "models/stories260K.gguf");
  const std::vector<Json> entries = golden_entries();
  ASSERT_GE(entries.size(), 57u);
  for (const Json& e : entries) {
    const std::string rel = e["file"];
    SCOPED_TRACE(rel);
    const auto path = testing::find_fixture(rel);
    ASSERT_TRUE(path.has_value()) << "fixture listed in the golden file is missing";
    const Result<GgufFile> opened = GgufFile::open(*path);
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    const GgufFile& file = *opened;
    const GgufMetadata& md = file.metadata();
    EXPECT_EQ(file.version(), e["version"].get<uint32_t>());
    EXPECT_EQ(*md.architecture(), e["architecture"].get<std::string>());
    EXPECT_EQ(file.tensors().size(), e["tensor_count"].get<size_t>());
    EXPECT_EQ(md.size(), e["kv_count"].get<size_t>());
    EXPECT_EQ(file.layout().tensor_data_bytes, e["tensor_data_bytes"].get<uint64_t>());
    EXPECT_LE(file.parsed_bytes(), file.data_section_offset()) << "validation read tensor data";
    if (e.contains("vocab_tokens")) {
      EXPECT_EQ(md.get_string_array(gguf_key::kTokenizerTokens)->size(),
                e["vocab_tokens"].get<size_t>());
      EXPECT_EQ(*md.get_string(gguf_key::kTokenizerModel), e["tokenizer_model"].get<std::string>());
    }
    const std::string arch = e["architecture"];
    const std::pair<const char*, const char*> keys[] = {
        {"embedding_length", "embedding_length"},
        {"block_count", "block_count"},
        {"head_count", "attention.head_count"},
        {"head_count_kv", "attention.head_count_kv"},
        {"feed_forward_length", "feed_forward_length"},
        {"context_length", "context_length"}};
    for (const auto& [field, suffix] : keys) {
      if (e.contains(field)) {
        EXPECT_EQ(*md.get_u32(gguf_key::arch_key(arch, suffix)), e[field].get<uint32_t>()) << field;
      }
    }
    for (const char* which : {"first_tensor", "last_tensor"}) {
      if (!e.contains(which)) continue;
      const Json& t = e[which];
      const GgufTensorInfo& info =
          std::string(which) == "first_tensor" ? file.tensors().front() : file.tensors().back();
      EXPECT_EQ(info.name, t["name"].get<std::string>());
      EXPECT_EQ(tensor_type_name(info.type), t["type"].get<std::string>());
      EXPECT_EQ(shape_of(info), t["shape"].get<std::vector<uint64_t>>());
    }
    // Supported models with weights also pass the architecture's tensor check.
    const Architecture* a = find_architecture(arch);
    if (a != nullptr && !file.tensors().empty()) {
      const Result<HParams> hp = read_model_hparams(md);
      ASSERT_TRUE(hp.ok()) << hp.status().to_string();
      const TensorCheckReport check = check_model_tensors(*a, *hp, file);
      EXPECT_TRUE(check.ok()) << check.problems.front().to_string();
      EXPECT_TRUE(check.unknown.empty()) << check.unknown.front();
    }
  }
}

TEST(GgufFixtures, TensorTablesMatchTheReferenceJson) {
  SYN_REQUIRE_FIXTURE(anchor, "models/stories260K.gguf");
  size_t checked_files = 0;
  for (const std::string folder : {"reference/logits", "reference/embeddings"}) {
    for (const auto& entry :
         std::filesystem::directory_iterator(testing::fixtures_dir() + "/" + folder)) {
      const std::string path = entry.path().string();
      if (!path.ends_with(".tensors.json")) continue;
      const std::string gguf =
          path.substr(0, path.size() - std::string(".tensors.json").size()) + ".gguf";
      if (!std::filesystem::exists(gguf)) continue;
      SCOPED_TRACE(gguf);
      const Json expected = Json::parse(testing::read_file_text(path));
      const GgufFile file = *GgufFile::open(gguf);
      EXPECT_EQ(file.tensors().size(), expected.size());
      for (const auto& [name, t] : expected.items()) {
        const GgufTensorInfo* info = file.find_tensor(name);
        ASSERT_NE(info, nullptr) << name;
        EXPECT_EQ(tensor_type_name(info->type), t["type"].get<std::string>()) << name;
        EXPECT_EQ(shape_of(*info), t["ne"].get<std::vector<uint64_t>>()) << name;
      }
      ++checked_files;
    }
  }
  EXPECT_GE(checked_files, 40u);
}

TEST(GgufFixtures, NoFixtureIsLeftUntested) {
  SYN_REQUIRE_FIXTURE(anchor, "models/stories260K.gguf");
  std::set<std::string> listed;
  for (const Json& e : golden_entries()) listed.insert(e["file"].get<std::string>());
  const std::filesystem::path root = testing::fixtures_dir();
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".gguf") continue;
    const std::string rel = std::filesystem::relative(entry.path(), root).string();
    EXPECT_TRUE(listed.contains(rel)) << rel << " has no line in tests/golden/gguf_fixtures.jsonl";
  }
}

}  // namespace
}  // namespace synapse
