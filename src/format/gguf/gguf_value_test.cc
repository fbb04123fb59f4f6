// SPDX-License-Identifier: Apache-2.0
#include "format/gguf/gguf_value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace synapse {
namespace {

TEST(GgufValue, ScalarConversions) {
  EXPECT_EQ(GgufValue::scalar(uint32_t{7}).to_uint(), 7u);
  EXPECT_EQ(GgufValue::scalar(int8_t{-3}).to_int(), -3);
  EXPECT_FALSE(GgufValue::scalar(int8_t{-3}).to_uint().has_value());
  EXPECT_EQ(GgufValue::scalar(int16_t{-300}).to_int(), -300);
  EXPECT_EQ(GgufValue::scalar(uint64_t{UINT64_MAX}).to_uint(), UINT64_MAX);
  EXPECT_FALSE(GgufValue::scalar(uint64_t{UINT64_MAX}).to_int().has_value());
  EXPECT_EQ(GgufValue::scalar(int64_t{INT64_MIN}).to_int(), INT64_MIN);
  EXPECT_EQ(GgufValue::scalar(1.5f).to_double(), 1.5);
  EXPECT_EQ(GgufValue::scalar(-2.25).to_double(), -2.25);
  EXPECT_FALSE(GgufValue::scalar(1.5f).to_uint().has_value());
  EXPECT_EQ(GgufValue::scalar(true).to_bool(), true);
  EXPECT_FALSE(GgufValue::scalar(uint8_t{1}).to_bool().has_value());
  EXPECT_EQ(GgufValue::scalar(uint16_t{65535}).type(), GgufValueType::kUint16);
}

TEST(GgufValue, ScalarFromBytesIsLittleEndianAndBoolNormalised) {
  const uint8_t bytes[] = {0x01, 0x02, 0x03, 0x04, 0xFF, 0xFF, 0xFF, 0xFF};
  EXPECT_EQ(GgufValue::scalar_from_bytes(GgufValueType::kUint32, bytes).to_uint(), 0x04030201u);
  EXPECT_EQ(GgufValue::scalar_from_bytes(GgufValueType::kInt8, bytes + 4).to_int(), -1);
  const uint8_t two = 2;
  EXPECT_EQ(GgufValue::scalar_from_bytes(GgufValueType::kBool, &two).to_bool(), true);
}

TEST(GgufValue, StringsOwnedAndViewed) {
  std::string backing = "hello";
  const GgufValue view = GgufValue::string_view_of(backing);
  EXPECT_EQ(view.to_string(), "hello");
  GgufValue owned = GgufValue::string(std::string("world"));
  const GgufValue copy = owned;
  owned = GgufValue::scalar(uint8_t{0});
  EXPECT_EQ(copy.to_string(), "world");  // the copy keeps the storage alive
  EXPECT_EQ(copy.serialized_bytes(), 8u + 5u);
}

TEST(GgufValue, Arrays) {
  const GgufValue ints = GgufValue::array(std::vector<int32_t>{1, -2, 3});
  ASSERT_TRUE(ints.is_array());
  EXPECT_EQ(ints.element_type(), GgufValueType::kInt32);
  EXPECT_EQ(ints.array_size(), 3u);
  EXPECT_EQ(ints.element(1).to_int(), -2);
  EXPECT_EQ(ints.raw_elements().size(), 12u);
  EXPECT_EQ(ints.serialized_bytes(), 4u + 8u + 12u);

  const GgufValue strings = GgufValue::string_array({"a", "bc"});
  EXPECT_EQ(strings.strings().size(), 2u);
  EXPECT_EQ(strings.element(1).to_string(), "bc");
  EXPECT_EQ(strings.serialized_bytes(), 4u + 8u + (8u + 1u) + (8u + 2u));

  const GgufValue nested = GgufValue::array_of_arrays({ints, strings});
  EXPECT_EQ(nested.element_type(), GgufValueType::kArray);
  EXPECT_EQ(nested.arrays()[1].element(0).to_string(), "a");
  // Inner arrays carry their element type and count but no type tag of their own.
  EXPECT_EQ(nested.serialized_bytes(),
            4u + 8u + ints.serialized_bytes() + strings.serialized_bytes());
  EXPECT_EQ(GgufValue::array(std::vector<bool>{true, false}).element(0).to_bool(), true);
}

TEST(GgufValue, DisplayStrings) {
  EXPECT_EQ(GgufValue::string(std::string("a\nb\"")).to_display_string(), "\"a\\nb\\\"\"");
  EXPECT_EQ(GgufValue::scalar(int32_t{-5}).to_display_string(), "-5");
  EXPECT_EQ(GgufValue::scalar(true).to_display_string(), "true");
  EXPECT_EQ(GgufValue::array(std::vector<uint8_t>{1, 2, 3}).to_display_string(2),
            "[1, 2, ... (3 total)]");
}

TEST(GgufValue, TypeTable) {
  EXPECT_EQ(gguf_value_type_from_id(12), GgufValueType::kFloat64);
  EXPECT_FALSE(gguf_value_type_from_id(13).has_value());
  EXPECT_EQ(gguf_scalar_bytes(GgufValueType::kUint64), 8u);
  EXPECT_EQ(gguf_scalar_bytes(GgufValueType::kString), 0u);
  EXPECT_EQ(gguf_value_type_name(GgufValueType::kArray), "array");
}

}  // namespace
}  // namespace synapse
