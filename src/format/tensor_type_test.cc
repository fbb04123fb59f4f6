// SPDX-License-Identifier: Apache-2.0
#include "format/tensor_type.h"

#include <gtest/gtest.h>

#include <set>

namespace synapse {
namespace {

TEST(TensorType, TableCoversEveryGgmlType) {
  // ggml's ids 0..39 minus the removed ones (4, 5, 31-33, 36-38).
  const std::set<uint32_t> removed = {4, 5, 31, 32, 33, 36, 37, 38};
  for (uint32_t id = 0; id < 40; ++id) {
    EXPECT_EQ(find_tensor_type(id) != nullptr, !removed.contains(id)) << "id " << id;
  }
  EXPECT_EQ(find_tensor_type(40), nullptr);
  EXPECT_EQ(find_tensor_type(0xFFFFFFFF), nullptr);
  EXPECT_EQ(tensor_type_table().size(), 32u);
}

TEST(TensorType, BlockLayoutsMatchGgml) {
  struct Expect {
    TensorType type;
    uint32_t block_elements;
    uint32_t block_bytes;
  };
  // Bytes per block from ggml-common.h's block structs.
  const Expect expected[] = {
      {TensorType::kF32, 1, 4},        {TensorType::kF16, 1, 2},
      {TensorType::kBF16, 1, 2},       {TensorType::kQ4_0, 32, 18},
      {TensorType::kQ4_1, 32, 20},     {TensorType::kQ5_0, 32, 22},
      {TensorType::kQ5_1, 32, 24},     {TensorType::kQ8_0, 32, 34},
      {TensorType::kQ8_1, 32, 36},     {TensorType::kQ2_K, 256, 84},
      {TensorType::kQ3_K, 256, 110},   {TensorType::kQ4_K, 256, 144},
      {TensorType::kQ5_K, 256, 176},   {TensorType::kQ6_K, 256, 210},
      {TensorType::kQ8_K, 256, 292},   {TensorType::kIQ2_XXS, 256, 66},
      {TensorType::kIQ2_XS, 256, 74},  {TensorType::kIQ3_XXS, 256, 98},
      {TensorType::kIQ1_S, 256, 50},   {TensorType::kIQ4_NL, 32, 18},
      {TensorType::kIQ3_S, 256, 110},  {TensorType::kIQ2_S, 256, 82},
      {TensorType::kIQ4_XS, 256, 136}, {TensorType::kIQ1_M, 256, 56},
      {TensorType::kTQ1_0, 256, 54},   {TensorType::kTQ2_0, 256, 66},
      {TensorType::kMXFP4, 32, 17},    {TensorType::kI8, 1, 1},
      {TensorType::kI16, 1, 2},        {TensorType::kI32, 1, 4},
      {TensorType::kI64, 1, 8},        {TensorType::kF64, 1, 8},
  };
  for (const Expect& e : expected) {
    const TensorTypeInfo& info = tensor_type_info(e.type);
    EXPECT_EQ(info.block_elements, e.block_elements) << info.name;
    EXPECT_EQ(info.block_bytes, e.block_bytes) << info.name;
  }
}

TEST(TensorType, NamesRoundTripCaseInsensitively) {
  for (const TensorTypeInfo& info : tensor_type_table()) {
    EXPECT_EQ(tensor_type_from_name(info.name), info.type);
    std::string lower(info.name);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(tensor_type_from_name(lower), info.type);
  }
  EXPECT_FALSE(tensor_type_from_name("q4_2").has_value());
  EXPECT_FALSE(tensor_type_from_name("").has_value());
}

TEST(TensorType, ByteSizes) {
  const uint64_t matrix[] = {256, 301};
  EXPECT_EQ(*tensor_byte_size(TensorType::kF32, matrix), 256u * 301 * 4);
  EXPECT_EQ(*tensor_byte_size(TensorType::kQ6_K, matrix), 301u * 210);
  EXPECT_EQ(*tensor_byte_size(TensorType::kQ8_0, matrix), 301u * 8 * 34);
  const uint64_t ragged[] = {100, 2};
  EXPECT_EQ(tensor_byte_size(TensorType::kQ4_0, ragged).status().code(), ErrorCode::kBadShape);
  const uint64_t zero[] = {32, 0};
  EXPECT_EQ(tensor_byte_size(TensorType::kF32, zero).status().code(), ErrorCode::kBadShape);
  const uint64_t huge[] = {1ull << 32, 1ull << 32};
  EXPECT_EQ(tensor_byte_size(TensorType::kF32, huge).status().code(), ErrorCode::kBadShape);
  const uint64_t bytes_overflow[] = {1ull << 31, 1ull << 31};  // 2^62 elements * 4 bytes
  EXPECT_EQ(tensor_byte_size(TensorType::kF32, bytes_overflow).status().code(),
            ErrorCode::kBadShape);
  EXPECT_EQ(tensor_byte_size(TensorType::kF32, {}).status().code(), ErrorCode::kBadShape);
}

}  // namespace
}  // namespace synapse
