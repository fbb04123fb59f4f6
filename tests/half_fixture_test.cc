// SPDX-License-Identifier: Apache-2.0
// Our F16/BF16 conversions produce exactly the bytes llama.cpp wrote for the same source matrix
// (reference/quant: `source` in quant_formats_expected.gguf, w.f16 / w.bf16 in quant_formats.gguf),
// and decode them to exactly the values gguf-py computed.
#include <gtest/gtest.h>

#include <cstring>

#include "format/gguf/gguf_file.h"
#include "tensor/half.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

std::vector<float> as_floats(std::span<const uint8_t> bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

std::vector<uint16_t> as_halves(std::span<const uint8_t> bytes) {
  std::vector<uint16_t> out(bytes.size() / 2);
  std::memcpy(out.data(), bytes.data(), out.size() * 2);
  return out;
}

TEST(HalfFixture, MatchesLlamaCppBitForBit) {
  SYN_REQUIRE_FIXTURE(quant_path, "reference/quant/quant_formats.gguf");
  SYN_REQUIRE_FIXTURE(expected_path, "reference/quant/quant_formats_expected.gguf");
  const GgufFile quant = *GgufFile::open(quant_path);
  const GgufFile expected = *GgufFile::open(expected_path);
  const std::vector<float> source =
      as_floats(expected.tensor_data(*expected.find_tensor("source")));
  ASSERT_EQ(source.size(), 512u * 16);

  struct Format {
    const char* name;
    uint16_t (*encode)(float);
    float (*decode)(uint16_t);
  };
  for (const Format& f :
       {Format{"w.f16", f32_to_f16, f16_to_f32}, Format{"w.bf16", f32_to_bf16, bf16_to_f32}}) {
    SCOPED_TRACE(f.name);
    const std::vector<uint16_t> stored = as_halves(quant.tensor_data(*quant.find_tensor(f.name)));
    const std::vector<float> decoded =
        as_floats(expected.tensor_data(*expected.find_tensor(f.name)));
    ASSERT_EQ(stored.size(), source.size());
    size_t encode_mismatches = 0, decode_mismatches = 0;
    for (size_t i = 0; i < source.size(); ++i) {
      encode_mismatches += f.encode(source[i]) != stored[i] ? 1u : 0u;
      const float value = f.decode(stored[i]);
      decode_mismatches += std::memcmp(&decoded[i], &value, sizeof(float)) != 0 ? 1u : 0u;
    }
    EXPECT_EQ(encode_mismatches, 0u);
    EXPECT_EQ(decode_mismatches, 0u);
  }
}

}  // namespace
}  // namespace synapse
