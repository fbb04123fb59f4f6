// SPDX-License-Identifier: Apache-2.0
// Every kernel of every table variant this machine runs (scalar, avx2, avx512, avx512+vnni)
// against the scalar reference, over shapes chosen to hit remainders and block edges, with the
// derived tolerances of tolerance.h (exact equality where the arithmetic is exact).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/kernel_compare.h"
#include "kernels/kernel_table.h"
#include "kernels/tolerance.h"
#include "tensor/quant.h"

namespace synapse {
namespace {

std::vector<const KernelTable*> tables() {
  const auto span = runnable_kernel_tables();
  return {span.begin(), span.end()};
}

std::string variant_name(const ::testing::TestParamInfo<const KernelTable*>& param) {
  std::string name = param.param->variant;
  for (char& c : name) c = c == '+' ? '_' : c;
  return name;
}

class KernelsIsaTest : public ::testing::TestWithParam<const KernelTable*> {
 protected:
  const KernelTable& kernels() const { return *GetParam(); }
};

// k values per type: one block, a few blocks (odd counts), a realistic row.
std::vector<size_t> lengths(TensorType type) {
  // Float weights have no blocks: lengths that are not a multiple of any SIMD width reach the
  // kernels' scalar tails.
  if (block_elements(type) == 1) return {32, 96, 224, 896, 37, 901};
  const size_t block = block_elements(type);
  if (block == 256) return {256, 768, 1536};
  return {block, 3 * block, 7 * block, 896};
}

TEST_P(KernelsIsaTest, QuantizedDotMatchesReference) {
  for (TensorType type : weight_types()) {
    for (size_t k : lengths(type)) {
      for (auto [rows, cols] : {std::pair<size_t, size_t>{1, 1}, {7, 5}, {37, 2}, {4, 8}}) {
        const CompareResult r =
            compare_dot(kernels(), type, rows, cols, k, 11 + k + rows, DotPath::kQuantized);
        EXPECT_TRUE(r.ok()) << tensor_type_name(type) << " k=" << k << " rows=" << rows
                            << " cols=" << cols << ": " << r.detail;
      }
    }
  }
}

TEST_P(KernelsIsaTest, F32ActivationDotMatchesReference) {
  for (TensorType type : weight_types()) {
    for (size_t k : lengths(type)) {
      for (auto [rows, cols] : {std::pair<size_t, size_t>{1, 1}, {7, 3}, {9, 4}}) {
        const CompareResult r =
            compare_dot(kernels(), type, rows, cols, k, 23 + k + rows, DotPath::kF32);
        EXPECT_TRUE(r.ok()) << tensor_type_name(type) << " k=" << k << " rows=" << rows
                            << " cols=" << cols << ": " << r.detail;
      }
    }
  }
}

TEST_P(KernelsIsaTest, MatmulMatchesReference) {
  for (TensorType type : weight_types()) {
    const size_t k = block_elements(type) == 256 ? 512 : 160;
    const size_t tile = kernels().weight(type).matmul.rows_per_tile;
    const size_t rows = (tile == 0 ? 16 : tile) * 2 + 3;
    for (size_t cols : {size_t{1}, size_t{3}, kMatmulMinColumns, kMatmulMinColumns + 13}) {
      const CompareResult r =
          compare_matmul(kernels(), type, rows, cols, k, 31 + cols, DotPath::kQuantized, 2);
      EXPECT_TRUE(r.ok()) << tensor_type_name(type) << " cols=" << cols << ": " << r.detail;
    }
    const CompareResult f = compare_matmul(kernels(), type, rows, 19, k, 37, DotPath::kF32, 2);
    EXPECT_TRUE(f.ok()) << tensor_type_name(type) << " f32 path: " << f.detail;
  }
}

TEST_P(KernelsIsaTest, DequantizeIsBitExact) {
  for (TensorType type : weight_types()) {
    for (size_t k : lengths(type)) {
      const CompareResult r = compare_dequantize(kernels(), type, k, 41 + k);
      EXPECT_TRUE(r.ok()) << tensor_type_name(type) << " k=" << k << ": " << r.detail;
    }
  }
}

TEST_P(KernelsIsaTest, ActivationQuantizersAreByteExact) {
  for (size_t k : {32u, 64u, 96u, 512u, 4864u}) {
    const CompareResult r = compare_quantize(kernels(), TensorType::kQ8_0, k, 43 + k);
    EXPECT_TRUE(r.ok()) << "Q8_0 k=" << k << ": " << r.detail;
  }
  for (size_t k : {256u, 512u, 4864u}) {
    const CompareResult r = compare_quantize(kernels(), TensorType::kQ8_K, k, 47 + k);
    EXPECT_TRUE(r.ok()) << "Q8_K k=" << k << ": " << r.detail;
  }
}

TEST_P(KernelsIsaTest, OpsMatchReference) {
  for (OpKind op : kAllOps) {
    for (size_t n : {1u, 7u, 16u, 33u, 64u, 515u, 4099u}) {
      if ((op == OpKind::kRopeAdjacent || op == OpKind::kRopeNeoxYarn) && n < 64) continue;
      const CompareResult r = compare_op(kernels(), op, n, 53 + n);
      EXPECT_TRUE(r.ok()) << op_name(op) << " n=" << n << ": " << r.detail;
    }
  }
}

TEST_P(KernelsIsaTest, AttentionMatchesReference) {
  for (TensorType kv_type :
       {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0, TensorType::kQ4_0}) {
    // The block caches hold whole 32-element blocks per head (the plan refuses other shapes);
    // 48 checks the F32/F16 kernels' 8-wide remainder.
    const bool blocks = kv_type == TensorType::kQ8_0 || kv_type == TensorType::kQ4_0;
    for (size_t n_keys : {1u, 15u, 16u, 17u, 100u, 300u}) {
      for (auto [heads, kv_heads] : {std::pair<size_t, size_t>{4, 2}, {7, 1}, {2, 2}}) {
        for (size_t head_dim : {64u, 128u, blocks ? 32u : 48u}) {
          AttentionCase c;
          c.n_heads = heads;
          c.n_kv_heads = kv_heads;
          c.head_dim = head_dim;
          c.n_keys = n_keys;
          c.page_tokens = n_keys % 2 == 0 ? 16 : 7;
          c.kv_type = kv_type;
          c.softcap = n_keys == 100 ? 20.0f : 0.0f;
          for (size_t window : {size_t{0}, size_t{16}, size_t{40}}) {
            c.window = window;
            c.row_padding = window == 16 ? (blocks ? 32 : 24) : 0;
            const CompareResult r = compare_attention(kernels(), c, 59 + n_keys + head_dim);
            EXPECT_TRUE(r.ok()) << tensor_type_name(kv_type) << " keys=" << n_keys
                                << " heads=" << heads << "/" << kv_heads << " dim=" << head_dim
                                << " window=" << window << ": " << r.detail;
          }
        }
      }
    }
  }
}

// The exp the activation functions, softmax and attention use stays within kSimdExpRelError
// of the exact value over a dense sample of the whole range where exp is a normal float.
TEST_P(KernelsIsaTest, ExpErrorIsWithinItsNamedBound) {
  std::vector<float> x;
  for (float v = -87.0f; v < 88.7f; v += 0.000731f * (std::fabs(v) + 1.0f)) x.push_back(v);
  x.push_back(0.0f);
  std::vector<float> y(x.size());
  kernels().exp(x.data(), y.data(), x.size());
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double exact = std::exp(static_cast<double>(x[i]));
    worst = std::max(worst, std::fabs(static_cast<double>(y[i]) - exact) / exact);
  }
  EXPECT_LE(worst, kSimdExpRelError) << "worst relative error " << worst;
  // Saturation: large arguments give infinity, very negative ones zero (or a subnormal), NaN
  // stays NaN.
  const float edge[] = {100.0f, -100.0f, NAN, INFINITY, -INFINITY};
  float out[5];
  kernels().exp(edge, out, 5);
  EXPECT_EQ(out[0], INFINITY);
  EXPECT_LT(out[1], 1e-38f);
  EXPECT_GE(out[1], 0.0f);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[3], INFINITY);
  EXPECT_EQ(out[4], 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Runnable, KernelsIsaTest, ::testing::ValuesIn(tables()), variant_name);

}  // namespace
}  // namespace synapse
