// SPDX-License-Identifier: Apache-2.0
// A model file's details read from its metadata alone: the family from general.architecture
// whatever string it is, the parameter size from general.parameter_count or the tensor shapes,
// the quantization from general.file_type or the commonest weight type, model_info without the
// arrays and the template, the stop strings, and the cache that re-reads a changed file.
#include "request/model_details.h"

#include <gtest/gtest.h>

#include <vector>

#include "format/gguf/gguf_writer.h"
#include "tests/support/test_support.h"

namespace synapse::request {
namespace {

struct TensorSpec {
  std::string name;
  TensorType type;
  std::vector<uint64_t> dims;
};

// Writes a GGUF with `keys` and zero-filled tensors.
void write_model(const std::string& path,
                 const std::vector<std::pair<std::string, GgufValue>>& keys,
                 const std::vector<TensorSpec>& tensors) {
  GgufWriter w;
  for (const auto& [key, value] : keys) ASSERT_TRUE(w.set(key, value).ok()) << key;
  for (const TensorSpec& t : tensors) {
    ASSERT_TRUE(w.add_tensor(t.name, t.type, t.dims, [](std::span<uint8_t> out) {
                   std::fill(out.begin(), out.end(), uint8_t{0});
                   return ok_status();
                 }).ok());
  }
  ASSERT_TRUE(w.write_file(path).ok());
}

TEST(ModelDetails, FromTheMetadataThatSaysIt) {
  testing::TempDir dir;
  const std::string path = dir.file("m.gguf");
  // An architecture no code knows: the family is the file's string, not a name from a list.
  write_model(path,
              {{"general.architecture", GgufValue::string("toyarch")},
               {"general.name", GgufValue::string("toy")},
               {"general.parameter_count", GgufValue::scalar(uint64_t{7241732096})},
               {"general.file_type", GgufValue::scalar(uint32_t{15})},
               {"toyarch.context_length", GgufValue::scalar(uint32_t{4096})},
               {"toyarch.embedding_length", GgufValue::scalar(uint32_t{64})},
               {"toyarch.attention.layer_norm_rms_epsilon", GgufValue::scalar(1e-6f)},
               {"toyarch.use_parallel_residual", GgufValue::scalar(true)},
               {"tokenizer.ggml.tokens", GgufValue::string_array({"<s>", "a", "</s>", "<|eot|>"})},
               {"tokenizer.ggml.eos_token_id", GgufValue::scalar(uint32_t{2})},
               {"tokenizer.ggml.eot_token_id", GgufValue::scalar(uint32_t{3})},
               {"tokenizer.chat_template", GgufValue::string("{{ messages }}")}},
              {{"w", TensorType::kF32, {8, 4}}});
  Result<std::shared_ptr<const ModelDetails>> d = read_model_details(path);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  const ModelDetails& m = **d;
  EXPECT_EQ(m.format, "gguf");
  EXPECT_EQ(m.family, "toyarch");
  EXPECT_EQ(m.parameter_count, 7241732096u);  // the file's count, not the one tensor's 32
  EXPECT_EQ(m.parameter_size, "7.2B");
  EXPECT_EQ(m.quantization_level, "Q4_K_M");
  EXPECT_EQ(m.stop, (std::vector<std::string>{"</s>", "<|eot|>"}));

  const nlohmann::ordered_json& info = m.model_info;
  EXPECT_EQ(info["general.architecture"], "toyarch");
  EXPECT_EQ(info["general.parameter_count"], 7241732096u);
  EXPECT_EQ(info["general.file_type"], 15);
  EXPECT_EQ(info["toyarch.context_length"], 4096);
  EXPECT_EQ(info["toyarch.embedding_length"], 64);
  EXPECT_EQ(info["toyarch.use_parallel_residual"], true);
  // A float32 as written, not its binary neighbour.
  EXPECT_EQ(info["toyarch.attention.layer_norm_rms_epsilon"].dump(), "1e-06");
  ASSERT_TRUE(info.contains("tokenizer.ggml.tokens"));
  EXPECT_TRUE(info["tokenizer.ggml.tokens"].is_null());  // arrays: null, as Ollama shows them
  EXPECT_FALSE(info.contains("tokenizer.chat_template"));
  std::vector<std::string> keys;
  for (const auto& [key, value] : info.items()) keys.push_back(key);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
}

TEST(ModelDetails, CountedFromTheTensorsWhenTheFileDoesNotSay) {
  testing::TempDir dir;
  const std::string path = dir.file("m.gguf");
  write_model(path, {{"general.architecture", GgufValue::string("other")}},
              {{"a", TensorType::kF16, {64, 32}},  // 2048: the commonest weight type
               {"b", TensorType::kF32, {32, 2}},   // 64
               {"n", TensorType::kF32, {32}}});    // a vector: not a weight
  Result<std::shared_ptr<const ModelDetails>> d = read_model_details(path);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ((*d)->family, "other");
  EXPECT_EQ((*d)->parameter_count, 2048u + 64u + 32u);
  EXPECT_EQ((*d)->parameter_size, "2K");
  EXPECT_EQ((*d)->quantization_level, "F16");
  EXPECT_EQ((*d)->model_info["general.parameter_count"], 2144);
  EXPECT_TRUE((*d)->stop.empty());
}

TEST(ModelDetails, CachedUntilTheFileChanges) {
  testing::TempDir dir;
  const std::string path = dir.file("m.gguf");
  write_model(path, {{"general.architecture", GgufValue::string("first")}},
              {{"w", TensorType::kF32, {8, 4}}});
  Result<std::shared_ptr<const ModelDetails>> a = read_model_details(path);
  Result<std::shared_ptr<const ModelDetails>> b = read_model_details(path);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());  // the same parse, not a second one
  // Replaced by a file of another size: read again. (The tensor grows by far more than the
  // alignment padding; the two writes may fall within one tick of the file system's clock.)
  write_model(path, {{"general.architecture", GgufValue::string("second-family")}},
              {{"w", TensorType::kF32, {8, 64}}});
  Result<std::shared_ptr<const ModelDetails>> c = read_model_details(path);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->get(), c->get());
  EXPECT_EQ((*c)->family, "second-family");
}

TEST(ModelDetails, MissingFileIsAnError) {
  testing::TempDir dir;
  Result<std::shared_ptr<const ModelDetails>> d = read_model_details(dir.file("absent.gguf"));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kNotFound) << d.status().to_string();
}

TEST(ModelDetails, ParameterSizeAsOllamaWritesIt) {
  EXPECT_EQ(parameter_size_text(494032768), "494.03M");
  EXPECT_EQ(parameter_size_text(7241732096), "7.2B");
  EXPECT_EQ(parameter_size_text(7000000000), "7B");
  EXPECT_EQ(parameter_size_text(1500000000000), "1.5T");
  EXPECT_EQ(parameter_size_text(33000), "33K");
  EXPECT_EQ(parameter_size_text(950), "950");
  EXPECT_EQ(parameter_size_text(0), "0");
}

TEST(ModelDetails, FileTypeNames) {
  EXPECT_EQ(file_type_name(0), "F32");
  EXPECT_EQ(file_type_name(1), "F16");
  EXPECT_EQ(file_type_name(7), "Q8_0");
  EXPECT_EQ(file_type_name(15), "Q4_K_M");
  EXPECT_EQ(file_type_name(32), "BF16");
  EXPECT_EQ(file_type_name(5), "");  // removed from llama.cpp
  EXPECT_EQ(file_type_name(1024), "");
}

}  // namespace
}  // namespace synapse::request
