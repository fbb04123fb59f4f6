// SPDX-License-Identifier: Apache-2.0
// Dot products of llama.cpp-quantized rows (reference/quant/quant_formats.gguf) with the vector
// x, on every kernel level this machine runs, against the float64 products of gguf-py's
// dequantized rows (quant_formats.dot.json), within bounds derived per row:
//  - F32 activations (DotPath::kF32): only float rounding, |err| <= gamma_m * sum|w_i x_i|
//    with m = float_dot_roundings(512) (tolerance.h);
//  - quantized activations (the fast path): additionally the activation quantization error,
//    computed exactly as sum_i |w_i| * |x_i - xq_i| with xq the reference quantizer's
//    dequantized activations, plus gamma_m * sum|w_i xq_i| with m = quantized_dot_roundings.
// The test also records how far llama.cpp's own CPU dot products (ggml_cpu_vec_dot_f32 in the
// JSON) are from the float64 values, for comparison.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "format/gguf/gguf_file.h"
#include "kernels/kernel_table.h"
#include "kernels/matmul.h"
#include "kernels/tolerance.h"
#include "tensor/quant.h"
#include "tests/fixture_tensors.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

constexpr size_t kRows = 16;
constexpr size_t kCols = 512;

struct Fixture {
  GgufFile quant;
  GgufFile expected;
  nlohmann::json dots;
};

class QuantDotFixtureTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(QuantDotFixtureTest, MatchesFloat64WithinDerivedBounds) {
  SYN_REQUIRE_FIXTURE(quant_path, "reference/quant/quant_formats.gguf");
  SYN_REQUIRE_FIXTURE(expected_path, "reference/quant/quant_formats_expected.gguf");
  SYN_REQUIRE_FIXTURE(dots_path, "reference/quant/quant_formats.dot.json");
  const GgufFile quant = *GgufFile::open(quant_path);
  const GgufFile expected = *GgufFile::open(expected_path);
  const nlohmann::json dots = nlohmann::json::parse(testing::read_file_text(dots_path));
  const TensorType type = GetParam();
  const std::string name = testing::fixture_tensor_name(tensor_type_name(type));
  const std::vector<double> want = dots[name]["dot_f64"].get<std::vector<double>>();
  const std::vector<double> ggml = dots[name]["ggml_cpu_vec_dot_f32"].get<std::vector<double>>();
  const std::vector<float> deq = testing::tensor_floats(expected, name);
  const std::vector<float> x = testing::tensor_floats(expected, "x");
  ASSERT_EQ(x.size(), kCols);

  // Rows copied to aligned storage (the kernels may assume 4-byte alignment of blocks).
  const std::span<const uint8_t> bytes = quant.tensor_data(*quant.find_tensor(name));
  std::vector<uint32_t> storage((bytes.size() + 3) / 4);
  std::memcpy(storage.data(), bytes.data(), bytes.size());
  const WeightMatrix w{type, reinterpret_cast<const uint8_t*>(storage.data()),
                       row_bytes(type, kCols), kRows, kCols};

  // The reference quantizer's view of x, for the activation-quantization part of the bound.
  const TensorType act = activation_type(type);
  std::vector<float> xq(x);
  if (act != TensorType::kF32) {
    std::vector<uint32_t> q((row_bytes(act, kCols) + 3) / 4);
    const std::span<uint8_t> q_bytes{reinterpret_cast<uint8_t*>(q.data()), row_bytes(act, kCols)};
    quantize_row(act, x, q_bytes);
    dequantize_row(act, q_bytes, xq);
  }

  for (const KernelTable* kernels : runnable_kernel_tables()) {
    SCOPED_TRACE(kernels->variant);
    ThreadPool pool(2);
    for (DotPath path : {DotPath::kF32, DotPath::kQuantized}) {
      std::vector<uint8_t> scratch(matmul_scratch_bytes(*kernels, w, 1, 2, path));
      std::vector<float> y(kRows);
      matmul(*kernels, w, x.data(), kCols, 1, y.data(), kRows, scratch, pool, path);
      double worst = 0.0, worst_ggml = 0.0;
      for (size_t r = 0; r < kRows; ++r) {
        double magnitude = 0.0, activation_error = 0.0, scale = 0.0;
        for (size_t c = 0; c < kCols; ++c) {
          const double wi = deq[r * kCols + c];
          const double xi = x[c], xqi = xq[c];
          magnitude += std::fabs(wi * (path == DotPath::kF32 ? xi : xqi));
          activation_error += std::fabs(wi) * std::fabs(xi - xqi);
          scale += wi * wi;
        }
        const bool quantized_path = path == DotPath::kQuantized && act != TensorType::kF32;
        const double bound =
            quantized_path ? activation_error +
                                 2.0 * rounding_gamma(quantized_dot_roundings(kCols)) * magnitude
                           : 2.0 * rounding_gamma(float_dot_roundings(kCols)) * magnitude;
        const double err = std::fabs(static_cast<double>(y[r]) - want[r]);
        EXPECT_LE(err, bound + kTinyAbsTolerance)
            << name << " row " << r << (quantized_path ? " quantized" : " f32") << ": got " << y[r]
            << ", float64 " << want[r];
        // Scaled like the fixture's own summary: |err| / (||w_row|| * ||x||).
        double x_norm = 0.0;
        for (float v : x) x_norm += static_cast<double>(v) * static_cast<double>(v);
        const double denominator = std::sqrt(scale) * std::sqrt(x_norm);
        if (denominator > 0.0) {
          worst = std::max(worst, err / denominator);
          worst_ggml = std::max(worst_ggml, std::fabs(ggml[r] - want[r]) / denominator);
        }
      }
      const std::string key = std::string(kernels->variant) + "." +
                              (path == DotPath::kF32 ? "f32" : "quantized") + ".scaled_error";
      ::testing::Test::RecordProperty(key, std::to_string(worst));
      ::testing::Test::RecordProperty(key + ".llama_cpp", std::to_string(worst_ggml));
      std::printf("%-6s %-12s %-9s max |err|/(|w||x|) %.3g (llama.cpp %.3g)\n", name.c_str(),
                  kernels->variant, path == DotPath::kF32 ? "f32" : "quantized", worst, worst_ggml);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantDotFixtureTest,
                         ::testing::Values(TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0,
                                           TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0,
                                           TensorType::kQ5_1, TensorType::kQ2_K, TensorType::kQ3_K,
                                           TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K),
                         [](const ::testing::TestParamInfo<TensorType>& param) {
                           return std::string(tensor_type_name(param.param));
                         });

}  // namespace
}  // namespace synapse
