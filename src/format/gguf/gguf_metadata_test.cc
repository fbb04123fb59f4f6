// SPDX-License-Identifier: Apache-2.0
#include "format/gguf/gguf_metadata.h"

#include <gtest/gtest.h>

namespace synapse {
namespace {

GgufMetadata sample() {
  std::vector<GgufKeyValue> entries;
  auto add = [&entries](std::string_view key, GgufValue value) {
    entries.push_back({key, std::move(value), 0});
  };
  add("general.architecture", GgufValue::string_view_of("llama"));
  add("llama.context_length", GgufValue::scalar(uint32_t{2048}));
  add("llama.block_count", GgufValue::scalar(uint64_t{5}));
  add("llama.negative", GgufValue::scalar(int32_t{-1}));
  add("llama.huge", GgufValue::scalar(uint64_t{1} << 40));
  add("llama.eps", GgufValue::scalar(1e-5f));
  add("llama.eps64", GgufValue::scalar(1e-6));
  add("llama.too_big_for_f32", GgufValue::scalar(1e300));
  add("flag", GgufValue::scalar(true));
  add("tokens", GgufValue::string_array({"<s>", "a"}));
  add("scores", GgufValue::array(std::vector<float>{0.5f, -1.0f}));
  add("types", GgufValue::array(std::vector<int32_t>{1, 3}));
  add("wide", GgufValue::array(std::vector<int64_t>{1, int64_t{1} << 40}));
  return GgufMetadata(std::move(entries));
}

TEST(GgufMetadata, TypedAccessors) {
  const GgufMetadata md = sample();
  EXPECT_EQ(md.size(), 13u);
  EXPECT_EQ(*md.architecture(), "llama");
  EXPECT_EQ(*md.arch_key("context_length"), "llama.context_length");
  EXPECT_EQ(*md.get_u32("llama.context_length"), 2048u);
  EXPECT_EQ(*md.get_u32("llama.block_count"), 5u);  // u64 that fits
  EXPECT_EQ(*md.get_i64("llama.negative"), -1);
  EXPECT_FLOAT_EQ(*md.get_f32("llama.eps"), 1e-5f);
  EXPECT_FLOAT_EQ(*md.get_f32("llama.eps64"), 1e-6f);
  EXPECT_TRUE(*md.get_bool("flag"));
  EXPECT_EQ((*md.get_string_array("tokens"))[1], "a");
  EXPECT_EQ(*md.get_f32_array("scores"), (std::vector<float>{0.5f, -1.0f}));
  EXPECT_EQ(*md.get_i32_array("types"), (std::vector<int32_t>{1, 3}));
}

TEST(GgufMetadata, ErrorsNameTheKey) {
  const GgufMetadata md = sample();
  const Status missing = md.get_u32("llama.missing").status();
  EXPECT_EQ(missing.code(), ErrorCode::kMissingKey);
  EXPECT_EQ(missing.where().key, "llama.missing");
  EXPECT_EQ(md.get_u32("general.architecture").status().code(), ErrorCode::kTypeMismatch);
  EXPECT_EQ(md.get_u32("llama.negative").status().code(), ErrorCode::kBadValue);
  EXPECT_EQ(md.get_u32("llama.huge").status().code(), ErrorCode::kBadValue);
  EXPECT_EQ(md.get_f32("llama.too_big_for_f32").status().code(), ErrorCode::kBadValue);
  EXPECT_EQ(md.get_string("llama.context_length").status().code(), ErrorCode::kTypeMismatch);
  EXPECT_EQ(md.get_bool("llama.context_length").status().code(), ErrorCode::kTypeMismatch);
  EXPECT_EQ(md.get_string_array("scores").status().code(), ErrorCode::kTypeMismatch);
  EXPECT_EQ(md.get_f32_array("tokens").status().code(), ErrorCode::kTypeMismatch);
  EXPECT_EQ(md.get_i32_array("scores").status().code(), ErrorCode::kTypeMismatch);
  EXPECT_EQ(md.get_i32_array("wide").status().code(), ErrorCode::kBadValue);
  const Status mismatch = md.get_f32("tokens").status();
  EXPECT_EQ(mismatch.message(), "expected a float, found array of string");
}

TEST(GgufMetadata, FallbacksOnlyForMissingKeys) {
  const GgufMetadata md = sample();
  EXPECT_EQ(*md.get_u32_or("absent", 9), 9u);
  EXPECT_EQ(*md.get_u32_or("llama.context_length", 9), 2048u);
  EXPECT_EQ(md.get_u32_or("general.architecture", 9).status().code(), ErrorCode::kTypeMismatch);
  EXPECT_FLOAT_EQ(*md.get_f32_or("absent", 0.25f), 0.25f);
  EXPECT_EQ(*md.get_bool_or("absent", true), true);
  EXPECT_EQ(*md.get_string_or("absent", "x"), "x");
}

TEST(GgufMetadata, NoArchitecture) {
  const GgufMetadata empty;
  EXPECT_EQ(empty.architecture().status().code(), ErrorCode::kMissingKey);
  EXPECT_EQ(empty.arch_key("x").status().code(), ErrorCode::kMissingKey);
  EXPECT_EQ(empty.find("x"), nullptr);
}

}  // namespace
}  // namespace synapse
