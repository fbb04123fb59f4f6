// SPDX-License-Identifier: Apache-2.0
// The block formats against data no one on the team produced (fixtures reference/quant):
// - dequantizing llama.cpp's bytes gives exactly the floats gguf-py computed, for all 12 types;
// - our reference quantizers, given the same source matrix, write exactly llama.cpp's bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "format/gguf/gguf_file.h"
#include "tensor/quant.h"
#include "tests/fixture_tensors.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

constexpr size_t kRows = 16;
constexpr size_t kCols = 512;

struct QuantFixture {
  GgufFile quant;
  GgufFile expected;
};

class QuantFixtureTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(QuantFixtureTest, DequantizeMatchesIndependentImplementationExactly) {
  SYN_REQUIRE_FIXTURE(quant_path, "reference/quant/quant_formats.gguf");
  SYN_REQUIRE_FIXTURE(expected_path, "reference/quant/quant_formats_expected.gguf");
  const GgufFile quant = *GgufFile::open(quant_path);
  const GgufFile expected = *GgufFile::open(expected_path);
  const TensorType type = GetParam();
  const std::string name = testing::fixture_tensor_name(tensor_type_name(type));
  const GgufTensorInfo* info = quant.find_tensor(name);
  ASSERT_NE(info, nullptr) << name;
  ASSERT_EQ(info->type, type);
  const std::vector<float> want = testing::tensor_floats(expected, name);
  ASSERT_EQ(want.size(), kRows * kCols);
  const std::span<const uint8_t> bytes = quant.tensor_data(*info);
  const size_t row_size = row_bytes(type, kCols);
  // Copy each row to an aligned buffer: GGUF rows are 2-aligned, the copy keeps UBSan quiet
  // about nothing and documents the alignment contract.
  std::vector<uint32_t> aligned((row_size + 3) / 4);
  size_t mismatches = 0;
  for (size_t r = 0; r < kRows; ++r) {
    std::memcpy(aligned.data(), bytes.data() + r * row_size, row_size);
    std::vector<float> got(kCols);
    dequantize_row(type, {reinterpret_cast<const uint8_t*>(aligned.data()), row_size}, got);
    for (size_t c = 0; c < kCols; ++c) {
      mismatches += std::memcmp(&got[c], &want[r * kCols + c], sizeof(float)) != 0 ? 1u : 0u;
    }
  }
  EXPECT_EQ(mismatches, 0u) << name;
}

TEST_P(QuantFixtureTest, QuantizeWritesLlamaCppBytes) {
  SYN_REQUIRE_FIXTURE(quant_path, "reference/quant/quant_formats.gguf");
  SYN_REQUIRE_FIXTURE(expected_path, "reference/quant/quant_formats_expected.gguf");
  const GgufFile quant = *GgufFile::open(quant_path);
  const GgufFile expected = *GgufFile::open(expected_path);
  const TensorType type = GetParam();
  const std::string name = testing::fixture_tensor_name(tensor_type_name(type));
  const std::vector<float> source = testing::tensor_floats(expected, "source");
  ASSERT_EQ(source.size(), kRows * kCols);
  const std::span<const uint8_t> want = quant.tensor_data(*quant.find_tensor(name));
  const size_t row_size = row_bytes(type, kCols);
  std::vector<uint32_t> aligned((row_size + 3) / 4);
  for (size_t r = 0; r < kRows; ++r) {
    const std::span<uint8_t> got{reinterpret_cast<uint8_t*>(aligned.data()), row_size};
    quantize_row(type, std::span<const float>(source).subspan(r * kCols, kCols), got);
    size_t differing = 0;
    for (size_t i = 0; i < row_size; ++i) differing += got[i] != want[r * row_size + i] ? 1u : 0u;
    EXPECT_EQ(differing, 0u) << name << " row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantFixtureTest,
                         ::testing::Values(TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0,
                                           TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0,
                                           TensorType::kQ5_1, TensorType::kQ2_K, TensorType::kQ3_K,
                                           TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K),
                         [](const ::testing::TestParamInfo<TensorType>& param) {
                           return std::string(tensor_type_name(param.param));
                         });

}  // namespace
}  // namespace synapse
