// SPDX-License-Identifier: Apache-2.0
// IQ4_NL and IQ4_XS against bytes no one on the team produced: the fixtures' tiny-llama
// encodings (reference/arch/tiny-llama-iq4_{nl,xs}.gguf) are llama-quantize --pure runs over
// reference/logits/tiny-llama-f32.gguf, so
// - quantizing each F32 matrix of the parent with our reference quantizer must give exactly the
//   bytes llama-quantize wrote (every matrix, token_embd and output included);
// - dequantizing those bytes must give, bit for bit, d * ls * value computed from the format's
//   definition (ggml-common.h) with the arithmetic ggml uses, and stay close to the parent.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "format/gguf/gguf_file.h"
#include "tensor/half.h"
#include "tensor/quant.h"
#include "tests/fixture_tensors.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

struct Encoding {
  const char* file;
  TensorType type;
};

class Iq4FixtureTest : public ::testing::TestWithParam<Encoding> {};

// Rows of a tensor copied to 4-byte aligned storage (GGUF data is only 2-aligned here).
std::vector<uint32_t> aligned_copy(std::span<const uint8_t> bytes) {
  std::vector<uint32_t> out((bytes.size() + 3) / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

TEST_P(Iq4FixtureTest, QuantizerWritesLlamaQuantizeBytes) {
  const Encoding e = GetParam();
  SYN_REQUIRE_FIXTURE(parent_path, "reference/logits/tiny-llama-f32.gguf");
  SYN_REQUIRE_FIXTURE(quant_path, std::string("reference/arch/") + e.file);
  const GgufFile parent = *GgufFile::open(parent_path);
  const GgufFile quant = *GgufFile::open(quant_path);
  size_t tensors = 0;
  for (const GgufTensorInfo& info : quant.tensors()) {
    if (info.type != e.type) continue;
    SCOPED_TRACE(info.name);
    ++tensors;
    const std::vector<float> source = testing::tensor_floats(parent, info.name);
    const size_t cols = info.dims[0];
    ASSERT_EQ(source.size() % cols, 0u);
    const std::span<const uint8_t> want = quant.tensor_data(info);
    const size_t row_size = row_bytes(e.type, cols);
    ASSERT_EQ(want.size(), source.size() / cols * row_size);
    std::vector<uint32_t> row((row_size + 3) / 4);
    const std::span<uint8_t> got{reinterpret_cast<uint8_t*>(row.data()), row_size};
    size_t differing_rows = 0;
    for (size_t r = 0; r < source.size() / cols; ++r) {
      quantize_row(e.type, std::span<const float>(source).subspan(r * cols, cols), got);
      differing_rows += std::memcmp(got.data(), want.data() + r * row_size, row_size) != 0;
    }
    EXPECT_EQ(differing_rows, 0u);
  }
  EXPECT_EQ(tensors, 16u) << "every matrix of the two-block model is " << tensor_type_name(e.type);
}

// ggml's dequantization written out from the format's definition: IQ4_NL x = d * value,
// IQ4_XS x = (d * (ls - 32)) * value, d and the product rounded to float as ggml does.
std::vector<float> decode_by_definition(TensorType type, const uint8_t* row, size_t n) {
  static constexpr int kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                      1,    13,   25,  38,  53,  69,  89,  113};
  std::vector<float> out(n);
  auto read16 = [](const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); };
  auto element = [&](const uint8_t* qs, size_t j) {
    return kValues[j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4)];
  };
  if (type == TensorType::kIQ4_NL) {
    for (size_t b = 0; b < n / 32; ++b) {
      const uint8_t* block = row + 18 * b;
      const float d = f16_to_f32(read16(block));
      for (size_t j = 0; j < 32; ++j)
        out[32 * b + j] = d * static_cast<float>(element(block + 2, j));
    }
    return out;
  }
  for (size_t b = 0; b < n / 256; ++b) {
    const uint8_t* block = row + 136 * b;
    const float d = f16_to_f32(read16(block));
    const uint16_t scales_h = read16(block + 2);
    for (size_t s = 0; s < 8; ++s) {
      const int ls =
          ((block[4 + s / 2] >> (4 * (s % 2))) & 0x0F) | (((scales_h >> (2 * s)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      for (size_t j = 0; j < 32; ++j) {
        out[256 * b + 32 * s + j] = dl * static_cast<float>(element(block + 8 + 16 * s, j));
      }
    }
  }
  return out;
}

TEST_P(Iq4FixtureTest, DequantizeMatchesTheDefinitionExactly) {
  const Encoding e = GetParam();
  SYN_REQUIRE_FIXTURE(parent_path, "reference/logits/tiny-llama-f32.gguf");
  SYN_REQUIRE_FIXTURE(quant_path, std::string("reference/arch/") + e.file);
  const GgufFile parent = *GgufFile::open(parent_path);
  const GgufFile quant = *GgufFile::open(quant_path);
  for (const GgufTensorInfo& info : quant.tensors()) {
    if (info.type != e.type) continue;
    SCOPED_TRACE(info.name);
    const size_t cols = info.dims[0];
    const size_t row_size = row_bytes(e.type, cols);
    const std::vector<uint32_t> bytes = aligned_copy(quant.tensor_data(info));
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    const std::vector<float> source = testing::tensor_floats(parent, info.name);
    size_t mismatches = 0;
    double err2 = 0.0, ref2 = 0.0;
    std::vector<float> got(cols);
    for (size_t r = 0; r < source.size() / cols; ++r) {
      dequantize_row(e.type, {data + r * row_size, row_size}, got);
      const std::vector<float> want = decode_by_definition(e.type, data + r * row_size, cols);
      mismatches += std::memcmp(got.data(), want.data(), cols * sizeof(float)) != 0;
      for (size_t c = 0; c < cols; ++c) {
        const double d = static_cast<double>(got[c]) - static_cast<double>(source[r * cols + c]);
        err2 += d * d;
        ref2 +=
            static_cast<double>(source[r * cols + c]) * static_cast<double>(source[r * cols + c]);
      }
    }
    EXPECT_EQ(mismatches, 0u);
    // 4.25-4.5 bits per weight on Gaussian weights: about 10% relative RMS error.
    EXPECT_LT(std::sqrt(err2 / ref2), 0.15);
  }
}

INSTANTIATE_TEST_SUITE_P(Iq4, Iq4FixtureTest,
                         ::testing::Values(Encoding{"tiny-llama-iq4_nl.gguf", TensorType::kIQ4_NL},
                                           Encoding{"tiny-llama-iq4_xs.gguf", TensorType::kIQ4_XS}),
                         [](const auto& param_info) {
                           return std::string(tensor_type_name(param_info.param.type));
                         });

}  // namespace
}  // namespace synapse
